"""The run history of an experiment, newest first: the terminal view of what MLflow holds.

Replicate children are folded into their parent (which carries the mean over replicates and
the effective-n interval), so each line is one evaluation a user ran; planning runs, which
evaluate nothing, are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evalkit.tracking._tracker import Tracker


@dataclass(frozen=True)
class TypeFigure:
    accuracy: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class HistoryRow:
    run_id: str
    run_name: str
    started: datetime
    status: str
    test_types: tuple[str, ...]
    accuracy: dict[str, TypeFigure]
    repeat_count: int | None
    replicates: int | None
    dataset_digest: str
    git_commit: str
    verdict: str
    """PASS/FAIL when the run finished; otherwise its MLflow status (KILLED, FAILED, ...)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "run_name": self.run_name,
            "started": self.started.isoformat(), "status": self.status,
            "test_types": list(self.test_types),
            "accuracy": {t: {"accuracy": f.accuracy, "ci_lower": f.low, "ci_upper": f.high}
                         for t, f in self.accuracy.items()},
            "repeat_count": self.repeat_count, "replicates": self.replicates,
            "dataset_digest": self.dataset_digest, "git_commit": self.git_commit,
            "verdict": self.verdict,
        }


def history(tracker: Tracker, experiment_name: str, limit: int = 20) -> tuple[HistoryRow, ...]:
    """The ``limit`` newest top-level runs of an experiment."""
    return tuple(_row(run) for run in tracker.evaluation_runs(experiment_name)[:limit])


def _row(run: Any) -> HistoryRow:
    tags, metrics, params = run.data.tags, run.data.metrics, run.data.params
    types = tuple(t for t in tags.get("test_types", "").split(",") if t)
    figures = {t: TypeFigure(metrics[f"{t}_accuracy"], metrics.get(f"{t}_accuracy_ci_lower"),
                             metrics.get(f"{t}_accuracy_ci_upper"))
               for t in types if f"{t}_accuracy" in metrics}
    repeat_count = metrics.get("repeat_count")
    replicates = metrics.get("replicates")
    status = run.info.status
    return HistoryRow(
        run_id=run.info.run_id, run_name=run.info.run_name,
        started=datetime.fromtimestamp(run.info.start_time / 1000, tz=UTC), status=status,
        test_types=types, accuracy=figures,
        repeat_count=None if repeat_count is None else int(repeat_count),
        replicates=None if replicates is None else int(replicates),
        dataset_digest=params.get("dataset_digest", ""),
        git_commit=tags.get("git_commit", "unknown"),
        verdict=tags.get("verdict", status) if status == "FINISHED" else status)


def render_history(rows: Sequence[HistoryRow]) -> str:
    """A plain-text table, one run a line."""
    lines = [f"{'started (UTC)':<19}  {'run id':<32}  {'verdict':<8}  {'repeat':>6}  "
             f"{'repl.':>5}  {'dataset':<12}  {'commit':<12}  accuracy per type [95% CI]"]
    for row in rows:
        figures = "; ".join(
            f"{t} {f.accuracy:.3f}" + ("" if f.low is None or f.high is None
                                      else f" [{f.low:.3f}, {f.high:.3f}]")
            for t, f in row.accuracy.items()) or "—"
        lines.append(
            f"{row.started:%Y-%m-%d %H:%M:%S}  {row.run_id:<32}  {row.verdict:<8}  "
            f"{'' if row.repeat_count is None else row.repeat_count:>6}  "
            f"{'' if row.replicates is None else row.replicates:>5}  "
            f"{row.dataset_digest[:12]:<12}  {row.git_commit[:12]:<12}  {figures}")
    return "\n".join(lines)
