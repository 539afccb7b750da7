"""Markdown building blocks that untrusted text (component outputs, dataset inputs) cannot break.

Text placed in a table cell is flattened to one line, shortened, and has every character that
could end the cell, open a code span, start HTML or form a link escaped. Text shown in full goes
into a fenced block whose fence is longer than any backtick run inside it. In both, control
characters other than line breaks and tabs (NUL, BEL, ESC, the rest of C0, DEL and C1) are
written as visible ``\\xNN`` escapes: raw, they would drive a terminal showing the report, and a
NUL makes git treat the report as a binary file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from evalkit.records import as_text

_CELL_ESCAPES = {"\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[",
                 "]": "\\]", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CELL_PATTERN = re.compile("|".join(re.escape(c) for c in _CELL_ESCAPES))
ELLIPSIS = "…"
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _visible(text: str) -> str:
    """``text`` with every control character but newline, carriage return and tab escaped."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def cell(value: Any, limit: int = 80) -> str:
    """A value as safe single-line table-cell text of at most ``limit`` visible characters."""
    # Newlines, tabs and runs of spaces become one space.
    text = " ".join(_visible(as_text(value)).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + ELLIPSIS
    return _CELL_PATTERN.sub(lambda m: _CELL_ESCAPES[m.group()], text)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A pipe table; cells must already be escaped (see :func:`cell`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def fenced(value: Any, indent: str = "", limit: int = 4000) -> str:
    """A value shown verbatim in a fenced block that its own backticks cannot close."""
    text = _visible(as_text(value))
    if len(text) > limit:
        text = text[:limit] + f"\n{ELLIPSIS} ({len(text) - limit} more characters in the " \
                              "raw-results artifact)"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = "\n".join(indent + line for line in text.splitlines() or [""])
    return f"{indent}{fence}text\n{body}\n{indent}{fence}"
