"""People's labels read from a file (``evalkit label RUN_ID --from FILE``): CSV or JSONL.

The import is all-or-nothing, so the whole file is checked before a label is written: every bad
row is named (line, field, what is wrong and the fix) in one :class:`LabelFileInvalid`.
"""

from __future__ import annotations

import csv
import difflib
import io
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit._errors import EvalkitError, ExitStatus
from evalkit.dataset._json import BadJson, hazards, parse_json
from evalkit.dataset._violations import display, json_type, printable
from evalkit.records import HumanLabel, label_verdict

REQUIRED_FIELDS = ("entry_id", "type", "verdict")
FIELDS = (*REQUIRED_FIELDS, "reviewer", "comment")
SUFFIXES = (".csv", ".jsonl")
MAX_LISTED = 50
"""Problems listed in the error's message; the rest are counted (all are in ``problems``)."""

_WANTED = {"entry_id": "the id of the labelled entry", "type": "the test type labelled"}
_Rows = Iterator[tuple[int, dict[str, Any]]]  # a row's line, and its values by field name


@dataclass(frozen=True)
class LabelProblem:
    """What is wrong with one line of a label file, and the fix; line 0 is the whole file."""

    line: int
    field: str | None
    message: str

    def render(self, path: Path | str) -> str:
        where = f"{display(path)}:{self.line}" if self.line else display(path)
        field = f" {self.field}:" if self.field else ""
        return printable(f"{where}:{field} {self.message}")


class LabelFileInvalid(EvalkitError):
    """A label file with at least one problem: nothing of it was imported."""

    exit_status = ExitStatus.USAGE

    def __init__(self, path: Path, problems: tuple[LabelProblem, ...]) -> None:
        self.path, self.problems = path, problems
        listed = [problem.render(path) for problem in problems[:MAX_LISTED]]
        if len(problems) > MAX_LISTED:
            listed.append(f"... and {len(problems) - MAX_LISTED} more")
        heading = f"{display(path)}: {len(problems)} problem(s); nothing was imported"
        super().__init__("\n".join([heading, *listed]))


class _Problems(list[LabelProblem]):
    def add(self, line: int, field: str | None, message: str) -> None:
        self.append(LabelProblem(line, field, message))


def read_label_file(path: Path, known: Mapping[str, Collection[str]],
                    default_reviewer: str) -> tuple[HumanLabel, ...]:
    """The labels of the ``.csv`` or ``.jsonl`` file at ``path`` in file order, or
    :class:`LabelFileInvalid` naming every problem; ``known``: each test type's entry ids."""
    problems = _Problems()
    labels: list[HumanLabel] = []
    first_line: dict[tuple[str | None, str | None, str], int] = {}
    text = _read_text(path, problems)
    read_rows = _csv_rows if path.suffix.lower() == ".csv" else _jsonl_rows
    for line, values in read_rows(text, problems) if text is not None else ():
        entry_id = _text(line, values, "entry_id", problems)
        test_type = _text(line, values, "type", problems)
        if test_type is not None and test_type not in known:
            problems.add(line, "type", _unknown(f"{test_type!r} is not a known test type",
                                                test_type, known, f"use one of "
                                                f"{', '.join(map(repr, sorted(known)))}"))
        elif test_type is not None and entry_id is not None and entry_id not in known[test_type]:
            problems.add(line, "entry_id", _unknown(
                f"no {test_type!r} entry has the id {entry_id!r}", entry_id, known[test_type],
                f"use the id of a {test_type!r} entry"))
        verdict = label_verdict(given := _given(values, "verdict"))
        if verdict is None:
            what = "empty or missing" if given is None else f"{given!r} is neither pass nor fail"
            problems.add(line, "verdict", f"{what}: write pass or fail")
        reviewer = _text(line, values, "reviewer", problems) or default_reviewer
        comment = _text(line, values, "comment", problems)
        first = first_line.setdefault((entry_id, test_type, reviewer), line)
        if entry_id and test_type and first != line:
            problems.add(line, None, f"{entry_id!r} of {test_type!r} by {reviewer!r} is already "
                         f"labelled on line {first}: keep one")
        if entry_id and test_type and verdict is not None:  # returned only if no row has a problem
            labels.append(HumanLabel(entry_id, test_type, verdict, reviewer, comment=comment))
    if text is not None and not labels and not problems:
        problems.add(0, None, "holds no labels: write one row per label")
    if problems:
        raise LabelFileInvalid(path, tuple(problems))
    return tuple(labels)


def _read_text(path: Path, problems: _Problems) -> str | None:
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


def _csv_rows(text: str, problems: _Problems) -> _Rows:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    line = 1  # where the row being read starts: a quoted value may span lines
    try:
        header = next(reader, None)
        columns = [name.strip().lower() for name in header or ()]
        if header is None or not _usable_header(columns, problems):
            return
        line = reader.line_num + 1
        for cells in reader:
            if any(cell.strip() for cell in cells[len(columns):]):
                problems.add(line, None, f"{len(cells)} cells under {len(columns)} columns: quote "
                             "a value that holds a comma, or name the extra column")
            if any(cell.strip() for cell in cells):  # a spreadsheet's empty rows are no labels
                yield line, dict(zip(columns, cells, strict=False))
            line = reader.line_num + 1
    except csv.Error as err:
        problems.add(line, None, f"not valid CSV ({err}): quote a value that holds a comma, "
                     "quote or line break, and double the quotes inside it")


def _usable_header(columns: list[str], problems: _Problems) -> bool:
    for name in sorted({name for name in columns if columns.count(name) > 1}):
        problems.add(1, None, f"column {name!r} appears twice: keep one")
    for name in (name for name in columns if name not in FIELDS):
        problems.add(1, None, _unknown(f"unknown column {name!r}", name, FIELDS,
                                       f"the columns are {', '.join(FIELDS)}"))
    missing = [name for name in REQUIRED_FIELDS if name not in columns]
    if missing:
        problems.add(1, None, f"the header lacks {', '.join(missing)}: the first line must name "
                     f"the columns, e.g. {','.join(FIELDS)}")
    return not missing and len(set(columns)) == len(columns)


def _jsonl_rows(text: str, problems: _Problems) -> _Rows:
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
        for key in (key for key in doc if key not in FIELDS):
            problems.add(line, None, _unknown(f"unknown key {key!r}", key, FIELDS,
                                              f"the keys are {', '.join(FIELDS)}"))
        if not unsafe:
            yield line, doc


def _given(values: Mapping[str, Any], field: str) -> Any:
    """The field's value, trimmed if it is text; None if it is missing or empty."""
    value = values.get(field)
    return value.strip() or None if isinstance(value, str) else value


def _text(line: int, values: Mapping[str, Any], field: str, problems: _Problems) -> str | None:
    """The field's text; None if there is none (reported if the field is required)."""
    value = _given(values, field)
    if field == "entry_id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None and field in _WANTED:
        problems.add(line, field, f"empty or missing: write {_WANTED[field]}")
    elif value is not None and not isinstance(value, str):
        problems.add(line, field, f"must be a string, found {json_type(value)}: quote it")
        return None
    return value


def _unknown(what: str, name: str, choices: Iterable[str], otherwise: str) -> str:
    """``what``, then the closest of ``choices`` to ``name`` if one is close, else ``otherwise``."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f"{what}: did you mean {close[0]!r}?" if close else f"{what}: {otherwise}"
