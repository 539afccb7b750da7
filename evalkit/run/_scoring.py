"""Scoring: turn the calls of a run into one binary result per item and test type.

* Ordinary types score the entry's first output against ``expected_output``.
* Repeatability scores an entry's ``REPEAT_COUNT`` outputs against each other.
* Bias is deferred: outputs are grouped by ``bias_group`` and each group is scored after the
  loop; a group left with fewer than two variants (``--groups`` can do that) is skipped and
  stays out of the denominator.
* A call that raised scores 0 and keeps its message; errors are never dropped.
* A judge's verdict on one entry can be given while the calls still run
  (:class:`EarlyJudging`, the loop's follow-up jobs); scoring then uses it as it is.
* ``COMPARED_FIELDS`` narrows what repeatability and bias compare to those fields of an object
  output (a JSON string holding an object counts), so a volatile field such as a timestamp
  does not fail every entry; the outputs are recorded whole.

Results serialise to plain JSON (the ``evaluation.json`` artifact), which is what reports are
rendered from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from evalkit.config import EvalConfig
from evalkit.dataset import COMPARATIVE_TYPES, BiasKey
from evalkit.records import HumanReviewItem, ItemResult, ScoredRun, SkippedGroup, TypeResult
from evalkit.run._loop import EntryOutputs
from evalkit.scorers import (
    Case,
    ChatEndpoint,
    Embedder,
    EndpointStats,
    ExactScorer,
    FunctionScorer,
    JudgeOptions,
    JudgePrompt,
    LLMJudgeScorer,
    OutputGroup,
    RetryPolicy,
    Scorer,
    SemanticSimilarityScorer,
    Verdict,
)


@dataclass
class Scorers:
    """The scorer of each test type of a run. Similarity scorers share one embedding model;
    judge scorers share one endpoint (and its counters)."""

    by_type: dict[str, Scorer] = field(default_factory=dict)
    judge: ChatEndpoint | None = None
    judge_prompts: dict[str, JudgePrompt] = field(default_factory=dict)
    """Prompt of each test type scored by the judge."""
    compared_fields: tuple[str, ...] | None = None
    """What repeatability and bias compare of an object output (``COMPARED_FIELDS``)."""

    @classmethod
    def for_run(cls, config: EvalConfig, types: Sequence[str]) -> Scorers:
        embedder: Embedder | None = None
        scorers = cls(compared_fields=config.compared_fields)
        for test_type in types:
            name = config.scorer_for(test_type)
            if callable(name):
                scorers.by_type[test_type] = FunctionScorer(name)
            elif name == "semantic_similarity":
                embedder = embedder or Embedder()
                scorers.by_type[test_type] = SemanticSimilarityScorer(
                    config.similarity_threshold_for(test_type), embedder)
            elif name == "llm_judge":
                scorers.by_type[test_type] = scorers._judge_scorer(config, test_type)
            else:
                scorers.by_type[test_type] = ExactScorer()
        return scorers

    def scorer_params(self) -> dict[str, str]:
        """Per type the scorer's name and, for a scorer function, its source digest."""
        params = {}
        for test_type, scorer in self.by_type.items():
            params[f"{test_type}_scorer"] = scorer.name
            if isinstance(scorer, FunctionScorer):
                params[f"{test_type}_scorer_source_sha256"] = scorer.digest
        return params

    def judge_params(self) -> dict[str, str]:
        """The judge's settings as MLflow params (never the key)."""
        if self.judge is None:
            return {}
        scorer = next(s for s in self.by_type.values() if isinstance(s, LLMJudgeScorer))
        combined = hashlib.sha256("".join(
            f"{t}:{p.digest}" for t, p in sorted(self.judge_prompts.items())).encode())
        return {
            "judge_model": self.judge.model, "judge_base_url": self.judge.base_url,
            "judge_temperature": "0", "judge_max_tokens": str(scorer.options.max_tokens),
            "judge_seed": str(scorer.options.seed), "judge_timeout": repr(self.judge.timeout),
            "judge_max_attempts": str(self.judge.retry.max_attempts),
            "judge_max_wait": repr(self.judge.retry.max_total_seconds),
            "judge_invalid_is_error": str(scorer.options.invalid_is_error),
            "judge_system_in_user": str(scorer.options.system_in_user),
            "judge_prompt_digest": combined.hexdigest(),
            **{f"{t}_judge_prompt": f"{p.source} sha256:{p.digest[:16]}"
               for t, p in sorted(self.judge_prompts.items())},
        }

    def reset_judge_stats(self) -> None:
        """Start the judge's counters afresh (one endpoint serves every run of a series)."""
        if self.judge is not None:
            self.judge.stats = EndpointStats()

    def judge_retries(self) -> int:
        return 0 if self.judge is None else self.judge.stats.retries

    def judge_metrics(self, scored: ScoredRun) -> dict[str, float]:
        """Judge calls, retries, failures, invalid replies and latency percentiles."""
        if self.judge is None:
            return {}
        stats = self.judge.stats
        invalid = sum(i.invalid_judgement for t in scored.types for i in t.items)
        return {"judge_calls": stats.calls + stats.failures, "judge_retries": stats.retries,
                "judge_failures": stats.failures, "judge_invalid": invalid,
                **{f"judge_latency_{k}_ms": v for k, v in stats.percentiles().items()}}

    def _judge_scorer(self, config: EvalConfig, test_type: str) -> LLMJudgeScorer:
        settings = config.judge_settings()
        if self.judge is None:
            self.judge = ChatEndpoint(settings.model, timeout=settings.timeout, retry=RetryPolicy(
                max_attempts=settings.max_attempts, max_total_seconds=settings.max_wait))
        use = test_type if test_type in COMPARATIVE_TYPES else "expected"
        path = settings.prompts.get(test_type, settings.prompts.get(use))
        prompt = JudgePrompt.load(use, path)
        self.judge_prompts[test_type] = prompt
        return LLMJudgeScorer(self.judge, prompt, JudgeOptions(
            max_tokens=settings.max_tokens, seed=settings.seed,
            concurrency=config.max_concurrency, invalid_is_error=settings.invalid_is_error,
            system_in_user=settings.system_in_user))


