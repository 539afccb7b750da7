"""The run history of an experiment, newest first: the terminal view of what MLflow holds.

Replicate children are folded into their parent (which carries the mean over replicates and
the effective-n interval), so each entry is one evaluation a user ran, with its mode
(evaluation, replicates or calibration; ``rescore`` for an evaluation that scored another
run's recorded outputs, named on the line below it). Planning runs evaluate nothing and have
no accuracy to list, so they are left out (``evalkit plan`` names its own run). The commit
ends with ``+`` when the run started with uncommitted changes to tracked files (its
``git_dirty`` tag), since the commit alone would name code the run did not use. Each run's
tokens and cost come from its metrics (a replicate series' parent logs its replicates'
summed; for a series recorded before it did, they are summed here). The text layout fits
100 columns: one line per run, its accuracies per type wrapped on the lines below, then its
tokens and cost when it reported any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from evalkit.records import Mode, RunUsage, TypeNames, names
from evalkit.tracking._backend import StoredRun
from evalkit.tracking._reader import RunReader, evaluations_among


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
    git_dirty: bool | None
    """Uncommitted changes to tracked files when the run started; ``None`` when the run
    recorded no such flag (no commit yet, outside git, or a run that predates the flag)."""
    verdict: str
    """PASS/FAIL when the run finished; otherwise its MLflow status (KILLED, FAILED, ...)."""
    mode: str
    """``evaluation``, ``replicates`` or ``calibration``."""
    rescored_from: str | None = None
    """The run whose recorded outputs this run scored again (``evalkit rescore``)."""
    usage: RunUsage = RunUsage()
    """The tokens and cost of the run's LLM calls (of a series, every replicate's summed)."""
    sequential: str | None = None
    """The question a sequential run answered (``dataset``, ``population``)."""
    against: str | None = None
    """The baseline of a run made ``--against`` one."""

    @property
    def shown_mode(self) -> str:
        """The mode column: ``rescore`` for a rescored evaluation, ``against`` and
        ``sequential`` for those runs, else the mode."""
        if self.rescored_from is not None:
            return "rescore"
        if self.against is not None:
            return "against"
        return "sequential" if self.sequential is not None else self.mode

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "run_name": self.run_name,
            "started": self.started.isoformat(), "status": self.status,
            "test_types": list(self.test_types),
            "accuracy": {t: {"accuracy": f.accuracy, "ci_lower": f.low, "ci_upper": f.high}
                         for t, f in self.accuracy.items()},
            "repeat_count": self.repeat_count, "replicates": self.replicates,
            "dataset_digest": self.dataset_digest, "git_commit": self.git_commit,
            "git_dirty": self.git_dirty, "verdict": self.verdict, "mode": self.mode,
            "rescored_from": self.rescored_from, "usage": self.usage.to_json(),
            "sequential": self.sequential, "against": self.against,
        }


def history(reader: RunReader, experiment_name: str,
            limit: int = 20) -> tuple[HistoryRow, ...]:
    """The ``limit`` newest top-level runs of an experiment."""
    runs = reader.runs(experiment_name)
    return tuple(_row(run, _usage(run, runs)) for run in evaluations_among(runs)[:limit])


def _usage(run: StoredRun, runs: Sequence[StoredRun]) -> RunUsage:
    """The run's own usage; a replicate parent logs its replicates' summed, but one recorded
    before it did so has none, and its replicates' are summed here."""
    own = RunUsage.from_metrics(run.metrics)
    if own.reported:
        return own
    return RunUsage.total(RunUsage.from_metrics(child.metrics) for child in runs
                          if child.tags.get(names.PARENT_RUN_TAG) == run.run_id)


