"""People's labels read from a file (``evalkit label RUN_ID --from FILE``): CSV or JSONL.

The import is all-or-nothing, so the whole file is checked before a label is written: every bad
row is named (line, field, what is wrong and the fix) in one :class:`LabelFileInvalid`. A
reviewer or comment quoting a secret is redacted as it is read, so the store, the artifacts and
the reports downstream never see it.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from evalkit._errors import LabelFileInvalid
from evalkit._secrets import Redactor
from evalkit.dataset._rows import Problems, RowProblem, read_text, rows
from evalkit.dataset._violations import display, json_type
from evalkit.records import HumanLabel, label_verdict

REQUIRED_FIELDS = ("entry_id", "type", "verdict")
FIELDS = (*REQUIRED_FIELDS, "reviewer", "comment")
MAX_SUGGESTED = 5
"""Unknown entry ids given the closest known id ("did you mean"); each suggestion compares the
id with every entry's, so a file of stale ids would take minutes: the rest are counted."""

_WANTED = {"entry_id": "the id of the labelled entry", "type": "the test type labelled"}



def read_label_file(path: Path, known: Mapping[str, Collection[str]],
                    default_reviewer: str) -> tuple[HumanLabel, ...]:
    """The labels of the ``.csv`` or ``.jsonl`` file at ``path`` in file order, or
    :class:`LabelFileInvalid` naming every problem; ``known``: each test type's entry ids.
    Reviewers and comments come back with secrets redacted."""
    redact = Redactor.from_environment().text
    problems = Problems()
    labels: list[HumanLabel] = []
    first_line: dict[tuple[str | None, str | None, str], int] = {}
    entry_ids = {test_type: set(ids) for test_type, ids in known.items()}
    unknown_ids = 0
    text = read_text(path, problems)
    found = rows(path, text, problems, lambda columns: _label_columns(columns, problems)) \
        if text is not None else iter(())
    for line, values in found:
        _check_keys(line, values, problems)
        entry_id = _text(line, values, "entry_id", problems)
        test_type = _text(line, values, "type", problems)
        if test_type is not None and test_type not in known:
            problems.add(line, "type", _unknown(f"{test_type!r} is not a known test type",
                                                test_type, known, f"use one of "
                                                f"{', '.join(map(repr, sorted(known)))}"))
        elif test_type is not None and entry_id is not None \
                and entry_id not in entry_ids[test_type]:
            unknown_ids += 1
            what, fix = (f"no {test_type!r} entry has the id {entry_id!r}",
                         f"use the id of a {test_type!r} entry")
            problems.add(line, "entry_id", _unknown(what, entry_id, known[test_type], fix)
                         if unknown_ids <= MAX_SUGGESTED else f"{what}: {fix}")
        verdict = _verdict(line, values, problems)
        reviewer = redact(_text(line, values, "reviewer", problems) or default_reviewer)
        comment = _text(line, values, "comment", problems)
        comment = None if comment is None else redact(comment)
        first = first_line.setdefault((entry_id, test_type, reviewer), line)
        if entry_id and test_type and first != line:
            problems.add(line, None, f"{entry_id!r} of {test_type!r} by {reviewer!r} is already "
                         f"labelled on line {first}: keep one")
        if entry_id and test_type and verdict is not None:  # returned only if no row has a problem
            labels.append(HumanLabel(entry_id, test_type, verdict, reviewer, comment=comment))
    if text is not None and not labels and not problems:
        problems.add(0, None, "holds no labels: write one row per label")
    if unknown_ids > MAX_SUGGESTED:  # first: the likeliest cause when ids went stale
        problems.insert(0, RowProblem(0, None, (
            f"{unknown_ids} rows name an entry id the dataset does not have (the closest id "
            f"is suggested for the first {MAX_SUGGESTED} only): if the entries were renamed or "
            "the labels were written for another dataset, write the labels again against this "
            "one's ids")))
    if problems:
        raise LabelFileInvalid(path, display(path), tuple(problems))
    return tuple(labels)


def _label_columns(columns: list[str], problems: Problems) -> list[str] | None:
    columns = [name.lower() for name in columns]
    for name in sorted({name for name in columns if columns.count(name) > 1}):
        problems.add(1, None, f"column {name!r} appears twice: keep one")
    for name in (name for name in columns if name not in FIELDS):
        problems.add(1, None, _unknown(f"unknown column {name!r}", name, FIELDS,
                                       f"the columns are {', '.join(FIELDS)}"))
    missing = [name for name in REQUIRED_FIELDS if name not in columns]
    if missing:
        problems.add(1, None, f"the header lacks {', '.join(missing)}: the first line must name "
                     f"the columns, e.g. {','.join(FIELDS)}")
    return columns if not missing and len(set(columns)) == len(columns) else None


def _check_keys(line: int, values: Mapping[str, Any], problems: Problems) -> None:
    """Every key of the row is one of the fields (a CSV header is checked)."""
    for key in (key for key in values if key not in FIELDS):
        problems.add(line, None, _unknown(f"unknown key {key!r}", key, FIELDS,
                                          f"the keys are {', '.join(FIELDS)}"))


def _verdict(line: int, values: Mapping[str, Any], problems: Problems) -> bool | None:
    """The row's verdict, True for pass; None if it has none (reported)."""
    verdict = label_verdict(given := _given(values, "verdict"))
    if verdict is None:
        what = "empty or missing" if given is None else f"{given!r} is neither pass nor fail"
        problems.add(line, "verdict", f"{what}: write pass or fail")
    return verdict


def _given(values: Mapping[str, Any], field: str) -> Any:
    """The field's value, trimmed if it is text; None if it is missing or empty."""
    value = values.get(field)
    return value.strip() or None if isinstance(value, str) else value


def _text(line: int, values: Mapping[str, Any], field: str, problems: Problems) -> str | None:
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