def score_run(outputs: Sequence[EntryOutputs], types: Sequence[str], scorers: Scorers,
              early: Mapping[tuple[str, str], Verdict] | None = None) -> ScoredRun:
    """Score every in-scope type of every entry; bias groups after all entries. ``early``
    holds verdicts (test type, entry id) already given while the calls ran."""
    early = early or {}
    results = []
    for test_type in types:
        members = [o for o in outputs if test_type in o.planned.types]
        scorer = scorers.by_type[test_type]
        if test_type == "repeatability":
            results.append(_score_repeats(members, scorer, scorers.compared_fields, early))
        elif test_type == "bias":
            results.append(_score_bias_groups(members, scorer, scorers.compared_fields))
        else:
            results.append(_score_against_expected(test_type, members, scorer, early))
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

    def __init__(self, scorers: Scorers) -> None:
        self._scorers = scorers
        self.verdicts: dict[tuple[str, str], Verdict] = {}

    def follow_ups(self, outputs: EntryOutputs) -> list[Callable[[], None]]:
        jobs: list[Callable[[], None]] = []
        for test_type in outputs.planned.types:
            scorer = self._scorers.by_type.get(test_type)
            if not isinstance(scorer, LLMJudgeScorer) or test_type == "bias":
                continue
            if test_type == "repeatability":
                if all(c.error is None for c in outputs.calls):
                    group = _repeats_group(outputs, self._scorers.compared_fields)
                    jobs.append(partial(self._keep, test_type, outputs.entry.id,
                                        scorer.among_outputs, group))
            elif outputs.first.error is None:
                jobs.append(partial(self._keep, test_type, outputs.entry.id,
                                    scorer.against_expected, _case(outputs)))
        return jobs

    def _keep(self, test_type: str, entry_id: str, judge: Callable[[Any], list[Verdict]],
              unit: Any) -> None:
        self.verdicts[(test_type, entry_id)] = judge([unit])[0]


