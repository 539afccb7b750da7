"""Rows of a ``.csv`` (with a header row) or ``.jsonl`` file, each with the line it starts on,
and the problems found on the way: what a label file and a dataset import both read.

A problem names the line (0: the whole file), the field if there is one, what is wrong and the
fix; readers keep going after one, so that a file's every problem is named at once.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.dataset._json import BadJson, hazards, parse_json
from evalkit.dataset._violations import display, json_type, printable

SUFFIXES = (".csv", ".jsonl")
Rows = Iterator[tuple[int, dict[str, Any]]]
"""A row's first line, and its values by column name."""


@dataclass(frozen=True)
class RowProblem:
    """What is wrong with one line of a file, and the fix; line 0 is the whole file."""

    line: int
    field: str | None
    message: str

    def render(self, path: Path | str) -> str:
        where = f"{display(path)}:{self.line}" if self.line else display(path)
        field = f" {self.field}:" if self.field else ""
        return printable(f"{where}:{field} {self.message}")


class Problems(list[RowProblem]):
    def add(self, line: int, field: str | None, message: str) -> None:
        self.append(RowProblem(line, field, message))


def read_text(path: Path, problems: Problems) -> str | None:
    """The text of a ``.csv`` or ``.jsonl`` file, or None after naming why it cannot be read."""
    if path.suffix.lower() not in SUFFIXES:
        problems.add(0, None, f"{path.name!r} is neither .csv nor .jsonl: name it .csv (with a "
                     "header row) or .jsonl (one JSON object per line)")
        return None
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as err:
        problems.add(0, None, f"cannot be read ({err.strerror or err}): check the path")
    except UnicodeDecodeError as err:
        problems.add(0, None, f"not UTF-8 ({err.reason} at byte {err.start}): save it as UTF-8")
    return None


def rows(path: Path, text: str, problems: Problems,
         usable_header: Callable[[list[str]], list[str] | None]) -> Rows:
    """The rows of ``text`` read as ``path``'s suffix says; ``usable_header`` takes a CSV
    header's column names (trimmed) and returns the names to use, or None to read no row."""
    if path.suffix.lower() == ".csv":
        return csv_rows(text, problems, usable_header)
    return jsonl_rows(text, problems)


def csv_rows(text: str, problems: Problems,
             usable_header: Callable[[list[str]], list[str] | None]) -> Rows:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    line = 1  # where the row being read starts: a quoted value may span lines
    try:
        header = next(reader, None)
        columns = usable_header([name.strip() for name in header]) if header else None
        if columns is None:
            return
        line = reader.line_num + 1
        for cells in reader:
            if any(cell.strip() for cell in cells[len(columns):]):
                problems.add(line, None, f"{len(cells)} cells under {len(columns)} columns: quote "
                             "a value that holds a comma, or name the extra column")
            if any(cell.strip() for cell in cells):  # a spreadsheet's empty rows are no rows
                yield line, dict(zip(columns, cells, strict=False))
            line = reader.line_num + 1
    except csv.Error as err:
        problems.add(line, None, f"not valid CSV ({err}): quote a value that holds a comma, "
                     "quote or line break, and double the quotes inside it")


def jsonl_rows(text: str, problems: Problems) -> Rows:
    for line, content in enumerate(text.split("\n"), start=1):
        if not content.strip():
            continue
        try:
            doc = parse_json(content.encode())
        except BadJson as err:  # each line is parsed alone: its "line 1" is this line
            reason = str(err).replace(" at line 1 column ", " at column ")
            problems.add(line, None, f"not valid JSON ({reason}): {err.fix}")
            continue
        if not isinstance(doc, dict):
            problems.add(line, None, f"a line must be a JSON object, found {json_type(doc)}: "
                         "write one object per line")
            continue
        unsafe = list(hazards(doc))
        for hazard in unsafe:
            problems.add(line, str(hazard.path[0]), f"{hazard.message}: {hazard.fix}")
        if not unsafe:
            yield line, doc
