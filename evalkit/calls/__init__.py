"""The call engine: makes a run's planned calls of the component, whatever runs them.

The :class:`CallWindow` schedules every call (at most ``MAX_CONCURRENCY`` in flight, each
with a deadline) through an :class:`Executor` (threads, an event loop, or Ray under
:mod:`evalkit.calls.ray`), keeps its books, and writes each call's record the moment it
arrives. The caller keeps the process: it stops the calls with a :class:`Stop` and hears of
them through a progress callback (:class:`Progress`). The engine knows neither the
evaluation modes nor tracking.
"""

from evalkit.calls._books import EntryOutputs, Sampling
from evalkit.calls._call import Call, Component, SpanCapture, no_capture
from evalkit.calls._executors import Executor, InProcess
from evalkit.calls._progress import Progress, ProgressCallback, ProgressCounter
from evalkit.calls._selection import ALL_TYPES, PlannedEntry, RunPlan, Selection, plan_run
from evalkit.calls._stop import Stop
from evalkit.calls._window import CallWindow
from evalkit.calls.ray import SETUP_HOOK, RayPool, RaySettings, require_ray

__all__ = [
    "ALL_TYPES", "SETUP_HOOK", "Call", "CallWindow", "Component", "EntryOutputs", "Executor",
    "InProcess", "PlannedEntry", "Progress", "ProgressCallback", "ProgressCounter", "RayPool",
    "RaySettings",
    "RunPlan", "Sampling", "Selection", "SpanCapture", "Stop", "no_capture", "plan_run",
    "require_ray",
]
