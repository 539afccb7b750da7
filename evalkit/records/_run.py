"""A run as MLflow holds it: the record read back from a run, and the documents of each mode.

The artifact layout of a run (the names are in :mod:`evalkit.records.names`)::

    results/evaluation.json     every scored item (the reports are rendered from it)
    results/entries.json        per-entry results table (mlflow.log_table), for the UI
    raw/raw-results.jsonl       every component call as it happened
    reports/report-<type>.md    the reports of the run
    sequential.json             a sequential run's settlement (``sequential`` tag), with its
                                verdict

and of the parent run of a replicate series (``mode`` tag ``replicates``)::

    stability/stability.json    per metric: rates, mean, sd, spread, variance split, flips,
                                pass@k and pass^k
    stability/items.json        every item's result in every replicate
    stability/replicates.lock.json   the seeds of the replicates
    reports/report-stability.md

and of a calibration run (``mode`` tag ``calibration``), besides the ordinary artifacts::

    calibration/calibration.json     pass rate by repeat count k, the recommended k
    reports/report-calibration.md, reports/calibration.svg
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalkit.records import names
from evalkit.records._labels import HumanLabel, ReviewerVerdict
from evalkit.records._results import ScoredRun
from evalkit.records.names import Mode

MODE_DOCUMENTS: Mapping[Mode, tuple[str, ...]] = {
    Mode.REPLICATES: (names.STABILITY_ARTIFACT, names.STABILITY_ITEMS_ARTIFACT),
    Mode.CALIBRATION: (names.CALIBRATION_ARTIFACT,),
    Mode.PLANNING: (names.PLAN_ARTIFACT,),
}
"""The JSON artifacts a run of each mode holds beside (or instead of) evaluation.json."""
WITHOUT_EVALUATION = frozenset({Mode.REPLICATES, Mode.PLANNING})
"""Modes whose runs call no component, so hold no evaluation.json."""


@dataclass(frozen=True)
class RunRecord:
    """Everything MLflow holds about one evaluation run, or one replicate series' parent."""

    run_id: str
    run_name: str
    experiment_id: str
    experiment_name: str
    start_time_ms: int
    status: str
    params: Mapping[str, str]
    tags: Mapping[str, str]
    metrics: Mapping[str, float]
    histories: Mapping[str, tuple[float, ...]]
    evaluation: ScoredRun | None
    """Scored items; ``None`` for runs that call no component (a replicate parent, a plan)."""
    documents: Mapping[str, Any] = field(default_factory=dict)
    """The JSON artifacts of the run's mode (see :data:`MODE_DOCUMENTS`), the label draw and
    a finished sequential run's settlement, by artifact path."""
    reviewer_verdicts: tuple[ReviewerVerdict, ...] = ()
    """Human feedback on the run's traces, by entry, time and reviewer (for a run with
    entries for human review)."""
    labels: tuple[HumanLabel, ...] = ()
    """People's pass/fail labels on the run's entries, per test type (any run with traces)."""

    @property
    def mode(self) -> Mode:
        return Mode.of(self.tags)

    @property
    def label_draws(self) -> Mapping[str, Any] | None:
        """The entries drawn for people's labels (``labels/draws.json``), when the run has
        a draw."""
        return self.documents.get(names.LABEL_DRAWS_ARTIFACT)

    @property
    def feedback_digest(self) -> str:
        """A digest of people's feedback the record holds (labels and reviewers' verdicts;
        ``""`` when none): the run's reports and description are out of date when it differs
        from the run's ``evalkit.feedback_digest`` tag. Times are left out: a label given as
        the run finishes has one only once the store holds it."""
        given = sorted(json.dumps(fact, sort_keys=True, default=str) for fact in (
            *([x.entry_id, x.test_type, x.passed, x.reviewer, x.comment] for x in self.labels),
            *([v.entry_id, v.name, v.value, v.reviewer, v.comment]
              for v in self.reviewer_verdicts)))
        if not given:
            return ""
        return hashlib.sha256("\n".join(given).encode()).hexdigest()
