"""The evaluation modes: one run (and its resume; sequential, or against a recorded run),
replicates, calibration and rescore.

Each mode prepares a run (dataset, selection, scorers, labels), opens it in the store and
carries it through one skeleton: the call engine (:mod:`evalkit.calls`) makes its calls, they
are scored, checked against people's labels, logged with the metrics and the verdict, and the
reports rendered. What a run needs from its caller (store, raw-results folder, stop, progress,
executor) comes in one :class:`RunContext`. This wing is the only one that knows the whole
pipeline; it drives the others.
"""

from evalkit.evaluation._against import DEFAULT_MARGIN, Against, Baseline
from evalkit.evaluation._calibrate import CalibrationOutcome, evaluate_calibration
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._estimate import RunEstimate, check_budget, estimate_run
from evalkit.evaluation._evaluate import evaluate, resume
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prediction import Spread
from evalkit.evaluation._replicates import ReplicatesOutcome, evaluate_replicates
from evalkit.evaluation._rescore import rescore
from evalkit.evaluation._sequential import SequentialGate
from evalkit.stats import SequentialOutcome, TypeSettlement

__all__ = [
    "DEFAULT_MARGIN", "Against", "Baseline", "CalibrationOutcome", "EvaluationOutcome",
    "ReplicatesOutcome", "RunContext", "RunEstimate", "SequentialGate", "SequentialOutcome",
    "Spread", "TypeSettlement", "check_budget", "estimate_run", "evaluate",
    "evaluate_calibration", "evaluate_replicates", "rescore", "resume",
]
