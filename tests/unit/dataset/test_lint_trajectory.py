"""Lint of ``expected_trajectory``: each malformed expectation named by file, pointer, what
is wrong and the fix; rule E (no tool both expected and forbidden); a valid one kept on the
entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalkit.dataset import lint_dataset, load_dataset
from tests.support.builders import entry, write_dataset

EXAMPLE = ('write expected_trajectory as e.g. {"tool_calls": [{"name": "lookup", "arguments": '
           '{"city": "Rome"}}], "order": "in_order"}')


@pytest.mark.parametrize(("trajectory", "pointer", "message", "fix"), [
    ([], "/expected_trajectory", "expected_trajectory must be an object, found an array",
     EXAMPLE),
    ({}, "/expected_trajectory", "expected_trajectory names neither tool_calls nor "
     "forbidden_tools", 'add "tool_calls" (an empty list: no tool may be called) or '
     '"forbidden_tools", e.g. {"tool_calls": [{"name": "lookup", "arguments": {"city": '
     '"Rome"}}], "order": "in_order"}'),
    ({"tool_calls": [], "tools": []}, "/expected_trajectory",
     "expected_trajectory has unknown key(s) 'tools'", "use only tool_calls, order, "
     "forbidden_tools"),
    ({"tool_calls": "lookup"}, "/expected_trajectory/tool_calls",
     "tool_calls must be an array, found a string", EXAMPLE),
    ({"tool_calls": [{"arguments": {}}]}, "/expected_trajectory/tool_calls/0/name",
     "required field is missing", 'add "name"'),
    ({"tool_calls": [{"name": "a", "args": {}}]}, "/expected_trajectory/tool_calls/0",
     "a tool call has unknown key(s) 'args'", "use only name, arguments"),
    ({"tool_calls": [{"name": ""}]}, "/expected_trajectory/tool_calls/0/name",
     "a tool call's name is empty", "write the tool's name"),
    ({"tool_calls": [{"name": "a", "arguments": ["Rome"]}]},
     "/expected_trajectory/tool_calls/0/arguments",
     "a tool call's arguments must be an object, found an array", EXAMPLE),
    ({"tool_calls": [], "order": "strict"}, "/expected_trajectory/order",
     "order 'strict' is not one of exact, in_order, any_order",
     "use exact (these calls, in order, no other), in_order (in order, others allowed) or "
     "any_order"),
    ({"forbidden_tools": ["a", "a"]}, "/expected_trajectory/forbidden_tools",
     "forbidden_tools lists a tool twice", "list each tool once"),
    ({"forbidden_tools": [7]}, "/expected_trajectory/forbidden_tools/0",
     "a forbidden tool must be a string, found a number", EXAMPLE),
    ({"tool_calls": [{"name": "a"}, {"name": "cancel"}], "forbidden_tools": ["cancel"]},
     "/expected_trajectory/tool_calls/1/name",
     "rule E: tool 'cancel' is both expected and forbidden",
     "remove it from tool_calls or from forbidden_tools"),
])
def test_a_malformed_expectation_is_named_with_its_fix(
        tmp_path: Path, trajectory: Any, pointer: str, message: str, fix: str) -> None:
    dataset = write_dataset(tmp_path / "ds", {"agent/e1": entry(
        "functional", expected_trajectory=trajectory)})
    report = lint_dataset(dataset)
    assert [(Path(v.file).as_posix().endswith("ds/data/agent/e1.json"), v.pointer, v.message,
             v.fix) for v in report.violations] == [(True, pointer, message, fix)]


def test_a_valid_expectation_is_kept_on_the_entry(tmp_path: Path) -> None:
    trajectory = {"tool_calls": [{"name": "lookup", "arguments": {"city": {"name": "Rome"}}},
                                 {"name": "book"}],
                  "order": "any_order", "forbidden_tools": ["cancel"]}
    dataset = write_dataset(tmp_path / "ds", {"e1": entry("functional",
                                                          expected_trajectory=trajectory),
                                              "e2": entry("functional")})
    entries = {e.id: e for e in load_dataset(dataset).entries}
    assert entries["e1"].expected_trajectory == trajectory
    assert entries["e1"].extra == {}
    assert entries["e2"].expected_trajectory is None
