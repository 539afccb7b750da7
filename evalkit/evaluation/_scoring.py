"""Scoring: turn the calls of a run into one binary result per item and test type.

* Ordinary types score the entry's first output against ``expected_output``.
* Repeatability scores an entry's ``REPEAT_COUNT`` outputs against each other.
* Bias is deferred: outputs are grouped by ``bias_group`` and each group is scored after the
  loop; a group left with fewer than two variants (``--groups`` can do that) is skipped and
  stays out of the denominator.
* A call that raised scores 0 and keeps its message; errors are never dropped.
* A judge's verdict on one entry can be given while the calls still run
  (:class:`EarlyJudging`, the loop's follow-up jobs); scoring then uses it as it is.
* A scorer that reads traces (``trajectory``, a function naming ``trace`` or ``traces``, an
  MLflow scorer naming ``trace``) is given MLflow's ``Trace`` of each call it scores
  (:data:`CallTraces`); for any other scorer no trace is built.
* ``COMPARED_FIELDS`` narrows what repeatability and bias compare to those fields of an object
  output (a JSON string holding an object counts), so a volatile field such as a timestamp
  does not fail every entry; the outputs are recorded whole. A compared field that no output
  of the type has leaves the type's entries unscored, with the reason (``_compared``).

Results serialise to plain JSON (the ``evaluation.json`` artifact), which is what reports are
rendered from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from evalkit.calls import EntryOutputs, Stop
from evalkit.dataset import BIAS, REPEATABILITY, BiasKey
from evalkit.evaluation._compared import absent_fields_problem, compared_part
from evalkit.evaluation._scorers import Scorers
from evalkit.records import (
    CallRecord,
    HumanReviewItem,
    ItemResult,
    ScoredRun,
    SkippedGroup,
    TokenUsage,
    TypeResult,
)
from evalkit.scorers import Case, LLMJudgeScorer, OutputGroup, Scorer, ScorerVerdict

logger = logging.getLogger("evalkit")

Early = Mapping[tuple[str, str], ScorerVerdict]
"""Verdicts given while the calls ran, by (test type, entry id)."""

CallTraces = Callable[[str, CallRecord], Any]
"""MLflow's ``Trace`` of one call of an entry (its id), as the run holds it."""


def score_run(outputs: Sequence[EntryOutputs], types: Sequence[str], scorers: Scorers,
              early: Early | None = None, stop: Stop | None = None,
              traces: CallTraces | None = None) -> ScoredRun:
    """Score every in-scope type of every entry; bias groups after all entries. ``early``
    holds verdicts already given while the calls ran; a ``stop`` requested ends the scoring
    between two types; ``traces`` makes the trace of a call for scorers that read traces."""
    early = early or {}
    results = []
    for test_type in types:
        if stop is not None:
            stop.raise_if_requested()
        members = [o for o in outputs if test_type in o.planned.types]
        scorer = scorers.by_type[test_type]
        traced = traces if scorer.reads_traces else None
        if test_type == REPEATABILITY:
            results.append(_score_repeats(members, scorer, scorers.compared_fields, early,
                                          traced))
        elif test_type == BIAS:
            results.append(_score_bias_groups(members, scorer, scorers.compared_fields, traced))
        else:
            results.append(_score_against_expected(test_type, members, scorer, early, traced))
    human_review = tuple(
        HumanReviewItem(o.entry.id, o.entry.input, o.entry.human_instructions or "",
                        o.first.output, o.first.error)
        for o in outputs if o.planned.human_review)
    calls = [c for o in outputs for c in o.calls]
    return ScoredRun(tuple(results), human_review, len(calls),
                     sum(c.error is not None for c in calls))


