"""Strict JSON for dataset files: UTF-8, no duplicate keys, no NaN or Infinity, and nothing that
would break a later step (a nesting too deep to walk, a number that overflows to infinity, a
string that cannot be written back as UTF-8)."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.dataset._violations import Collector, json_pointer

MAX_DEPTH = 100
"""Arrays and objects nested deeper than this are refused: validation, scoring and the JSON
artifacts all walk values recursively, and real entries are nowhere near this deep."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_FIX_SYNTAX = "repair the JSON syntax"
_FIX_DEPTH = f"flatten the structure: evalkit accepts at most {MAX_DEPTH} nested levels"


class BadJson(ValueError):
    """The bytes are not strict JSON; ``fix`` says what to do about it."""

    def __init__(self, message: str, fix: str = _FIX_SYNTAX) -> None:
        super().__init__(message)
        self.fix = fix


@dataclass(frozen=True)
class Hazard:
    """A value that parses but must not enter a run, at ``path`` inside the document."""

    path: tuple[str | int, ...]
    message: str
    fix: str


class _DuplicateKey(ValueError):
    pass


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _parse_int(digits: str) -> int:
    limit = sys.get_int_max_str_digits()  # 0: no limit
    if limit and len(digits.lstrip("-")) > limit:
        raise BadJson(f"an integer of {len(digits.lstrip('-'))} digits is longer than Python "
                      f"reads ({limit} digits at most)", "write the number as a string")
    return int(digits)


def parse_json(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity; raise :class:`BadJson`."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise BadJson(f"not UTF-8 ({err.reason} at byte {err.start})",
                      "save the file as UTF-8") from None
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates,
                          parse_constant=_reject_constant, parse_int=_parse_int)
    except BadJson:
        raise
    except json.JSONDecodeError as err:
        raise BadJson(f"{err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:  # the decoder recurses once per level and hit Python's limit
        raise BadJson(f"nested too deeply to parse (more than {MAX_DEPTH} levels)",
                      _FIX_DEPTH) from None
    except ValueError as err:  # a duplicate key, NaN or Infinity
        raise BadJson(str(err)) from None


def hazards(doc: Any) -> Iterator[Hazard]:
    """Every value of a parsed document that would break a later step, in document order.

    Iterative, so that a document at Python's recursion limit is walked safely; the first
    container past :data:`MAX_DEPTH` is reported once and not descended into.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    too_deep = False
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict | list) and len(path) >= MAX_DEPTH:
            if not too_deep:
                too_deep = True
                yield Hazard(path, f"nested more than {MAX_DEPTH} levels deep", _FIX_DEPTH)
            continue
        if isinstance(value, dict):
            for key in value:
                if _LONE_SURROGATE.search(key):
                    yield _surrogate((*path, key), "key", key)
            stack += reversed([(v, (*path, k)) for k, v in value.items()])
        elif isinstance(value, list):
            stack += reversed([(v, (*path, i)) for i, v in enumerate(value)])
        elif isinstance(value, float) and not math.isfinite(value):
            yield Hazard(path, "number too large: it overflows to infinity",
                         "write a number below 1.8e308, or the value as a string")
        elif isinstance(value, str) and _LONE_SURROGATE.search(value):
            yield _surrogate(path, "string", value)


def _surrogate(path: tuple[str | int, ...], what: str, text: str) -> Hazard:
    match = _LONE_SURROGATE.search(text)
    assert match is not None
    return Hazard(path, f"{what} holds an unpaired surrogate escape \\u{ord(match.group()):04x},"
                  " which is not Unicode text and cannot be written as UTF-8",
                  "remove the escape, or give both halves of the pair (e.g. \\ud83d\\ude00)")


def read_document(file: Path, raw: bytes, found: Collector) -> tuple[bool, Any]:
    """``(True, document)`` for usable JSON; else ``(False, what parsed, if anything)`` after
    reporting why not: invalid JSON, or values no later step could handle (:func:`hazards`)."""
    try:
        doc = parse_json(raw)
    except BadJson as err:
        found.add(file, "", f"not valid JSON: {err}", err.fix)
        return False, None
    bad = list(hazards(doc))
    for hazard in bad:
        found.add(file, json_pointer(hazard.path), hazard.message, hazard.fix)
    return not bad, doc
