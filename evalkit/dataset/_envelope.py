"""The entry envelope: the fields every entry has (``envelope.schema.json``), the test types,
rules A-D, and violations phrased for dataset authors."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from evalkit.dataset._violations import Collector, json_pointer, json_type

ENVELOPE: dict[str, Any] = json.loads(
    resources.files("evalkit.dataset").joinpath("envelope.schema.json").read_text(encoding="utf-8")
)
TEST_TYPES: tuple[str, ...] = tuple(ENVELOPE["properties"]["test_types"]["items"]["enum"])
REPEATABILITY = "repeatability"
"""Scored by comparing an entry's ``REPEAT_COUNT`` outputs with each other."""
BIAS = "bias"
"""Scored by comparing the outputs of a bias group's variants with each other."""
# Types scored by comparing outputs with each other rather than with expected_output (rules B, C).
COMPARATIVE_TYPES = frozenset({BIAS, REPEATABILITY})
PROMPT_USES = ("expected", REPEATABILITY, BIAS)
"""How an LLM judge scores a type: against ``expected_output``, or comparatively."""
ENVELOPE_FIELDS = frozenset(ENVELOPE["properties"])


BiasKey = tuple[str, str | int]


@dataclass(frozen=True)
class Entry:
    """One golden-dataset entry, as the component and the scorers see it."""

    id: str
    path: Path
    test_types: tuple[str, ...]
    input: str | Mapping[str, Any]
    expected_output: Any
    mock_fixtures: Mapping[str, Any] = field(default_factory=dict)
    group: str | None = None
    bias_group: str | int | None = None
    human_review: bool = False
    human_instructions: str | None = None
    expected_pass: bool = True
    expected_trajectory: Mapping[str, Any] | None = None
    """The tool calls the component must make (and must not), for the ``trajectory``
    scorer."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Project-specific fields beyond the envelope."""
    bias_id: str = ""
    """The bias group as results and reports name it ("" without a group): see
    :func:`with_bias_ids`."""

    @property
    def bias_key(self) -> BiasKey | None:
        """The bias group this entry is a variant of (``1`` and ``"1"`` are different)."""
        return None if self.bias_group is None else (type(self.bias_group).__name__,
                                                     self.bias_group)


def with_bias_ids(entries: Sequence[Entry]) -> tuple[Entry, ...]:
    """The entries with :attr:`Entry.bias_id` set: the group as written (``7``, ``register``),
    unless two groups of the dataset would print alike (``7`` and ``"7"``); then every string
    group is shown as its JSON text (``"7"``, ``"register"``), which no integer shares.

    The id is a join key across runs, so it changes only for datasets that have such a clash.
    """
    groups = {e.bias_key for e in entries if e.bias_key is not None}
    clash = len({str(group) for _, group in groups}) < len(groups)
    return tuple(replace(e, bias_id=json.dumps(e.bias_group, ensure_ascii=False)
                         if clash and isinstance(e.bias_group, str) else str(e.bias_group))
                 if e.bias_group is not None else e for e in entries)


def explain(err: ValidationError) -> tuple[str, str, str]:
    """Pointer, message and fix for an envelope violation, phrased for dataset authors."""
    path = list(err.absolute_path)
    if err.validator == "required":
        missing = _missing_field(err)
        return location(err), "required field is missing", (
            f"add \"{missing}\"" + (" (null is allowed)" if missing == "expected_output" else ""))
    field_name = str(path[0]) if path else ""
    problem = {"test_types": _test_types_problem,
               TRAJECTORY: _trajectory_problem}.get(field_name, lambda _: None)(err)
    if problem is not None:
        message, fix = problem
        return json_pointer(path), message, fix
    if field_name == "group" and err.validator == "pattern":
        return json_pointer(path), f"group {err.instance!r} contains a comma", (
            "remove the comma: --groups splits its value on commas")
    if err.validator == "minLength":
        return json_pointer(path), "must not be empty", f"write a non-empty {field_name}"
    expected_types = err.schema.get("type") if err.validator == "type" else None
    if expected_types is not None:
        wanted = " or ".join(expected_types) if isinstance(expected_types, list) else expected_types
        return json_pointer(path), f"must be {wanted}, found {json_type(err.instance)}", (
            f"make {field_name or 'the entry'} {wanted}")
    return json_pointer(path), err.message, "correct the value as the message says"


def _test_types_problem(err: ValidationError) -> tuple[str, str] | None:
    """Message and fix for what the envelope says of ``test_types`` itself (None: a violation
    phrased as for any field)."""
    if err.validator == "enum":
        return f"unknown test type {err.instance!r}", "use one of: " + ", ".join(TEST_TYPES)
    if err.validator == "minItems":
        return "test_types is empty", "list at least one test type"
    if err.validator == "uniqueItems":
        return "test_types lists a type twice", "list each type once"
    return None


