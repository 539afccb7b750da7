"""Each test type's figures read back from the MLflow metrics and params its run logged
(:mod:`evalkit.tracking._metric_points` writes them under the same
:class:`~evalkit.records.TypeNames`), so that any past run's reports render again."""

from __future__ import annotations

from evalkit.records import RunRecord, TypeNames, threshold_from_params
from evalkit.stats import TypeMetrics


def recorded_metrics(record: RunRecord) -> tuple[TypeMetrics, ...]:
    """Each scored type's metrics as a run holds them, with the threshold it logged."""
    assert record.evaluation is not None
    return tuple(_type_metrics(record, r.test_type) for r in record.evaluation.types)


def _type_metrics(record: RunRecord, test_type: str) -> TypeMetrics:
    n = TypeNames.of(test_type)
    metrics, histories = record.metrics, record.histories
    return TypeMetrics(
        test_type=test_type, samples=int(metrics[n.samples]), correct=int(metrics[n.correct]),
        errors=int(metrics[n.errors]), accuracy=metrics.get(n.accuracy, 0.0),
        precision=metrics.get(n.precision, 0.0), recall=metrics.get(n.recall, 0.0),
        f1=metrics.get(n.f1, 0.0), ci_low=metrics.get(n.ci_lower),
        ci_high=metrics.get(n.ci_upper),
        cumulative_accuracy=tuple(histories.get(n.cumulative_accuracy, ())),
        cumulative_f1=tuple(histories.get(n.cumulative_f1, ())),
        threshold=threshold_from_params(test_type, record.params))
