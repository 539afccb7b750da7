"""The results of a run as plain records: what scoring produces, what MLflow stores and reads
back, and what statistics and reports take as input.

They serialise to plain JSON (the ``evaluation.json`` artifact); reports are rendered from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from evalkit.records._usage import TokenUsage


@dataclass(frozen=True)
class Threshold:
    """What a test type must reach for the run to pass."""

    min_accuracy: float
    min_f1: float | None = None


class MetricPoint(NamedTuple):
    """One value of a metric, as logged to MLflow (``step`` orders a stepped series)."""

    key: str
    value: float
    step: int = 0


def as_text(value: Any) -> str:
    """The text of an output: strings as they are, other JSON values in canonical form."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def as_object(output: Any) -> dict[str, Any] | None:
    """An object output as a dict (a JSON string holding an object counts), else ``None``."""
    value = output
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class JudgeCall:
    """One call to the LLM judge: its reply (as given, valid or not), or the error the call
    failed with, and the tokens it used when the endpoint reported them."""

    reply: str | None
    error: str | None = None
    usage: TokenUsage | None = None

    def to_json(self) -> dict[str, Any]:
        return {"reply": self.reply, "error": self.error,
                "usage": None if self.usage is None else self.usage.to_json()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> JudgeCall:
        usage = doc.get("usage")
        return cls(doc.get("reply"), doc.get("error"),
                   None if usage is None else TokenUsage.from_json(usage))


@dataclass(frozen=True)
class ItemResult:
    """One scored item: an entry, or a bias group."""

    id: str
    passed: bool
    """The scorer's verdict (score 1); errors are ``False``."""
    expected_pass: bool
    input: Any
    expected: Any
    outputs: tuple[Any, ...]
    entry_ids: tuple[str, ...]
    similarity: float | None = None
    error: str | None = None
    judge_reply: str | None = None
    """The LLM judge's raw reply, when an LLM judged the item; with ``JUDGE_REPEATS`` > 1
    every reply in call order, joined by ``" / "``."""
    invalid_judgement: bool = False
    """The judge replied something other than exactly 0 or 1 (scored 0); with
    ``JUDGE_REPEATS`` > 1, at least one of its replies was."""
    score: float | None = None
    """What a scorer function measured, when it returned one."""
    rationale: str | None = None
    """A scorer function's reason for its verdict."""
    judge_votes: tuple[bool, ...] | None = None
    """With ``JUDGE_REPEATS`` > 1, the judge's votes on the item in call order: ``True`` for
    a ``1``, ``False`` for a ``0`` or an invalid reply; ``passed`` is their strict majority
    (a tie fails). Fewer than ``JUDGE_REPEATS`` when a judge call failed (the item is then an
    error). ``None`` when the judge was asked once, or another scorer scored the item."""
    judge_messages: tuple[Mapping[str, str], ...] | None = None
    """The chat messages sent to the judge about the item (secrets redacted), the same for
    each of its calls; ``None`` when no judge was asked (or the run predates them)."""
    judge_calls: tuple[JudgeCall, ...] = ()
    """Every call to the judge about the item, in call order."""

    @property
    def correct(self) -> bool:
        """The verdict counted agrees with the annotation (every entry is expected to pass
        unless annotated ``expected_pass: false``)."""
        return self.counted_pass == self.expected_pass

    @property
    def counted_pass(self) -> bool:
        """The verdict the metrics count: the scorer's, or, for an item that could not be
        scored (a failed call, a judge that gave no verdict, compared fields no output has),
        the opposite of its annotation: its failure is no evidence of the failure an
        ``expected_pass: false`` entry expects, so it counts against accuracy either way."""
        return self.passed if self.error is None else not self.expected_pass


@dataclass(frozen=True)
class SkippedGroup:
    bias_group: str | int
    entry_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class TypeResult:
    test_type: str
    scorer: str
    items: tuple[ItemResult, ...]
    skipped: tuple[SkippedGroup, ...] = ()

    @property
    def per_entry(self) -> bool:
        """Every item is one entry (not a bias group): what people's labels can name."""
        return not self.skipped and all(len(i.entry_ids) == 1 for i in self.items)


@dataclass(frozen=True)
class HumanReviewItem:
    id: str
    input: Any
    instructions: str
    output: Any
    error: str | None


@dataclass(frozen=True)
class ScoredRun:
    """Every result of a run; the content of the ``evaluation.json`` artifact."""

    types: tuple[TypeResult, ...]
    human_review: tuple[HumanReviewItem, ...] = ()
    calls: int = 0
    component_errors: int = 0

    def type_result(self, test_type: str) -> TypeResult:
        return next(t for t in self.types if t.test_type == test_type)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "calls": self.calls,
            "component_errors": self.component_errors,
            "types": [{
                "test_type": t.test_type, "scorer": t.scorer,
                "items": [_item_json(i) for i in t.items],
                "skipped": [{"bias_group": s.bias_group, "entry_ids": list(s.entry_ids),
                             "reason": s.reason} for s in t.skipped],
            } for t in self.types],
            "human_review": [{"id": h.id, "input": h.input, "instructions": h.instructions,
                              "output": h.output, "error": h.error} for h in self.human_review],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ScoredRun:
        if doc.get("format") != FORMAT:
            raise ValueError(f"unsupported evaluation format {doc.get('format')!r}")
        return cls(
            types=tuple(TypeResult(
                t["test_type"], t["scorer"],
                tuple(_item_from_json(i) for i in t["items"]),
                tuple(SkippedGroup(s["bias_group"], tuple(s["entry_ids"]), s["reason"])
                      for s in t["skipped"]),
            ) for t in doc["types"]),
            human_review=tuple(HumanReviewItem(**h) for h in doc["human_review"]),
            calls=doc["calls"],
            component_errors=doc["component_errors"],
        )


FORMAT = "evalkit.evaluation/1"


def _item_from_json(doc: Mapping[str, Any]) -> ItemResult:
    votes = doc.get("judge_votes")  # absent from documents of a judge asked once
    messages = doc.get("judge_messages")  # absent from documents of runs without a judge
    return ItemResult(**{**doc, "outputs": tuple(doc["outputs"]),
                         "entry_ids": tuple(doc["entry_ids"]),
                         "judge_votes": None if votes is None else tuple(votes),
                         "judge_messages": None if messages is None else tuple(messages),
                         "judge_calls": tuple(JudgeCall.from_json(c)
                                              for c in doc.get("judge_calls", ()))})


def _item_json(item: ItemResult) -> dict[str, Any]:
    doc = {"id": item.id, "passed": item.passed, "expected_pass": item.expected_pass,
           "input": item.input, "expected": item.expected, "outputs": list(item.outputs),
           "entry_ids": list(item.entry_ids), "similarity": item.similarity,
           "error": item.error, "judge_reply": item.judge_reply,
           "invalid_judgement": item.invalid_judgement, "score": item.score,
           "rationale": item.rationale}
    if item.judge_votes is not None:  # only a judge asked more than once has votes
        doc["judge_votes"] = list(item.judge_votes)
    if item.judge_messages is not None:  # only a judged item has them
        doc["judge_messages"] = [dict(m) for m in item.judge_messages]
        doc["judge_calls"] = [c.to_json() for c in item.judge_calls]
    return doc