TRAJECTORY = "expected_trajectory"
_TRAJECTORY_EXAMPLE = ('e.g. {"tool_calls": [{"name": "lookup", "arguments": {"city": "Rome"}}], '
                       '"order": "in_order"}')


def _trajectory_problem(err: ValidationError) -> tuple[str, str] | None:
    """Message and fix for what the envelope says of ``expected_trajectory``."""
    parts = list(err.absolute_path)
    if parts[-1] in ("name", "arguments"):
        where = f"a tool call's {parts[-1]}"
    elif isinstance(parts[-1], int):
        where = "a tool call" if parts[-2] == "tool_calls" else "a forbidden tool"
    else:
        where = str(parts[-1])
    if err.validator == "anyOf":
        return ("expected_trajectory names neither tool_calls nor forbidden_tools",
                'add "tool_calls" (an empty list: no tool may be called) or "forbidden_tools", '
                + _TRAJECTORY_EXAMPLE)
    if err.validator == "additionalProperties":
        unknown = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        keys = ", ".join(err.schema.get("properties", {}))
        return (f"{where} has unknown key(s) {', '.join(map(repr, unknown))}",
                f"use only {keys}")
    if err.validator == "enum":
        return (f"order {err.instance!r} is not one of {', '.join(err.validator_value)}",
                "use exact (these calls, in order, no other), in_order (in order, others "
                "allowed) or any_order")
    if err.validator == "uniqueItems":
        return "forbidden_tools lists a tool twice", "list each tool once"
    if err.validator == "minLength":
        return f"{where} is empty", "write the tool's name"
    wanted = err.schema.get("type", "")
    return (f"{where} must be {'an' if wanted in ('object', 'array') else 'a'} {wanted}, found "
            f"{json_type(err.instance)}", f"write expected_trajectory as {_TRAJECTORY_EXAMPLE}")


@functools.cache
def _missing_field(err: ValidationError) -> str:
    present = err.instance if isinstance(err.instance, dict) else {}
    return next(f for f in err.validator_value if f not in present)


def location(err: ValidationError) -> str:
    """JSON pointer of a violation; a missing required field points at the field itself."""
    if err.validator == "required":
        return json_pointer([*err.absolute_path, _missing_field(err)])
    return json_pointer(err.absolute_path)


def envelope_validator() -> Any:
    return jsonschema.Draft202012Validator(ENVELOPE)


def check_rules(file: Path, doc: dict[str, Any], found: Collector) -> None:
    """Rules A-D (spelled out in docs/datasets.md), enforced whatever the dataset's own schema
    allows."""
    listed = doc.get("test_types")
    types = [t for t in listed if t in TEST_TYPES] if isinstance(listed, list) else []
    has_bias = BIAS in types
    if has_bias and doc.get("bias_group") is None:
        found.add(file, "/bias_group", "rule A: a bias entry needs a bias_group",
                  "add \"bias_group\" naming the group of variants this entry belongs to")
    if isinstance(listed, list) and not has_bias and "bias_group" in doc:
        found.add(file, "/bias_group", "rule A: bias_group is only allowed on bias entries",
                  "remove bias_group, or add \"bias\" to test_types")
    # Rules B and C depend on the whole list: skip them while the envelope reports a bad type.
    if isinstance(listed, list) and types and len(types) == len(listed) \
            and "expected_output" in doc:
        scored_against_expected = [t for t in types if t not in COMPARATIVE_TYPES]
        if scored_against_expected and doc["expected_output"] is None:
            found.add(file, "/expected_output",
                      f"rule B: {', '.join(scored_against_expected)} needs a non-null "
                      "expected_output", "give the output this entry should produce")
        if not scored_against_expected and doc["expected_output"] is not None:
            found.add(file, "/expected_output",
                      "rule C: an entry that is only bias/repeatability must have "
                      "expected_output null", "set \"expected_output\": null (outputs are "
                      "compared with each other, not with an expected value)")
    _check_trajectory(file, doc.get(TRAJECTORY), found)
    if doc.get("human_review") is True and doc.get("human_instructions") is None:
        found.add(file, "/human_instructions",
                  "rule D: human_review is true but human_instructions is missing",
                  "add \"human_instructions\" telling the reviewer what to check")


def _check_trajectory(file: Path, trajectory: Any, found: Collector) -> None:
    """Rule E: no tool is both expected and forbidden."""
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("tool_calls"), list) \
            or not isinstance(trajectory.get("forbidden_tools"), list):
        return
    forbidden = set(trajectory["forbidden_tools"])
    for index, call in enumerate(trajectory["tool_calls"]):
        if isinstance(call, dict) and call.get("name") in forbidden:
            found.add(file, f"/{TRAJECTORY}/tool_calls/{index}/name",
                      f"rule E: tool {call['name']!r} is both expected and forbidden",
                      "remove it from tool_calls or from forbidden_tools")
