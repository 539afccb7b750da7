"""What a run needs from whoever calls it, in one object: :class:`RunContext`.

Every mode (:func:`~evalkit.evaluate`, :func:`~evalkit.resume`,
:func:`~evalkit.evaluate_replicates`, :func:`~evalkit.evaluate_calibration`,
:func:`~evalkit.rescore`) takes one; its defaults are applied here, once. The caller keeps the
process: it stops the run through the context's :class:`~evalkit.calls.Stop` and hears of its
calls through the progress callback; nothing here touches signals or the terminal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from evalkit.calls import Executor, InProcess, ProgressCallback, Stop
from evalkit.tracking import Tracker

RUNS_DIR = Path(".evalkit") / "runs"
"""Where each run's raw results are kept: ``RUNS_DIR/<run id>/raw-results.jsonl``."""


@dataclass(frozen=True)
class RunContext:
    """How the caller takes part in a run: where it is recorded, where its raw results are
    kept, how it is stopped, who hears of its calls and where they run."""

    tracker: Tracker | None = None
    """Where runs are recorded; ``None``: the store ``MLFLOW_TRACKING_URI`` names, else the
    working folder's own (see :attr:`store`)."""
    runs_dir: Path = RUNS_DIR
    """Where each run's raw results are kept as they arrive."""
    stop: Stop = field(default_factory=Stop)
    """Asks the run to stop (see :class:`~evalkit.calls.Stop`)."""
    progress: ProgressCallback | None = None
    """Hears of every call as it is kept."""
    executor: Executor = field(default_factory=InProcess)
    """Where the calls run (a rescore makes none)."""

    @functools.cached_property
    def store(self) -> Tracker:
        """The tracker runs are recorded in: ``tracker``, or the default store, opened the
        first time a mode needs it. Opening a local store creates it, so a run refused before
        it starts (a bad dataset, a wrong selection) leaves none behind. The opened default is
        this context's own: a copy made with ``dataclasses.replace`` opens its own again."""
        return self.tracker or Tracker()
