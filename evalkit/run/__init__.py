"""Running an evaluation: select entries, call the component, score, compute metrics, track
the run and render its reports; in replicate, calibration and planning modes, and resumed.

This wing is the only one that knows the whole pipeline; it drives the others.
"""

from evalkit.run._calibrate import CalibrationOutcome, evaluate_calibration
from evalkit.run._call import Call, CallRecord, Component
from evalkit.run._compare import FLOOR_MULTIPLE, compare, load_side
from evalkit.run._evaluation import EvaluationOutcome, evaluate, resume
from evalkit.run._planning import build_plan, record_plan
from evalkit.run._replicates import ReplicatesOutcome, evaluate_replicates
from evalkit.run._selection import ALL_TYPES, Selection

__all__ = ["ALL_TYPES", "FLOOR_MULTIPLE", "Call", "CallRecord", "CalibrationOutcome",
           "Component", "EvaluationOutcome", "ReplicatesOutcome", "Selection", "build_plan",
           "compare", "evaluate", "evaluate_calibration", "evaluate_replicates", "load_side",
           "record_plan", "resume"]