def _given(members: Sequence[EntryOutputs], test_type: str,
           early: Mapping[tuple[str, str], Verdict], judge: Callable[[list[Any]], list[Verdict]],
           unit: Callable[[EntryOutputs], Any]) -> dict[str, Verdict]:
    """Verdicts by entry id: those given early, and the rest from one batch of ``judge``."""
    todo = [o for o in members if (test_type, o.entry.id) not in early]
    verdicts = {o.entry.id: early[(test_type, o.entry.id)] for o in members
                if (test_type, o.entry.id) in early}
    verdicts.update(zip((o.entry.id for o in todo), judge([unit(o) for o in todo]),
                        strict=True))
    return verdicts


def _case(o: EntryOutputs) -> Case:
    return Case(o.entry.input, o.first.output, o.entry.expected_output)


def _repeats_group(o: EntryOutputs, fields: tuple[str, ...] | None) -> OutputGroup:
    return OutputGroup((o.entry.input,) * len(o.calls),
                       tuple(compared_part(c.output, fields) for c in o.calls))


def _score_against_expected(test_type: str, members: Sequence[EntryOutputs], scorer: Scorer,
                            early: Mapping[tuple[str, str], Verdict]) -> TypeResult:
    ok = [o for o in members if o.first.error is None]
    verdicts = _given(ok, test_type, early, scorer.against_expected, _case)
    items = [
        _item(o.entry.id, verdicts.get(o.entry.id), o.first.error,
              expected_pass=o.entry.expected_pass, input=o.entry.input,
              expected=o.entry.expected_output, outputs=(o.first.output,),
              entry_ids=(o.entry.id,))
        for o in members
    ]
    return TypeResult(test_type, scorer.name, tuple(items))


def compared_part(output: Any, fields: tuple[str, ...] | None) -> Any:
    """The part of ``output`` that repeatability and bias compare: the named fields of an
    object (``None`` for a missing one), or the whole output when it is not an object."""
    if fields is None:
        return output
    value = output
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return output
    if not isinstance(value, dict):
        return output
    return {name: value.get(name) for name in fields}


def _score_repeats(members: Sequence[EntryOutputs], scorer: Scorer,
                   fields: tuple[str, ...] | None,
                   early: Mapping[tuple[str, str], Verdict]) -> TypeResult:
    ok = [o for o in members if all(c.error is None for c in o.calls)]
    verdicts = _given(ok, "repeatability", early, scorer.among_outputs,
                      partial(_repeats_group, fields=fields))
    items = [
        _item(o.entry.id, verdicts.get(o.entry.id), _errors(
            (f"repeat {c.repeat}", c.error) for c in o.calls),
              expected_pass=o.entry.expected_pass, input=o.entry.input, expected=None,
              outputs=tuple(c.output for c in o.calls), entry_ids=(o.entry.id,))
        for o in members
    ]
    return TypeResult("repeatability", scorer.name, tuple(items))


def _score_bias_groups(members: Sequence[EntryOutputs], scorer: Scorer,
                       fields: tuple[str, ...] | None) -> TypeResult:
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
    verdicts = dict(zip(ok, scorer.among_outputs(
        [OutputGroup(tuple(o.entry.input for o in g),
                     tuple(compared_part(o.first.output, fields) for o in g))
         for g in ok.values()]), strict=True))
    items = [
        _item(g[0].entry.bias_id, verdicts.get(key),
              _errors((o.entry.id, o.first.error) for o in g),
              expected_pass=all(o.entry.expected_pass for o in g),
              input=[o.entry.input for o in g], expected=None,
              outputs=tuple(o.first.output for o in g),
              entry_ids=tuple(o.entry.id for o in g))
        for key, g in scorable.items()
    ]
    return TypeResult("bias", scorer.name, tuple(items), skipped)


def _errors(labelled: Any) -> str | None:
    messages = [f"{label}: {error}" for label, error in labelled if error is not None]
    return "; ".join(messages) or None


def _item(item_id: str, verdict: Verdict | None, error: str | None, **fields: Any) -> ItemResult:
    if verdict is None:  # the item could not be scored because a call raised
        return ItemResult(item_id, passed=False, error=error, **fields)
    return ItemResult(item_id, passed=verdict.passed and verdict.error is None,
                      similarity=verdict.similarity, error=verdict.error,
                      judge_reply=verdict.reply, invalid_judgement=verdict.invalid,
                      score=verdict.score, rationale=verdict.rationale, **fields)
