"""The scorer as a measured instrument: one test type's verdicts held against people's labels.
This is where people's labels enter the corrected accuracy (:func:`check_judge`).

For every scorer, the LLM judge first among them: how often its verdict agrees with a person's
(every label counts), and the type's accuracy corrected for its errors (only labels on entries
drawn at random count, so that the estimate is unbiased). A person's label says whether the
output passes; the accuracy it implies for an entry is ``label == expected_pass``, as the
scorer's verdict implies ``passed == expected_pass``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalkit.records import HumanLabel, ItemResult, RunRecord, ScoredRun, TypeResult
from evalkit.stats._agreement import Agreement, agreement
from evalkit.stats._corrected import (
    CorrectedAccuracy,
    LabelBudget,
    Stratum,
    labels_for_half_width,
    labels_missing,
    rogan_gladen,
    stratified_ppi_mean,
)
from evalkit.stats._judge_stability import JudgeStability, judge_stability
from evalkit.stats._label_draw import LabelDraw, LabelDraws
from evalkit.stats._metrics import TypeMetrics

BUDGET_HALF_WIDTH = 0.05
"""The half-width the label budget aims at by default."""


@dataclass(frozen=True)
class JudgeCheck:
    """One test type's scorer held against people's labels."""

    test_type: str
    scorer: str
    entries: int
    """Entries the type scored (bias groups are not labelled)."""
    agreement: Agreement | None
    """Every labelled entry, drawn or by choice; ``None`` without labels."""
    drawn_labels: tuple[str, ...]
    """Entry ids of the labels on drawn entries: the ones the corrected accuracy uses."""
    chosen_labels: tuple[str, ...]
    """Entry ids of labels people gave by choice (not in the draw): agreement only."""
    drawn: int
    """Entries in the type's draw (0: nothing drawn yet)."""
    corrected: CorrectedAccuracy | None
    """Stratified PPI, once every verdict has enough labels (see :attr:`more_needed`)."""
    rogan_gladen: CorrectedAccuracy | None
    more_needed: Mapping[bool, int]
    """Scorer verdict -> labels on drawn entries still needed before a correction is given:
    ``min(N_h, MIN_LABELS_PER_CLASS)`` for each verdict with entries."""
    budget: LabelBudget | None
    """Labels for a corrected interval of :data:`BUDGET_HALF_WIDTH`."""
    stability: JudgeStability | None = None
    """How often the judge changed its mind (``JUDGE_REPEATS`` > 1); else ``None``."""

    @property
    def labels(self) -> int:
        return len(self.drawn_labels) + len(self.chosen_labels)

    def to_json(self) -> dict[str, Any]:
        """The check for ``--json``: the corrected accuracy with its method, and the entry ids
        of the labels that entered it."""
        a = self.agreement
        return {
            "scorer": self.scorer, "entries": self.entries, "drawn": self.drawn,
            "labels_drawn": len(self.drawn_labels), "labels_by_choice": len(self.chosen_labels),
            "corrected": _estimate_json(self.corrected),
            "rogan_gladen": _estimate_json(self.rogan_gladen),
            "label_entry_ids": list(self.drawn_labels) if self.corrected else [],
            "more_labels_needed": {_SIDE[h]: n for h, n in self.more_needed.items()},
            "agreement": None if a is None else {
                "confusion": {"tp": a.confusion.tp, "fp": a.confusion.fp,
                              "fn": a.confusion.fn, "tn": a.confusion.tn},
                **{name: None if rate is None else rate.successes / rate.n
                   for name, rate in (("tpr", a.tpr), ("tnr", a.tnr),
                                      ("precision", a.precision))},
                **{name: None if c is None else c.value
                   for name, c in (("kappa", a.kappa), ("ac1", a.ac1))},
                "prevalence": a.prevalence},
            "judge_stability": None if self.stability is None else {
                "repeats": self.stability.repeats, "items": self.stability.items,
                "flip_rate": self.stability.flip_rate,
                "majority_error": self.stability.majority_error,
                "failures": self.stability.failures,
                "failures_from_judge": self.stability.failures_from_judge},
            "budget": None if self.budget is None else {
                "half_width": self.budget.half_width, "total": self.budget.total,
                "more": self.budget.more,
                "needed": {_SIDE[h]: n for h, n in self.budget.needed.items()}},
        }


