"""Statistics: pure functions over numbers and result tables, each with its formula and
reference in its docstring and a typed result.

One run (Wilson interval, confusion matrix, convergence, latency percentiles, per-type
metrics); replicates (variance components, flips, noise floor, effective-n interval); votes
over N runs; the items-vs-replicates budget; contrast intervals; the paired gap of two
runs over shared items; REPEAT_COUNT calibration;
the judge against people's labels (agreement, the corrected accuracy, the label budget).
Nothing here imports evalkit beyond its errors and records.
"""

from evalkit.stats._agreement import Agreement, ChanceCorrected, agreement, cohens_kappa, gwets_ac1
from evalkit.stats._budget import Allocation, allocate, variance_times_budget
from evalkit.stats._calibration import PLATEAU_RULE, Calibration, CalibrationPoint
from evalkit.stats._contrasts import (
    WHOLE_REPLICATE_BOOTSTRAP_COVERAGE,
    ContrastInterval,
    bootstrap_coverage,
    items_and_replicates_t_interval,
    nested_bootstrap_variance,
    replicate_mean_t_interval,
    replicates_for_half_width,
    whole_replicate_bootstrap,
    whole_replicate_bootstrap_variance,
)
from evalkit.stats._corrected import (
    MIN_LABELS_PER_CLASS,
    CorrectedAccuracy,
    LabelBudget,
    Stratum,
    labels_for_half_width,
    labels_missing,
    ppi_mean,
    rogan_gladen,
    stratified_ppi_mean,
)
from evalkit.stats._judge import (
    BUDGET_HALF_WIDTH,
    JudgeCheck,
    check_judge,
    checks_for,
    corrected_metrics,
    judge_checks,
    judge_points,
    latest_labels,
)
from evalkit.stats._judge_stability import JudgeStability, judge_stability
from evalkit.stats._label_draw import DrawnEntry, LabelDraw, LabelDraws, draw_for_labels
from evalkit.stats._metrics import (
    TypeMetrics,
    recorded_metrics,
    threshold_from_params,
    threshold_params,
)
from evalkit.stats._one_run import (
    STABILITY_TOLERANCE_PP,
    ConfusionMatrix,
    Convergence,
    WilsonInterval,
    chart_points,
    confusion_matrix,
    convergence,
    cumulative_series,
    latency_percentiles,
    logged_latency,
    two_sided_z,
    wilson_bounds,
    wilson_interval,
)
from evalkit.stats._paired import PairedGap, paired_gap
from evalkit.stats._plan import ContrastPlan, LabelPlan, MeasuredP, Plan
from evalkit.stats._stability import (
    ReplicateStability,
    VarianceComponents,
    replicate_seed,
    replicate_stability,
)
from evalkit.stats._stability_document import (
    SEED_DERIVATION,
    FlipCounts,
    StabilityDocument,
    StabilitySummary,
)
from evalkit.stats._votes import (
    DECISION_CROSSOVER_P,
    Disagreement,
    VoteTable,
    disagreement,
    vote_table,
)

__all__ = [
    "BUDGET_HALF_WIDTH", "DECISION_CROSSOVER_P", "MIN_LABELS_PER_CLASS", "JudgeCheck",
    "LabelDraws", "LabelPlan", "check_judge", "checks_for", "corrected_metrics",
    "judge_checks", "judge_points", "latest_labels", "JudgeStability", "judge_stability",
    "Agreement", "ChanceCorrected",
    "CorrectedAccuracy", "DrawnEntry", "LabelBudget", "LabelDraw", "Stratum",
    "draw_for_labels", "agreement", "cohens_kappa", "gwets_ac1",
    "labels_for_half_width", "labels_missing", "ppi_mean", "rogan_gladen", "stratified_ppi_mean",
    "two_sided_z", "wilson_bounds", "PairedGap", "paired_gap",
    "PLATEAU_RULE", "SEED_DERIVATION", "STABILITY_TOLERANCE_PP",
    "WHOLE_REPLICATE_BOOTSTRAP_COVERAGE", "Allocation", "Calibration", "CalibrationPoint",
    "ConfusionMatrix", "ContrastInterval", "ContrastPlan", "Convergence", "Disagreement",
    "FlipCounts", "MeasuredP", "Plan",
    "ReplicateStability", "StabilityDocument", "StabilitySummary", "TypeMetrics",
    "VarianceComponents", "VoteTable", "WilsonInterval", "allocate",
    "bootstrap_coverage", "chart_points", "confusion_matrix", "convergence",
    "cumulative_series", "disagreement", "items_and_replicates_t_interval",
    "latency_percentiles", "logged_latency", "nested_bootstrap_variance",
    "replicate_mean_t_interval",
    "replicate_seed", "replicate_stability", "replicates_for_half_width",
    "recorded_metrics", "threshold_from_params", "threshold_params", "variance_times_budget",
    "vote_table",
    "whole_replicate_bootstrap", "whole_replicate_bootstrap_variance", "wilson_interval",
]