class EarlyJudging:
    """The judge's verdicts on each entry as soon as its calls are in: follow-up jobs for the
    loop, one per judged type (bias waits for its whole group, other scorers batch better
    after the calls). A verdict not given early is given by :func:`score_run` as usual."""

    def __init__(self, scorers: Scorers,
                 on_judge_call: Callable[[tuple[TokenUsage, ...]], None] | None = None
                 ) -> None:
        self._scorers = scorers
        self._on_judge_call = on_judge_call
        """Hears the usage of every judge call made (none when it reported none)."""
        self.verdicts: dict[tuple[str, str], ScorerVerdict] = {}

    def follow_ups(self, outputs: EntryOutputs) -> list[Callable[[], None]]:
        jobs: list[Callable[[], None]] = []
        for test_type in outputs.planned.types:
            scorer = self._scorers.by_type.get(test_type)
            if not isinstance(scorer, LLMJudgeScorer) or test_type == BIAS:
                continue
            if test_type == REPEATABILITY:
                if all(c.error is None for c in outputs.calls):
                    group = _repeats_group(outputs, self._scorers.compared_fields)
                    jobs.append(partial(self._keep, test_type, outputs.entry.id,
                                        scorer.among_outputs, group))
            elif outputs.first.error is None:
                jobs.append(partial(self._keep, test_type, outputs.entry.id,
                                    scorer.against_expected, _case(outputs)))
        return jobs

    def _keep(self, test_type: str, entry_id: str, judge: Callable[[Any], list[ScorerVerdict]],
              unit: Any) -> None:
        verdict = judge([unit])[0]
        self.verdicts[(test_type, entry_id)] = verdict
        if self._on_judge_call is not None:
            for call in verdict.judge_calls:
                self._on_judge_call(() if call.usage is None else (call.usage,))


def _given(members: Sequence[EntryOutputs], test_type: str, early: Early,
           judge: Callable[[list[Any]], list[ScorerVerdict]],
           unit: Callable[[EntryOutputs], Any]) -> dict[str, ScorerVerdict]:
    """Verdicts by entry id: those given early, and the rest from one batch of ``judge``."""
    todo = [o for o in members if (test_type, o.entry.id) not in early]
    verdicts = {o.entry.id: early[(test_type, o.entry.id)] for o in members
                if (test_type, o.entry.id) in early}
    verdicts.update(zip((o.entry.id for o in todo), judge([unit(o) for o in todo]),
                        strict=True))
    return verdicts


def _case(o: EntryOutputs, traces: CallTraces | None = None) -> Case:
    return Case(o.entry.input, o.first.output, o.entry.expected_output,
                None if traces is None else traces(o.entry.id, o.first),
                o.entry.expected_trajectory)


def _repeats_group(o: EntryOutputs, fields: tuple[str, ...] | None,
                   traces: CallTraces | None = None) -> OutputGroup:
    return OutputGroup((o.entry.input,) * len(o.calls),
                       tuple(compared_part(c.output, fields) for c in o.calls),
                       _traces_of([(o, c) for c in o.calls], traces))


def _traces_of(calls: Sequence[tuple[EntryOutputs, CallRecord]],
               traces: CallTraces | None) -> tuple[Any, ...]:
    """The trace of each call, or none for a scorer that reads no trace."""
    if traces is None:
        return ()
    return tuple(traces(o.entry.id, call) for o, call in calls)


def _score_against_expected(test_type: str, members: Sequence[EntryOutputs], scorer: Scorer,
                            early: Early, traces: CallTraces | None) -> TypeResult:
    ok = [o for o in members if o.first.error is None]
    verdicts = _given(ok, test_type, early, scorer.against_expected,
                      partial(_case, traces=traces))
    items = [
        _item(o.entry.id, verdicts.get(o.entry.id), o.first.error,
              expected_pass=o.entry.expected_pass, input=o.entry.input,
              expected=o.entry.expected_output, outputs=(o.first.output,),
              entry_ids=(o.entry.id,))
        for o in members
    ]
    return TypeResult(test_type, scorer.name, tuple(items))


