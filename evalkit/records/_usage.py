"""Tokens an LLM call used, and what they cost: kept with each component call and each judge
call, summed into the run's metrics, and put on the calls' spans as MLflow expects them."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from evalkit.records import names

if TYPE_CHECKING:  # a call record holds usages: only its type is needed here
    from evalkit.records._calls import SpanRecord


@dataclass(frozen=True)
class TokenUsage:
    """Tokens one or more LLM calls of one model used."""

    input_tokens: int
    output_tokens: int
    model: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"input_tokens": self.input_tokens,
                               "output_tokens": self.output_tokens}
        if self.model is not None:
            doc["model"] = self.model
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TokenUsage:
        return cls(int(doc["input_tokens"]), int(doc["output_tokens"]), doc.get("model"))


def merged(usages: Iterable[TokenUsage]) -> tuple[TokenUsage, ...]:
    """One usage per model (``None``, no model named, included), summed, in the order each
    model first appears."""
    by_model: dict[str | None, TokenUsage] = {}
    for usage in usages:
        held = by_model.get(usage.model)
        by_model[usage.model] = usage if held is None else TokenUsage(
            held.input_tokens + usage.input_tokens, held.output_tokens + usage.output_tokens,
            usage.model)
    return tuple(by_model.values())


def usage_attribute(usages: Iterable[TokenUsage]) -> dict[str, int]:
    """MLflow's ``mlflow.chat.tokenUsage`` span attribute: every model's tokens summed."""
    given = list(usages)
    inputs = sum(u.input_tokens for u in given)
    outputs = sum(u.output_tokens for u in given)
    return {"input_tokens": inputs, "output_tokens": outputs, "total_tokens": inputs + outputs}


def usage_of(response: Any, model: str | None = None) -> TokenUsage | None:
    """The usage an LLM client's response reports, or ``None`` when it reports none.

    Reads ``response.usage`` (or ``response["usage"]``) as an OpenAI-compatible client gives
    it: ``prompt_tokens``/``completion_tokens`` (Chat Completions) or
    ``input_tokens``/``output_tokens`` (the Responses API, Anthropic), or a
    :class:`TokenUsage`. The model is ``model`` when given, else the response's ``model``."""
    usage = _field(response, "usage")
    if usage is None:
        return None
    if isinstance(usage, TokenUsage):
        return usage if model is None else TokenUsage(usage.input_tokens, usage.output_tokens,
                                                      model)
    inputs = _field(usage, "prompt_tokens", _field(usage, "input_tokens"))
    outputs = _field(usage, "completion_tokens", _field(usage, "output_tokens"))
    if inputs is None and outputs is None:
        return None
    named = model if model is not None else _field(response, "model")
    return checked_usage(inputs or 0, outputs or 0, named if isinstance(named, str) else None)


def checked_usage(input_tokens: Any, output_tokens: Any, model: Any) -> TokenUsage:
    """A :class:`TokenUsage` of counts that are whole numbers of at least 0 (a
    :class:`ValueError` naming the wrong one otherwise)."""
    for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number of at least 0, got {value!r}")
    if model is not None and (not isinstance(model, str) or not model):
        raise ValueError(f"model must be a non-empty string or None, got {model!r}")
    return TokenUsage(input_tokens, output_tokens, model)


def _field(value: Any, name: str, default: Any = None) -> Any:
    found = value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
    return default if found is None else found


@dataclass(frozen=True)
class TokenPrice:
    """What a model's tokens cost, in US dollars per million tokens."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float

    def cost(self, usage: TokenUsage) -> Cost:
        return Cost(usage.input_tokens * self.input_usd_per_mtok / 1e6,
                    usage.output_tokens * self.output_usd_per_mtok / 1e6)


@dataclass(frozen=True)
class Cost:
    input_usd: float
    output_usd: float

    @property
    def total_usd(self) -> float:
        return self.input_usd + self.output_usd

    def attribute(self) -> dict[str, float]:
        """MLflow's ``mlflow.llm.cost`` span attribute (US dollars)."""
        return {"input_cost": self.input_usd, "output_cost": self.output_usd,
                "total_cost": self.total_usd}


Prices = Mapping[str, TokenPrice]
"""Model name -> its price (the ``TOKEN_PRICES`` constant)."""


def cost_of(usages: Iterable[TokenUsage], prices: Prices) -> Cost | None:
    """What the usages of the priced models cost; ``None`` when none of them is priced."""
    costs = [prices[u.model].cost(u) for u in usages if u.model is not None and u.model in prices]
    if not costs:
        return None
    return Cost(sum(c.input_usd for c in costs), sum(c.output_usd for c in costs))


