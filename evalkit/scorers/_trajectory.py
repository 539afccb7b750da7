"""``trajectory``: the tool calls of a call's trace against the entry's ``expected_trajectory``.

The tool calls are the ``TOOL`` spans of the call's trace (MLflow's ``Trace``), in the order
they started: the span's name is the tool, its inputs the arguments. The entry says what they
must be (``docs/datasets.md``, "Expected trajectory")::

    "expected_trajectory": {"tool_calls": [{"name": "lookup", "arguments": {"city": "Rome"}}],
                            "order": "in_order", "forbidden_tools": ["delete_booking"]}

* ``tool_calls``: the calls expected, each a tool ``name`` and optionally ``arguments``
  matched by subset (:func:`arguments_match`). An empty list: the agent must call no tool.
  Absent: any calls, as long as none is forbidden.
* ``order`` (default ``in_order``): ``exact``, these calls and no other, in this order;
  ``in_order``, these calls in this order, other calls allowed before, between and after;
  ``any_order``, each expected call matched by a call of its own, in any order, other calls
  allowed (a maximum bipartite matching, so that a loosely specified call never takes the
  one a stricter one needed).
* ``forbidden_tools``: tools that must not be called at all, in every order.

The verdict's rationale names the first mismatch: the first forbidden call, else the first
expected call that could not be matched, with the call that was made in its place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching

from evalkit.scorers._base import Case, OutputGroup, ScorerVerdict

ORDERS = ("exact", "in_order", "any_order")
DEFAULT_ORDER = "in_order"


@dataclass(frozen=True)
class ToolCall:
    """One tool call: the tool's name and its arguments (the ``TOOL`` span's inputs)."""

    name: str
    arguments: Any = None

    def __str__(self) -> str:
        return f"{self.name!r} with {self.arguments!r}"


def tool_calls(trace: Any) -> list[ToolCall]:
    """The ``TOOL`` spans of an MLflow ``Trace``, in the order they started."""
    from mlflow.entities import SpanType

    spans = sorted(trace.search_spans(span_type=SpanType.TOOL), key=lambda s: s.start_time_ns)
    return [ToolCall(span.name, span.inputs) for span in spans]


def arguments_match(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` holds ``expected``: an object holds every key of the expected one,
    each value matched by this same rule (other keys allowed); an array has the expected
    length and matches element by element; any other value is equal, as JSON values are
    (``true`` is not ``1``)."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and arguments_match(value, actual[key])
            for key, value in expected.items())
    if isinstance(expected, list | tuple):
        return isinstance(actual, list | tuple) and len(expected) == len(actual) and all(
            arguments_match(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    return bool(expected == actual)


def _matches(expected: Mapping[str, Any], call: ToolCall) -> bool:
    return expected["name"] == call.name and (
        "arguments" not in expected or arguments_match(expected["arguments"], call.arguments))


def _expected_text(expected: Mapping[str, Any], number: int) -> str:
    arguments = f" with {expected['arguments']!r}" if "arguments" in expected else ""
    return f"expected tool {expected['name']!r} #{number}{arguments}"


def _instead(expected: Mapping[str, Any], candidates: Sequence[ToolCall]) -> str:
    """What was called in the expected call's place: a call of the same tool, if any."""
    same = next((c for c in candidates if c.name == expected["name"]), None)
    return f"got {same}" if same is not None else f"got no call of {expected['name']!r}"


def check_trajectory(expectation: Mapping[str, Any], calls: Sequence[ToolCall]) -> str | None:
    """The first mismatch between ``calls`` and the expectation, or ``None`` when they
    match (see the module docstring for the rules)."""
    forbidden = set(expectation.get("forbidden_tools", ()))
    for number, call in enumerate(calls, start=1):
        if call.name in forbidden:
            return f"called forbidden tool {call} (call #{number})"
    expected = expectation.get("tool_calls")
    if expected is None:
        return None
    if not expected:
        return f"expected no tool calls; got {calls[0]} (call #1)" if calls else None
    order = expectation.get("order", DEFAULT_ORDER)
    if order == "exact":
        return _exact(expected, calls)
    if order == "in_order":
        return _in_order(expected, calls)
    return _any_order(expected, calls)


def _exact(expected: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall]) -> str | None:
    for index, wanted in enumerate(expected):
        if index >= len(calls):
            return (f"{_expected_text(wanted, index + 1)}; got no call #{index + 1} (only "
                    f"{len(calls)} made)")
        if not _matches(wanted, calls[index]):
            return f"{_expected_text(wanted, index + 1)}; got {calls[index]}"
    if len(calls) > len(expected):
        extra = len(expected)
        return (f"unexpected call #{extra + 1} {calls[extra]}: order 'exact' allows no call "
                f"beyond the {len(expected)} expected")
    return None


def _in_order(expected: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall]) -> str | None:
    # Taking the earliest matching call for each expected one in turn finds an embedding
    # whenever one exists: each expected call is matched independently of the others.
    start = 0
    for index, wanted in enumerate(expected):
        found = next((i for i in range(start, len(calls)) if _matches(wanted, calls[i])), None)
        if found is None:
            after = f" after call #{start}" if start else ""
            return f"{_expected_text(wanted, index + 1)}{after}; {_instead(wanted, calls[start:])}"
        start = found + 1
    return None


def _any_order(expected: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall]) -> str | None:
    fits = np.array([[_matches(w, c) for c in calls] for w in expected], dtype=np.int8)
    pairing = maximum_bipartite_matching(csr_array(fits.reshape(len(expected), len(calls))),
                                         perm_type="column")
    unmatched = [i for i, call in enumerate(pairing) if call == -1]
    if not unmatched:
        return None
    used = {int(c) for c in pairing if c != -1}
    wanted = expected[unmatched[0]]
    free = [c for i, c in enumerate(calls) if i not in used]
    return f"{_expected_text(wanted, unmatched[0] + 1)} (in any order); {_instead(wanted, free)}"


class TrajectoryScorer:
    """The tool calls of each case's trace against its entry's ``expected_trajectory``."""

    name = "trajectory"
    reads_traces = True

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return [self._verdict(case) for case in cases]

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        # The configuration refuses trajectory for repeatability and bias before any call.
        raise NotImplementedError("trajectory scores against an entry's expected_trajectory")

    def _verdict(self, case: Case) -> ScorerVerdict:
        if case.expected_trajectory is None:
            return ScorerVerdict(False, error="the entry has no expected_trajectory")
        calls = tool_calls(case.trace)
        mismatch = check_trajectory(case.expected_trajectory, calls)
        if mismatch is not None:
            return ScorerVerdict(False, rationale=mismatch)
        made = ", ".join(c.name for c in calls) or "no tool"
        return ScorerVerdict(True, rationale=f"called {made}: as expected "
                             f"({case.expected_trajectory.get('order', DEFAULT_ORDER)})")
