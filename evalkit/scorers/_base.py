"""The scorer interface every scoring method implements.

A scorer answers two questions, both in batches so that a method with a per-call cost
(embedding, an LLM judge) can amortise or parallelise it over the whole run:

* :meth:`Scorer.against_expected` — does each output match its entry's ``expected_output``?
* :meth:`Scorer.among_outputs` — do the outputs of each group agree with each other?
  (the repeats of a repeatability entry, or the variants of a bias group)

Each answer is a binary :class:`ScorerVerdict`, with what the method measured on the way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalkit.records import JudgeCall


@dataclass(frozen=True)
class Case:
    """One output to score against its entry's expected output."""

    input: Any
    output: Any
    expected: Any
    trace: Any = None
    """MLflow's ``Trace`` of the call, for a scorer that reads traces (else ``None``)."""
    expected_trajectory: Mapping[str, Any] | None = None
    """The entry's ``expected_trajectory``: the tool calls it expects."""


@dataclass(frozen=True)
class OutputGroup:
    """Outputs that should agree, each with the input that produced it."""

    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    traces: tuple[Any, ...] = ()
    """MLflow's ``Trace`` of each output's call, for a scorer that reads traces (else
    empty)."""


@dataclass(frozen=True)
class ScorerVerdict:
    """A binary score (``passed`` is score 1) with what the scorer measured on the way."""

    passed: bool
    similarity: float | None = None
    """Cosine against expected, or the average pairwise cosine among outputs."""
    reply: str | None = None
    """An LLM judge's raw reply."""
    invalid: bool = False
    """The judge's reply was not exactly ``0`` or ``1``: scored 0, never a pass."""
    error: str | None = None
    """Scoring itself failed (a judge unreachable after its retries): scored 0."""
    score: float | None = None
    """What a scorer function measured, when it returned one."""
    rationale: str | None = None
    """A scorer function's reason for its verdict."""
    votes: tuple[bool, ...] | None = None
    """An LLM judge asked more than once (``JUDGE_REPEATS``): each judgement in call order,
    ``True`` for a ``1`` (an invalid reply votes ``False``); ``None`` when asked once."""
    judge_messages: tuple[Mapping[str, str], ...] | None = None
    """The messages an LLM judge was sent about the unit (the same for each of its calls)."""
    judge_calls: tuple[JudgeCall, ...] = ()
    """Each call an LLM judge made about the unit, in call order."""


class Scorer(Protocol):
    """A scoring method (``exact``, ``semantic_similarity``, ``llm_judge``, a function)."""

    name: str
    reads_traces: bool
    """Whether its cases and groups need the calls' traces (built only for such a scorer)."""

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        """One verdict per case."""
        ...

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        """One verdict per group of two or more outputs."""
        ...