_SIDE = {True: "pass", False: "fail"}


def _estimate_json(c: CorrectedAccuracy | None) -> dict[str, Any] | None:
    return None if c is None else {
        "method": c.method, "estimate": c.estimate, "standard_error": c.standard_error,
        "confidence": c.confidence, "low": c.low, "high": c.high, "labels": c.labels,
        "entries": c.entries}


def latest_labels(labels: Sequence[HumanLabel], test_type: str) -> dict[str, HumanLabel]:
    """Entry id -> the latest label of ``test_type`` (a person who changes their mind, or a
    second person, replaces the earlier label).

    >>> from evalkit.records import HumanLabel
    >>> from evalkit.stats import latest_labels
    >>> labels = [HumanLabel("e1", "functional", True, "ann", time_ms=2),
    ...           HumanLabel("e1", "functional", False, "bob", time_ms=1)]
    >>> latest_labels(labels, "functional")["e1"].reviewer
    'ann'
    """
    latest: dict[str, HumanLabel] = {}
    for label in sorted((x for x in labels if x.test_type == test_type),
                        key=lambda x: x.time_ms):
        latest[label.entry_id] = label
    return latest


def check_judge(result: TypeResult, labels: Sequence[HumanLabel], draw: LabelDraw | None,
                confidence: float = 0.95,
                half_width: float = BUDGET_HALF_WIDTH) -> JudgeCheck:
    """Agreement, the corrected accuracy and the label budget of one type.

    The draw's strata are the scorer's verdicts (N_h entries each); the labelled drawn
    entries of a stratum are a simple random sample of it (the draw order is random, so any
    prefix of it labelled is too), which is what :func:`stratified_ppi_mean` assumes. Rogan-Gladen
    takes the scorer's accuracy over every entry and its sensitivity and specificity for
    correctness measured on the drawn labels, each label weighted by N_h/n_h and the weights
    scaled to sum to the number of labels.

    Notes
    -----
    Agreement over every label (:func:`agreement`); the corrected accuracy
    (:func:`stratified_ppi_mean`) once each verdict has ``min(N_h, 10)`` drawn labels
    (:func:`labels_missing`), with :func:`rogan_gladen` beside it; the labels for an interval
    of ``half_width`` (:func:`labels_for_half_width`); the judge's stability over its votes.

    References
    ----------
    A. Fisch et al., "Stratified prediction-powered inference for hybrid language model
    evaluation", NeurIPS 2024; W. J. Rogan, B. Gladen (1978); the references of each
    function above.

    Examples
    --------
    A judge passed 16 of 20 entries; people labelled the 14 drawn ones and disagreed with it
    twice (``e0``, which it failed, and ``e1``, which it passed):

    >>> from evalkit.records import HumanLabel, ItemResult, TypeResult
    >>> from evalkit.stats import check_judge, draw_for_labels
    >>> items = tuple(ItemResult(f"e{i}", i % 5 != 0, True, "q", "a", ("a",), (f"e{i}",))
    ...               for i in range(20))
    >>> result = TypeResult("functional", "llm_judge", items)
    >>> draw = draw_for_labels({i.id: i.passed for i in items}, 14, seed=1)
    >>> labels = [HumanLabel(d.entry_id, "functional", d.verdict != (d.entry_id in ("e0", "e1")),
    ...                      "ann") for d in draw.drawn]
    >>> check = check_judge(result, labels, draw)
    >>> c = check.corrected
    >>> print(c.method, f"{c.estimate:.3f} {c.low:.3f} {c.high:.3f}", c.labels)
    stratified PPI 0.770 0.504 0.917 14
    >>> print(f"{check.agreement.kappa.value:.3f}", check.more_needed)
    0.650 {True: 0, False: 0}
    """
    items = {i.id: i for i in result.items if len(i.entry_ids) == 1}
    latest = {e: label for e, label in latest_labels(labels, result.test_type).items()
              if e in items}
    in_draw = {d.entry_id: d.verdict for d in draw.drawn} if draw else {}
    drawn_ids = tuple(e for e in in_draw if e in latest)
    pairs = [(items[e].passed, label.passed) for e, label in latest.items()]
    strata = _strata(items, latest, draw, drawn_ids)
    more = labels_missing(strata)
    enough = draw is not None and not any(more.values())
    corrected = stratified_ppi_mean(strata, confidence) if enough else None
    return JudgeCheck(
        result.test_type, result.scorer, len(items),
        agreement(pairs, confidence) if pairs else None, drawn_ids,
        tuple(e for e in latest if e not in in_draw), len(in_draw), corrected,
        _rogan_gladen(items, latest, strata, drawn_ids, in_draw, confidence)
        if corrected else None,
        more, labels_for_half_width(strata, half_width, confidence), judge_stability(result))


