"""The scorer of each test type of a run (:class:`Scorers`): built once from the constants,
with one embedding model for every similarity scorer and one judge endpoint (and its counters)
for every judged type; and what they add to the run's params and metrics."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalkit.config import EvalConfig, is_mlflow_scorer, prompt_use
from evalkit.records import ScoredRun, TypeNames, names
from evalkit.scorers import (
    ChatEndpoint,
    Embedder,
    EndpointStats,
    ExactScorer,
    FunctionScorer,
    JudgeOptions,
    JudgePrompt,
    LLMJudgeScorer,
    MlflowScorer,
    RetryPolicy,
    Scorer,
    SemanticSimilarityScorer,
    TrajectoryScorer,
)
from evalkit.stats import logged_latency


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
            if is_mlflow_scorer(name):
                scorers.by_type[test_type] = MlflowScorer(name)
            elif callable(name):
                scorers.by_type[test_type] = FunctionScorer(name)
            elif name == "semantic_similarity":
                embedder = embedder or Embedder()
                scorers.by_type[test_type] = SemanticSimilarityScorer(
                    config.similarity_threshold_for(test_type), embedder)
            elif name == "llm_judge":
                scorers.by_type[test_type] = scorers._judge_scorer(config, test_type)
            elif name == "trajectory":
                scorers.by_type[test_type] = TrajectoryScorer()
            else:
                scorers.by_type[test_type] = ExactScorer()
        return scorers

    def scorer_params(self) -> dict[str, str]:
        """Per type the scorer's name and, for a scorer function or an MLflow scorer, its
        source digest."""
        params = {}
        for test_type, scorer in self.by_type.items():
            n = TypeNames.of(test_type)
            params[n.scorer] = scorer.name
            if isinstance(scorer, FunctionScorer | MlflowScorer):
                params[n.scorer_digest] = scorer.digest
        return params

    def judge_params(self) -> dict[str, str]:
        """The judge's settings as MLflow params (never the key)."""
        if self.judge is None:
            return {}
        scorer = next(s for s in self.by_type.values() if isinstance(s, LLMJudgeScorer))
        combined = hashlib.sha256("".join(
            f"{t}:{p.digest}" for t, p in sorted(self.judge_prompts.items())).encode())
        settings = {
            "model": self.judge.model, "base_url": self.judge.base_url, "temperature": "0",
            "max_tokens": str(scorer.options.max_tokens), "seed": str(scorer.options.seed),
            "timeout": repr(self.judge.timeout),
            "max_attempts": str(self.judge.retry.max_attempts),
            "max_wait": repr(self.judge.retry.max_total_seconds),
            "invalid_is_error": str(scorer.options.invalid_is_error),
            "system_in_user": str(scorer.options.system_in_user),
            "prompt_digest": combined.hexdigest()}
        if scorer.options.repeats > 1:  # asked once, the params stay as they always were
            settings["repeats"] = str(scorer.options.repeats)
        return {**{names.judge_param(k): v for k, v in settings.items()},
                **{TypeNames.of(t).judge_prompt: f"{p.source} sha256:{p.digest[:16]}"
                   for t, p in sorted(self.judge_prompts.items())}}

    def reset_judge_stats(self) -> None:
        """Start the judge's counters afresh (one endpoint serves every run of a series)."""
        if self.judge is not None:
            self.judge.stats = EndpointStats()
        for scorer in self._judge_scorers():
            scorer.repeated_invalid = 0

    def judge_retries(self) -> int:
        return 0 if self.judge is None else self.judge.stats.retries

    def judge_metrics(self, scored: ScoredRun) -> dict[str, float]:
        """Judge calls, retries, failures, invalid replies and latency percentiles; every
        call of a unit judged ``JUDGE_REPEATS`` times counts."""
        if self.judge is None:
            return {}
        stats = self.judge.stats
        invalid = sum(i.invalid_judgement for t in scored.types for i in t.items
                      if i.judge_votes is None)  # one judgement: the item's reply
        invalid += sum(s.repeated_invalid for s in self._judge_scorers())
        return {names.JUDGE_CALLS_METRIC: stats.calls + stats.failures,
                names.JUDGE_RETRIES_METRIC: stats.retries,
                names.JUDGE_FAILURES_METRIC: stats.failures, names.JUDGE_INVALID_METRIC: invalid,
                **{names.judge_latency_metric(k): logged_latency(v)
                   for k, v in stats.percentiles().items()}}

    def _judge_scorers(self) -> list[LLMJudgeScorer]:
        return [s for s in self.by_type.values() if isinstance(s, LLMJudgeScorer)]

    def _judge_scorer(self, config: EvalConfig, test_type: str) -> LLMJudgeScorer:
        settings = config.judge_settings()
        if self.judge is None:
            self.judge = ChatEndpoint(settings.model, timeout=settings.timeout, retry=RetryPolicy(
                max_attempts=settings.max_attempts, max_total_seconds=settings.max_wait))
        use = prompt_use(test_type)
        path = settings.prompts.get(test_type, settings.prompts.get(use))
        prompt = JudgePrompt.load(use, path)
        self.judge_prompts[test_type] = prompt
        return LLMJudgeScorer(self.judge, prompt, JudgeOptions(
            max_tokens=settings.max_tokens, seed=settings.seed,
            concurrency=config.max_concurrency, invalid_is_error=settings.invalid_is_error,
            system_in_user=settings.system_in_user, repeats=settings.repeats))
