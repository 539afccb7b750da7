"""The evaluation modes: one run (and its resume), replicates, calibration and rescore.

Each mode prepares a run (dataset, selection, scorers, labels), has the call engine
(:mod:`evalkit.calls`) make its calls, scores them, computes the metrics, tracks the run and
renders its reports. This wing is the only one that knows the whole pipeline; it drives the
others.
"""

from evalkit.evaluation._calibrate import evaluate_calibration
from evalkit.evaluation._evaluate import evaluate, resume
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._replicates import ReplicatesOutcome, evaluate_replicates
from evalkit.evaluation._rescore import rescore

__all__ = [
    "EvaluationOutcome", "ReplicatesOutcome", "evaluate", "evaluate_calibration",
    "evaluate_replicates", "rescore", "resume",
]
