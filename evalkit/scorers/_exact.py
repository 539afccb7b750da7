"""``exact``: normalised equality with ``expected_output``.

Normalisation makes equality robust to formatting, not to meaning:

* strings: Unicode NFKC, case-folded, surrounding whitespace stripped, inner runs of whitespace
  collapsed to one space;
* numbers compare by value (``1 == 1.0``), booleans only with booleans;
* objects: every key of the expected object must match; keys the output has beyond those are
  ignored, so a golden entry pins only the fields it cares about;
* an output string holding JSON is parsed when the expected value is not a string, so an LLM
  that answers ``'{"category": "billing"}'`` is compared as an object.

Among outputs (repeatability, bias) the outputs agree when all are equal after normalisation.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from typing import Any

from evalkit.scorers._base import Case, OutputGroup, ScorerVerdict


def normalise(value: Any) -> Any:
    """The canonical form ``exact`` compares."""
    if isinstance(value, str):
        return " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    return value


def matches(output: Any, expected: Any) -> bool:
    """Whether ``output`` equals ``expected`` under normalisation (expected keys only)."""
    if isinstance(output, str) and not isinstance(expected, str):
        try:
            output = json.loads(output)
        # A string is foreign data: nested past the recursion limit, or an integer past
        # Python's digit limit, it is simply not the expected value.
        except (ValueError, RecursionError):
            return False
    try:
        return _covers(normalise(output), normalise(expected))
    except RecursionError:
        return False


def _covers(output: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(output, dict) and all(
            key in output and _covers(output[key], value) for key, value in expected.items())
    if isinstance(expected, list):
        return (isinstance(output, list) and len(output) == len(expected)
                and all(_covers(o, e) for o, e in zip(output, expected, strict=True)))
    # bool is a subclass of int: True must not equal 1.0.
    return type(output) is type(expected) and output == expected


def _same(a: Any, b: Any) -> bool:
    return _covers(a, b) and _covers(b, a)


class ExactScorer:
    """Normalised equality; see the module docstring for the rules."""

    name = "exact"
    reads_traces = False

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return [ScorerVerdict(matches(case.output, case.expected)) for case in cases]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        verdicts = []
        for group in groups:
            first = normalise(group.outputs[0])
            verdicts.append(ScorerVerdict(all(_same(normalise(o), first)
                                              for o in group.outputs[1:])))
        return verdicts