def _row(run: StoredRun, usage: RunUsage) -> HistoryRow:
    tags, metrics, params = run.tags, run.metrics, run.params
    types = tuple(t for t in tags.get(names.TEST_TYPES_TAG, "").split(",") if t)
    figures = {n.test_type: TypeFigure(metrics[n.accuracy], metrics.get(n.ci_lower),
                                       metrics.get(n.ci_upper))
               for n in map(TypeNames.of, types) if n.accuracy in metrics}
    repeat_count = metrics.get(names.REPEAT_COUNT_METRIC)
    replicates = metrics.get(names.REPLICATES_METRIC)
    dirty = tags.get(names.GIT_DIRTY_TAG)
    return HistoryRow(
        run_id=run.run_id, run_name=run.run_name,
        started=datetime.fromtimestamp(run.start_time_ms / 1000, tz=UTC), status=run.status,
        test_types=types, accuracy=figures,
        repeat_count=None if repeat_count is None else int(repeat_count),
        replicates=None if replicates is None else int(replicates),
        dataset_digest=params.get(names.DATASET_DIGEST_PARAM, ""),
        git_commit=tags.get(names.GIT_COMMIT_TAG, "unknown"),
        git_dirty=None if dirty is None else dirty == "true",
        verdict=tags.get(names.VERDICT_TAG, run.status) if run.status == "FINISHED"
        else run.status,
        mode=tags.get(names.MODE_TAG) or Mode.EVALUATION,
        rescored_from=tags.get(names.RESCORED_FROM_TAG), usage=usage,
        sequential=tags.get(names.SEQUENTIAL_TAG), against=tags.get(names.AGAINST_TAG))


WIDTH = 100
_INDENT = " " * 18
DIRTY_MARK = "+"
"""After the commit of a run that started with uncommitted changes to tracked files."""


def render_history(rows: Sequence[HistoryRow]) -> str:
    """A plain-text table that fits :data:`WIDTH` columns: one line per run (date, run id,
    mode, verdict, repeat count / replicates, dataset digest, commit with ``+`` when dirty),
    then, indented under it, the run a rescore scored again, its accuracy per type with the
    95% interval, wrapped, and its tokens and cost (no line when it reported none); a closing
    note says what ``+`` means when a run has it."""
    lines = [f"{'started (UTC)':<16}  {'run id':<32}  {'mode':<11}  {'verdict':<7}  "
             f"{'rpt/rpl':<7}  {'dataset':<7}  commit",
             f"{_INDENT}accuracy per type [95% CI]"]
    for row in rows:
        counts = (f"{'-' if row.repeat_count is None else row.repeat_count}/"
                  f"{'-' if row.replicates is None else row.replicates}")
        lines.append(f"{row.started:%Y-%m-%d %H:%M}  {row.run_id:<32}  {row.shown_mode:<11}  "
                     f"{row.verdict:<7}  {counts:<7}  {row.dataset_digest[:7]:<7}  "
                     f"{_commit(row.git_commit)}{DIRTY_MARK if row.git_dirty else ''}")
        if row.rescored_from is not None:
            lines.append(f"{_INDENT}rescore of run {row.rescored_from}: its recorded outputs "
                         "scored again")
        lines += _packed([f"{t} {f.accuracy:.3f}" + ("" if f.low is None or f.high is None
                                                      else f" [{f.low:.3f}, {f.high:.3f}]")
                          for t, f in row.accuracy.items()] or ["—"])
        if row.usage.reported:
            lines.append(f"{_INDENT}usage: {row.usage.text()}")
    if any(row.git_dirty for row in rows):
        lines.append(f"commit{DIRTY_MARK}: the run started with uncommitted changes to tracked "
                     f"files ({names.CODE_DIFF_ARTIFACT} holds them)")
    return "\n".join(lines)


def _commit(git_commit: str) -> str:
    """A commit's head, or ``none`` for a run made before the first commit or outside git
    (recorded as ``none: <why>``)."""
    return git_commit.split(":")[0][:7]


def _packed(figures: Sequence[str]) -> list[str]:
    """Figures joined by "; " on indented lines of at most :data:`WIDTH` columns, never
    splitting one figure."""
    lines = [_INDENT]
    for figure in figures:
        joined = figure if lines[-1] == _INDENT else f"; {figure}"
        if lines[-1] != _INDENT and len(lines[-1]) + len(joined) > WIDTH:
            lines[-1] += ";"
            lines.append(_INDENT)
            joined = figure
        lines[-1] += joined
    return lines