def prices_from_param(text: str | None) -> dict[str, TokenPrice]:
    """The price table a run logged (none when it logged none)."""
    if not text:
        return {}
    return {model: TokenPrice(float(pair[0]), float(pair[1]))
            for model, pair in json.loads(text).items()}


_USAGE_METRICS = {"tokens": names.tokens_metric("total", False), "cost_usd": names.COST_METRIC,
                  "judge_tokens": names.tokens_metric("total", True),
                  "judge_cost_usd": names.JUDGE_COST_METRIC}
"""A :class:`RunUsage` figure -> the run metric that holds it."""


@dataclass(frozen=True)
class RunUsage:
    """What a run's LLM requests used, as its metrics hold it: the tokens of the component's
    calls and of the judge's, and their cost by ``TOKEN_PRICES`` (``None``: no call reported
    usage, or nothing was priced)."""

    tokens: int | None = None
    cost_usd: float | None = None
    judge_tokens: int | None = None
    judge_cost_usd: float | None = None

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, float]) -> RunUsage:
        def figure(field: str) -> float | None:
            return metrics.get(_USAGE_METRICS[field])

        def count(field: str) -> int | None:  # logged as a float
            value = figure(field)
            return None if value is None else int(value)

        return cls(count("tokens"), figure("cost_usd"), count("judge_tokens"),
                   figure("judge_cost_usd"))

    def to_metrics(self) -> dict[str, float]:
        """The figures as the run metrics :meth:`from_metrics` reads, those reported only."""
        return {key: getattr(self, field) for field, key in _USAGE_METRICS.items()
                if getattr(self, field) is not None}

    @classmethod
    def total(cls, usages: Iterable[RunUsage]) -> RunUsage:
        """The usage of several runs (a series' replicates) summed, figure by figure."""
        given = list(usages)

        def summed(figure: str) -> Any:
            values = [getattr(u, figure) for u in given if getattr(u, figure) is not None]
            return sum(values) if values else None

        return cls(*(summed(f.name) for f in fields(cls)))

    @property
    def reported(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def text(self) -> str:
        """``12,345 tokens, $0.0123; judge 3,210 tokens, $0.0040``: what was reported."""
        def part(tokens: int | None, cost: float | None) -> str:
            return ", ".join([*([f"{tokens:,} tokens"] if tokens is not None else []),
                              *([usd(cost)] if cost is not None else [])])

        own, judge = part(self.tokens, self.cost_usd), part(self.judge_tokens,
                                                            self.judge_cost_usd)
        return "; ".join([*([own] if own else []), *([f"judge {judge}"] if judge else [])])

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def usd(value: float) -> str:
    """US dollars, a cost under a dollar to two significant digits: ``$12.35``, ``$0.50``,
    ``$0.012``, ``$0.000042`` (never ``$0.00`` for a cost that is not zero)."""
    if value == 0 or abs(value) >= 1:
        return f"${value:,.2f}"
    decimals = max(2, 1 - math.floor(math.log10(abs(value))))
    return f"${value:.{decimals}f}"


def usage_of_spans(spans: Sequence[SpanRecord]) -> tuple[TokenUsage, ...]:
    """The tokens a call's own spans carry (an autologged LLM request sets them), one usage
    per model, summed. A span under another span that carries usage is not counted again:
    integrations that roll usage up onto a parent span (an agent's) would count it twice,
    and MLflow's Token Usage panel skips them the same way."""
    counted: list[TokenUsage] = []
    carries = [_carries_usage(s) for s in spans]
    for index, span in enumerate(spans):
        if carries[index] and not _under_usage(spans, carries, span.parent):
            usage = span.attributes[names.SPAN_TOKEN_USAGE]
            model = span.attributes.get(names.SPAN_LLM_MODEL)
            counted.append(TokenUsage(_count(usage, "input_tokens"),
                                      _count(usage, "output_tokens"),
                                      model if isinstance(model, str) and model else None))
    return merged(counted)


def spans_carry_usage(spans: Sequence[SpanRecord]) -> bool:
    """Whether a call's own spans carry tokens: then :func:`usage_of_spans` is its usage,
    and what the component reported is not counted again."""
    return any(_carries_usage(s) for s in spans)


def _carries_usage(span: SpanRecord) -> bool:
    return isinstance(span.attributes.get(names.SPAN_TOKEN_USAGE), Mapping)


def _under_usage(spans: Sequence[SpanRecord], carries: Sequence[bool],
                 parent: int | None) -> bool:
    while parent is not None:
        if carries[parent]:
            return True
        parent = spans[parent].parent
    return False


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
