"""Statistics: pure functions over numbers and result tables, each with its formula, the source
it follows and a runnable example in its docstring, and a typed result.

One run (Wilson interval, confusion matrix, convergence, latency percentiles, per-type
metrics); replicates (variance components, flips, noise floor, effective-n interval, pass@k
and pass^k); votes over N runs; the items-vs-replicates budget; contrast intervals; the
paired gap of two runs over shared items; confidence sequences for a run that may stop at
any look (an accuracy against its threshold, a paired gap against a margin); REPEAT_COUNT
calibration; the judge against people's labels (agreement, the corrected accuracy, the label
budget).
Nothing here imports evalkit beyond its errors and records, and nothing here names what MLflow
holds: the names are in :mod:`evalkit.records.names`.

This face lists what the other wings use and the statistics a user calls; the modules behind
it hold their helpers.
"""

from evalkit.stats._agreement import Agreement, ChanceCorrected, agreement, cohens_kappa, gwets_ac1
from evalkit.stats._budget import Allocation, allocate
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
    latest_labels,
)
from evalkit.stats._judge_stability import JudgeStability
from evalkit.stats._label_draw import DrawnEntry, LabelDraw, LabelDraws, draw_for_labels
from evalkit.stats._metrics import TypeMetrics
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
    wilson_interval,
)
from evalkit.stats._paired import (
    MarginCheck,
    MarginVerdict,
    PairedGap,
    margin_check,
    paired_gap,
    sequence_margin_check,
)
from evalkit.stats._pass_k import (
    PASS_K_INTERVAL,
    ItemMean,
    PassAtK,
    PassK,
    pass_at_k,
    pass_hat_k,
    pass_k,
)
from evalkit.stats._plan import ContrastPlan, LabelPlan, MeasuredP, Plan
from evalkit.stats._sequences import (
    DEFAULT_GRID,
    Look,
    MeanSequence,
    PairedSequence,
    Scope,
    SequentialVerdict,
)
from evalkit.stats._settlement import SequentialOutcome, TypeSettlement
from evalkit.stats._stability import (
    ReplicateStability,
    VarianceComponents,
    replicate_seed,
    replicate_stability,
)
from evalkit.stats._stability_document import (
    SEED_DERIVATION,
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
    # one run
    "STABILITY_TOLERANCE_PP", "ConfusionMatrix", "Convergence", "TypeMetrics", "WilsonInterval",
    "chart_points", "confusion_matrix", "convergence", "cumulative_series",
    "latency_percentiles", "logged_latency", "two_sided_z", "wilson_interval",
    # two runs over the same items
    "MarginCheck", "MarginVerdict", "PairedGap", "margin_check", "paired_gap",
    "sequence_margin_check",
    # anytime-valid: a verdict at every look of a sequential run (confidence sequences)
    "DEFAULT_GRID", "Look", "MeanSequence", "PairedSequence", "Scope", "SequentialOutcome",
    "SequentialVerdict", "TypeSettlement",
    # replicates
    "SEED_DERIVATION", "ReplicateStability", "StabilityDocument", "StabilitySummary",
    "VarianceComponents", "replicate_seed", "replicate_stability",
    # reliability over replicates
    "PASS_K_INTERVAL", "ItemMean", "PassAtK", "PassK", "pass_at_k", "pass_hat_k", "pass_k",
    # how many runs, items or replicates a claim needs
    "DECISION_CROSSOVER_P", "WHOLE_REPLICATE_BOOTSTRAP_COVERAGE", "Allocation",
    "ContrastInterval", "ContrastPlan", "Disagreement", "LabelPlan", "MeasuredP", "Plan",
    "VoteTable", "allocate", "bootstrap_coverage", "disagreement",
    "items_and_replicates_t_interval", "nested_bootstrap_variance",
    "replicate_mean_t_interval", "replicates_for_half_width", "vote_table",
    "whole_replicate_bootstrap", "whole_replicate_bootstrap_variance",
    # REPEAT_COUNT calibration
    "PLATEAU_RULE", "Calibration", "CalibrationPoint",
    # the judge against people's labels
    "BUDGET_HALF_WIDTH", "MIN_LABELS_PER_CLASS", "Agreement", "ChanceCorrected",
    "CorrectedAccuracy", "DrawnEntry", "JudgeCheck", "JudgeStability", "LabelBudget",
    "LabelDraw", "LabelDraws", "Stratum", "agreement", "check_judge", "checks_for",
    "cohens_kappa", "corrected_metrics", "draw_for_labels", "gwets_ac1", "judge_checks",
    "labels_for_half_width", "labels_missing", "latest_labels", "ppi_mean", "rogan_gladen",
    "stratified_ppi_mean",
]
