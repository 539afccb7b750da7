"""Running an evaluation: select entries, call the component, score, compute metrics, track
the run and render its reports; in replicate, calibration and planning modes, resumed, and
rescored (a run's recorded outputs scored again, no call made).

This wing is the only one that knows the whole pipeline; it drives the others. Its core: the
:class:`CallWindow` makes a plan's calls through a :class:`CallExecutor` (threads, an event
loop, or one of your own), an :class:`Evaluation` carries one evaluation through one
:class:`~evalkit.tracking.TrackedRun`. The caller keeps the process: it stops a run with a
:class:`Stop` and hears of its calls through a progress callback (:class:`Progress`).
"""

from evalkit.run._books import EntryOutputs, FollowUps
from evalkit.run._calibrate import CalibrationOutcome, evaluate_calibration, prefix_pass_rates
from evalkit.run._call import Call, Component
from evalkit.run._compare import (
    FLOOR_MULTIPLE,
    ComparisonVerdict,
    MetricComparison,
    Side,
    compare,
    load_side,
    noise_gate,
    shared_item_floors,
)
from evalkit.run._compared import compared_part
from evalkit.run._differences import Difference, RecordedSource, differences, what_differs
from evalkit.run._evaluate import RUNS_DIR, evaluate, resume
from evalkit.run._evaluation import Evaluation
from evalkit.run._executors import (
    INTERRUPT,
    AsyncCalls,
    CallExecutor,
    Executor,
    InProcess,
    Lost,
    ThreadCalls,
    ThreadWorkers,
    calls_for,
    is_async,
)
from evalkit.run._label_session import (
    LabelOutcome,
    LabelSession,
    feedback_taken_in,
    import_labels,
)
from evalkit.run._outcome import EvaluationOutcome
from evalkit.run._planning import Plan, build_plan, record_plan
from evalkit.run._prepare import PreparedEvaluation, RunRole, prepare
from evalkit.run._progress import Progress, ProgressCallback, ProgressCounter
from evalkit.run._ray_pool import RayPool
from evalkit.run._ray_settings import RaySettings, require_ray
from evalkit.run._ray_worker import SETUP_HOOK
from evalkit.run._replicates import ReplicatesOutcome, SeedLock, evaluate_replicates, seeds_for
from evalkit.run._rescore import rescore
from evalkit.run._scorers import Scorers
from evalkit.run._scoring import EarlyJudging, score_run
from evalkit.run._selection import ALL_TYPES, PlannedEntry, RunPlan, Selection, plan_run
from evalkit.run._stop import Stop
from evalkit.run._window import CallWindow

__all__ = [
    "ALL_TYPES", "FLOOR_MULTIPLE", "INTERRUPT", "RUNS_DIR", "SETUP_HOOK", "AsyncCalls", "Call",
    "Executor", "InProcess", "Lost", "RayPool", "RaySettings", "require_ray",
    "CallExecutor", "CallWindow", "CalibrationOutcome", "ComparisonVerdict", "Component",
    "Difference", "RecordedSource", "differences", "what_differs",
    "EarlyJudging", "EntryOutputs", "Evaluation", "EvaluationOutcome", "FollowUps",
    "LabelOutcome", "LabelSession", "feedback_taken_in", "import_labels",
    "MetricComparison", "Plan", "PlannedEntry", "PreparedEvaluation", "Progress",
    "ProgressCallback", "ProgressCounter", "ReplicatesOutcome", "RunPlan", "RunRole", "Scorers",
    "SeedLock", "Selection", "Side", "Stop", "ThreadCalls", "ThreadWorkers", "build_plan",
    "calls_for", "compare", "compared_part", "evaluate", "evaluate_calibration",
    "evaluate_replicates", "is_async", "load_side", "noise_gate", "plan_run", "prefix_pass_rates",
    "prepare", "record_plan", "rescore", "resume", "score_run", "seeds_for",
    "shared_item_floors",
]