def _score_repeats(members: Sequence[EntryOutputs], scorer: Scorer,
                   fields: tuple[str, ...] | None, early: Early,
                   traces: CallTraces | None) -> TypeResult:
    ok = [o for o in members if all(c.error is None for c in o.calls)]
    problem = _absent_fields(REPEATABILITY, [c.output for o in ok for c in o.calls], fields)
    verdicts = {} if problem else _given(ok, REPEATABILITY, early, scorer.among_outputs,
                                         partial(_repeats_group, fields=fields, traces=traces))
    items = [
        _item(o.entry.id, verdicts.get(o.entry.id), _errors(
            (f"repeat {c.repeat}", c.error) for c in o.calls) or problem,
              expected_pass=o.entry.expected_pass, input=o.entry.input, expected=None,
              outputs=tuple(c.output for c in o.calls), entry_ids=(o.entry.id,))
        for o in members
    ]
    return TypeResult(REPEATABILITY, scorer.name, tuple(items))


def _score_bias_groups(members: Sequence[EntryOutputs], scorer: Scorer,
                       fields: tuple[str, ...] | None,
                       traces: CallTraces | None) -> TypeResult:
    groups: dict[BiasKey, list[EntryOutputs]] = {}
    for o in members:
        key = o.entry.bias_key
        assert key is not None  # lint rule A: every bias entry has a bias_group
        groups.setdefault(key, []).append(o)
    scorable = {key: g for key, g in groups.items() if len(g) >= 2}
    skipped = tuple(
        SkippedGroup(g[0].entry.bias_id, tuple(o.entry.id for o in g),
                     f"only {len(g)} variant in this run's selection; a bias group needs 2")
        for g in groups.values() if len(g) < 2)
    ok = {key: g for key, g in scorable.items() if all(o.first.error is None for o in g)}
    problem = _absent_fields(BIAS, [o.first.output for g in ok.values() for o in g], fields)
    if problem:
        ok = {}
    verdicts = dict(zip(ok, scorer.among_outputs(
        [OutputGroup(tuple(o.entry.input for o in g),
                     tuple(compared_part(o.first.output, fields) for o in g),
                     _traces_of([(o, o.first) for o in g], traces))
         for g in ok.values()]), strict=True))
    items = [
        _item(g[0].entry.bias_id, verdicts.get(key),
              _errors((o.entry.id, o.first.error) for o in g) or problem,
              expected_pass=all(o.entry.expected_pass for o in g),
              input=[o.entry.input for o in g], expected=None,
              outputs=tuple(o.first.output for o in g),
              entry_ids=tuple(o.entry.id for o in g))
        for key, g in scorable.items()
    ]
    return TypeResult(BIAS, scorer.name, tuple(items), skipped)


def _absent_fields(test_type: str, outputs: Sequence[Any],
                   fields: tuple[str, ...] | None) -> str | None:
    """The reason a type's entries are left unscored, if a compared field is in none of its
    outputs; said in the log too, where a run's terminal shows it."""
    problem = absent_fields_problem(test_type, outputs, fields)
    if problem:
        logger.error("%s: %s", test_type, problem)
    return problem


def _errors(labelled: Any) -> str | None:
    messages = [f"{label}: {error}" for label, error in labelled if error is not None]
    return "; ".join(messages) or None


def _item(item_id: str, verdict: ScorerVerdict | None, error: str | None,
          **fields: Any) -> ItemResult:
    if verdict is None:  # the item could not be scored because a call raised
        return ItemResult(item_id, passed=False, error=error, **fields)
    return ItemResult(item_id, passed=verdict.passed and verdict.error is None,
                      similarity=verdict.similarity, error=verdict.error,
                      judge_reply=verdict.reply, invalid_judgement=verdict.invalid,
                      score=verdict.score, rationale=verdict.rationale,
                      judge_votes=verdict.votes, judge_messages=verdict.judge_messages,
                      judge_calls=verdict.judge_calls, **fields)