def _strata(items: Mapping[str, ItemResult], latest: Mapping[str, HumanLabel],
            draw: LabelDraw | None, drawn_ids: Sequence[str]) -> dict[bool, Stratum]:
    """Per scorer verdict: its entries N_h and, for each labelled drawn entry, whether the
    person's label makes it correct. Before any draw, the run's verdicts give N_h."""
    if draw is None:
        verdicts = [i.passed for i in items.values()]
        return {h: Stratum(verdicts.count(h), ()) for h in (True, False)}
    verdict = {d.entry_id: d.verdict for d in draw.drawn}
    return {h: Stratum(draw.entries[h], tuple(
        latest[e].passed == items[e].expected_pass for e in drawn_ids
        if verdict[e] is h)) for h in (True, False)}


def _rogan_gladen(items: Mapping[str, ItemResult], latest: Mapping[str, HumanLabel],
                  strata: Mapping[bool, Stratum], drawn_ids: Sequence[str],
                  in_draw: Mapping[str, bool],
                  confidence: float) -> CorrectedAccuracy | None:
    weight = {h: s.entries / len(s.labels) for h, s in strata.items() if s.labels}
    scale = len(drawn_ids) / sum(weight[in_draw[e]] for e in drawn_ids)
    se_hits = se_n = sp_hits = sp_n = 0.0
    for e in drawn_ids:
        item, w = items[e], weight[in_draw[e]] * scale
        person_correct = latest[e].passed == item.expected_pass
        scorer_correct = item.correct
        if person_correct:
            se_n, se_hits = se_n + w, se_hits + w * scorer_correct
        else:
            sp_n, sp_hits = sp_n + w, sp_hits + w * (not scorer_correct)
    correct = sum(i.correct for i in items.values())
    return rogan_gladen(correct, len(items), (se_hits, se_n), (sp_hits, sp_n), confidence)


def judge_checks(record: RunRecord, confidence: float = 0.95) -> dict[str, JudgeCheck]:
    """:func:`checks_for` a run as MLflow holds it: its scored items, draws and labels (the
    statistics of :func:`check_judge`)."""
    if record.evaluation is None:
        return {}
    doc = record.label_draws
    draws = LabelDraws.from_json(doc).by_type if doc else {}
    return checks_for(record.evaluation, record.labels, draws, confidence)


def checks_for(scored: ScoredRun, labels: Sequence[HumanLabel],
               draws: Mapping[str, LabelDraw],
               confidence: float = 0.95) -> dict[str, JudgeCheck]:
    """Type -> its :class:`JudgeCheck`, for each type that an LLM judged, that has labels or
    that has a draw (bias, whose items are groups, is not labelled); the statistics of
    :func:`check_judge`."""
    labelled = {label.test_type for label in labels}
    return {r.test_type: check_judge(r, labels, draws.get(r.test_type), confidence)
            for r in scored.types
            if r.per_entry
            and (r.scorer == "llm_judge" or r.test_type in labelled or r.test_type in draws)}


def corrected_metrics(metrics: Sequence[TypeMetrics],
                      checks: Mapping[str, JudgeCheck]) -> tuple[TypeMetrics, ...]:
    """Each type's metrics with its corrected accuracy, where labels allow one (its threshold
    is then checked against it)."""
    return tuple(replace(m, corrected=checks[m.test_type].corrected)
                 if m.test_type in checks else m for m in metrics)
