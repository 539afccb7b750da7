"""The scorer interface every scoring method implements.

A scorer answers two questions, both in batches so that a method with a per-call cost
(embedding, an LLM judge) can amortise it over the whole run:

* :meth:`Scorer.against_expected` — does each output match its entry's ``expected_output``?
* :meth:`Scorer.among_outputs` — do the outputs of each group agree with each other?
  (the repeats of a repeatability entry, or the variants of a bias group)

Each answer is a binary :class:`Verdict`; a method that measures a similarity reports it too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Verdict:
    """A binary score (``passed`` is score 1) with what the scorer measured on the way."""

    passed: bool
    similarity: float | None = None
    """Cosine against expected, or the average pairwise cosine among outputs."""


class Scorer(Protocol):
    """A scoring method (``exact``, ``semantic_similarity``, ...)."""

    name: str

    def against_expected(self, pairs: Sequence[tuple[Any, Any]]) -> list[Verdict]:
        """One verdict per ``(output, expected_output)`` pair."""
        ...

    def among_outputs(self, groups: Sequence[Sequence[Any]]) -> list[Verdict]:
        """One verdict per group of two or more outputs."""
        ...


def as_text(value: Any) -> str:
    """The text of an output: strings as they are, other JSON values in canonical form."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
