"""Golden datasets from what users have: rows (of a CSV or JSONL file, or records read from
MLflow) mapped to entries, one file each, with a schema inferred from the rows or given.

The import is all-or-nothing: the dataset is written into a folder beside the target, evalkit's
own lint runs on it, and only a clean folder is renamed into place. Every problem is named by
the source row it came from (``FILE:LINE: column: what is wrong. Fix: ...``), lint's included.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evalkit._errors import ConfigError, ImportInvalid
from evalkit.dataset._json import BadJson, hazards, parse_json
from evalkit.dataset._lint import DATA_DIR, README_FILE, SCHEMA_FILE, lint_dataset
from evalkit.dataset._rows import Problems, Rows, read_text, rows
from evalkit.dataset._violations import display, json_type

_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")
_JSON_TYPES = ((type(None), "null"), (bool, "boolean"), (int, "integer"), (float, "number"),
               (str, "string"), (list, "array"), (dict, "object"))


@dataclass(frozen=True)
class ColumnMapping:
    """Which source column gives which entry field."""

    inputs: tuple[str, ...]
    """One column: the input is its value; several: an object of them by column name."""
    expected: str
    id: str | None = None
    """Without it, an entry's id is derived from its input (stable whatever the row order)."""
    group: str | None = None
    test_types_column: str | None = None
    """Each row's test types (comma-separated text, or a JSON array); else ``test_types``."""
    test_types: tuple[str, ...] = ("functional",)
    json_columns: frozenset[str] = frozenset()
    """Columns whose text holds JSON, parsed (a CSV cell is otherwise a string)."""
    tool_calls: str | None = None
    """The column of each entry's expected tool calls (``expected_trajectory.tool_calls``)."""

    @property
    def columns(self) -> tuple[str, ...]:
        optional = (self.id, self.group, self.test_types_column, self.tool_calls)
        return (*self.inputs, self.expected, *(c for c in optional if c is not None))


@dataclass(frozen=True)
class Imported:
    """What an import wrote."""

    target: Path
    entries: int
    schema: dict[str, Any] | None
    """The inferred schema, None when given or kept (``add``)."""
    ignored_columns: tuple[str, ...]


def read_source_rows(path: Path, mapping: ColumnMapping, problems: Problems) -> list[
        tuple[int, dict[str, Any]]]:
    """The rows of a ``.csv`` or ``.jsonl`` file; a CSV header must name every mapped column."""
    text = read_text(path, problems)
    if text is None:
        return []
    return list(rows(path, text, problems, lambda columns: _header(columns, mapping, problems)))


def _header(columns: list[str], mapping: ColumnMapping, problems: Problems) -> list[str] | None:
    before = len(problems)
    for name in sorted({name for name in columns if columns.count(name) > 1}):
        problems.add(1, None, f"column {name!r} appears twice: rename one")
    for name in dict.fromkeys(c for c in mapping.columns if c not in columns):
        close = difflib.get_close_matches(name, columns, n=1)
        problems.add(1, None, f"no column {name!r} in the header: " + (
            f"did you mean {close[0]!r}?" if close else f"the columns are {', '.join(columns)}"))
    return columns if len(problems) == before else None


def import_rows(source: str, found: Rows | Iterable[tuple[int, Mapping[str, Any]]],
                problems: Problems, target: Path, mapping: ColumnMapping, *,
                schema: Path | None = None, add: bool = False) -> Imported:
    """Write the dataset of ``found`` (rows read from ``source``, with the problems met reading
    them) to ``target``, or raise :class:`ImportInvalid` naming every problem, having written
    nothing. ``add``: into the existing dataset at ``target``, its schema and README kept."""
    check_target(target, schema=schema, add=add)
    found = list(found)
    documents = _documents(found, mapping, problems)
    ignored = _ignored({key for _, row in found for key in row}, set(mapping.columns))
    if not documents:  # nothing to stage: the file, its header or every row is unusable
        if not problems:
            problems.add(0, None, "holds no rows. Fix: write one row per entry")
        raise ImportInvalid(source, [p.render(source) for p in problems])
    made = [folder for folder in target.absolute().parents if not folder.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _beside(target, "importing")
    try:
        inferred = _stage_frame(staging, source, target, documents, mapping, schema, add)
        _stage_entries(staging, target, documents, mapping, problems)
        named = [(p.line, p.render(source)) for p in problems]
        # lint the rows that were read well too, so that one error names every bad row
        named += _from_lint(lint_dataset(staging).violations, staging, target, documents,
                            mapping, source, schema)
        if named:
            raise ImportInvalid(source, [text for _, text in sorted(named,
                                                                     key=lambda n: n[0])])
        _swap(staging, target, add)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in made:  # deepest first: the folders made for --to, none of the user's
            folder.rmdir()
        raise
    return Imported(target, len(documents), inferred, ignored)


def _ignored(seen: set[str], mapped: set[str]) -> tuple[str, ...]:
    """The columns no option mapped, an object's keys (``inputs.question``) counted with the
    object, and an object one of whose keys is mapped left out."""
    parents = {column.split(".", 1)[0] for column in mapped}
    return tuple(sorted(c for c in seen if c not in mapped | parents
                        and ("." not in c or c.split(".", 1)[0] not in seen)))


def check_target(target: Path, *, schema: Path | None, add: bool) -> None:
    """Refuse what would overwrite a dataset, or add to none."""
    exists = target.is_dir() and any(target.iterdir())
    if add and not exists:
        raise ConfigError(f"--add: {display(target)} holds no dataset to add to; leave --add "
                          "out to create it")
    if add and schema is not None:
        raise ConfigError("--schema with --add: the dataset keeps its own schema; edit "
                          f"{display(target / SCHEMA_FILE)} instead")
    if target.exists() and not exists and not target.is_dir():
        raise ConfigError(f"--to {display(target)} is a file: name a folder")
    if exists and not add:
        raise ConfigError(f"--to {display(target)} exists and is not empty: nothing is "
                          "written over a dataset; pass --add to add the rows to it, or "
                          "choose another folder")
    if schema is not None and not schema.is_file():
        raise ConfigError(f"--schema {display(schema)}: no such file")


def _documents(found: list[tuple[int, Mapping[str, Any]]], mapping: ColumnMapping,
               problems: Problems) -> dict[str, tuple[int, dict[str, Any]]]:
    """Each row's entry by id, with its line."""
    documents: dict[str, tuple[int, dict[str, Any]]] = {}
    for line, row in found:
        before = len(problems)
        values = {column: _value(line, row, column, mapping, problems)
                  for column in mapping.columns}
        entry_input = _input(line, values, mapping, problems)
        test_types = _test_types(line, values, mapping, problems)
        entry_id = _entry_id(line, values, entry_input, mapping, problems)
        if len(problems) != before or entry_id is None:
            continue
        if entry_id in documents:
            first = documents[entry_id][0]
            problems.add(line, mapping.id, f"id {entry_id!r} is also on line {first}. Fix: keep "
                         "one row per id" if mapping.id else f"the same input as line {first}. "
                         "Fix: remove the duplicate row, or map an --id column")
            continue
        expected = values[mapping.expected]
        if expected == "" and mapping.expected not in mapping.json_columns:
            expected = None  # an empty cell: no expected output (rule B names it if one is due)
        document: dict[str, Any] = {"$schema": _schema_reference(entry_id),
                                    "test_types": test_types, "input": entry_input,
                                    "expected_output": expected}
        if mapping.group is not None and values[mapping.group] not in (None, ""):
            document["group"] = values[mapping.group]
        if mapping.tool_calls is not None:  # lint names a value that is no list of calls
            document["expected_trajectory"] = {"tool_calls": values[mapping.tool_calls]}
        documents[entry_id] = (line, document)
    return documents


def _value(line: int, row: Mapping[str, Any], column: str, mapping: ColumnMapping,
           problems: Problems) -> Any:
    if column not in row:  # a JSONL key absent, a CSV row cut short
        problems.add(line, column, "missing. Fix: give this row a value for the column")
        return None
    value = row[column]
    if column not in mapping.json_columns or not isinstance(value, str):
        return value
    try:
        parsed = parse_json(value.encode())
    except BadJson as err:
        problems.add(line, column, f"not valid JSON ({err}). Fix: write the value as JSON "
                     "(text in double quotes), or leave the column out of --parse-json")
        return None
    for hazard in hazards(parsed):
        problems.add(line, column, f"{hazard.message}. Fix: {hazard.fix}")
    return parsed


def _input(line: int, values: Mapping[str, Any], mapping: ColumnMapping,
           problems: Problems) -> Any:
    parts = {column: values[column] for column in mapping.inputs}
    if len(parts) == 1:
        column, value = next(iter(parts.items()))
        if value is not None and not isinstance(value, str | dict):
            problems.add(line, column, f"an input must be text or an object, found "
                         f"{json_type(value)}. Fix: quote it as text")
        elif value is not None and not (value.strip() if isinstance(value, str) else value):
            problems.add(line, column, "empty input. Fix: write the input, or remove the row")
        return value
    if all(v is not None and not (v.strip() if isinstance(v, str) else v)
           for v in parts.values()):
        problems.add(line, ",".join(parts), "empty input: every input column is empty. Fix: "
                     "write the input, or remove the row")
    return parts


def _test_types(line: int, values: Mapping[str, Any], mapping: ColumnMapping,
                problems: Problems) -> list[Any]:
    column = mapping.test_types_column
    if column is None:
        return list(mapping.test_types)
    value = values[column]
    listed = ([t.strip() for t in value.split(",") if t.strip()] if isinstance(value, str)
              else value if isinstance(value, list) else None)
    if value is not None and not listed:
        problems.add(line, column, "no test type. Fix: list the row's test types, e.g. "
                     "functional,smoke")
    return listed or []


def _entry_id(line: int, values: Mapping[str, Any], entry_input: Any, mapping: ColumnMapping,
              problems: Problems) -> str | None:
    if mapping.id is None:
        canonical = json.dumps(entry_input, sort_keys=True, ensure_ascii=False)
        return "item-" + hashlib.sha256(canonical.encode()).hexdigest()[:10]
    value = values[mapping.id]
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if value is None:
        return None
    if not isinstance(value, str) or not _ID.match(value.strip()) or len(value) > 200 \
            or ".." in value:
        problems.add(line, mapping.id, f"{value!r} cannot be an entry id (it names the entry's "
                     "file). Fix: use letters, digits, '.', '_', '-' and '/' between folders")
        return None
    return value.strip()


def _schema_reference(entry_id: str) -> str:
    return "../" * len(PurePosixPath(entry_id).parts) + SCHEMA_FILE


def _stage_frame(staging: Path, source: str, target: Path,
                 documents: Mapping[str, tuple[int, dict[str, Any]]], mapping: ColumnMapping,
                 schema: Path | None, add: bool) -> dict[str, Any] | None:
    """Begin the dataset in ``staging``: a copy of the one at ``target`` (``add``), or its
    schema (given or inferred) and README; return the schema if it was inferred."""
    inferred = None
    if add:
        shutil.copytree(target, staging, dirs_exist_ok=True)
    else:
        if schema is not None:
            shutil.copyfile(schema, staging / SCHEMA_FILE)
        else:
            inferred = infer_schema(target.name, source, [d for _, d in documents.values()])
            (staging / SCHEMA_FILE).write_text(json.dumps(inferred, indent=2) + "\n",
                                               encoding="utf-8")
        (staging / README_FILE).write_text(_readme(target.name, source, mapping),
                                           encoding="utf-8")
    return inferred


def _stage_entries(staging: Path, target: Path,
                   documents: Mapping[str, tuple[int, dict[str, Any]]], mapping: ColumnMapping,
                   problems: Problems) -> None:
    """Write each entry's file into ``staging``; an id the dataset at ``target`` has already
    is a problem of its row."""
    for entry_id, (line, document) in documents.items():
        file = staging / DATA_DIR / f"{entry_id}.json"
        if file.exists():
            problems.add(line, mapping.id, f"id {entry_id!r} exists in {display(target)} "
                         "already. Fix: give the row another id, or remove it")
            continue
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                        encoding="utf-8")


def infer_schema(name: str, source: str, documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The dataset schema of ``documents``: the envelope, with the JSON types seen per field
    (no enum inferred: a value not seen yet is not wrong)."""
    inputs = [d["input"] for d in documents]
    expected = [d["expected_output"] for d in documents]
    input_schema = _types(inputs)
    if all(isinstance(v, dict) for v in inputs) and inputs:
        keys = list(dict.fromkeys(k for v in inputs for k in v))
        input_schema = {"type": "object", "required": keys, "properties": {
            k: _types([v[k] for v in inputs if k in v]) for k in keys}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{name} golden-dataset entry",
        "description": f"Inferred by `evalkit dataset import` from {source}: the JSON types seen "
                       "per field. Narrow it as you learn what the component must answer; "
                       "`evalkit lint` checks evalkit's entry envelope on top of it.",
        "type": "object",
        "properties": {
            "input": input_schema,
            "expected_output": {**_types(expected), "$comment": (
                "the types seen in the source; narrow it, e.g. {\"enum\": [\"billing\", "
                "\"shipping\"]} or {\"type\": \"object\", \"required\": [\"category\"]}")},
        },
    }


def _types(values: list[Any]) -> dict[str, Any]:
    seen = {next(name for kind, name in _JSON_TYPES if isinstance(v, kind)) for v in values}
    if "number" in seen:
        seen.discard("integer")  # JSON Schema's number includes the integers
    ordered = [name for _, name in _JSON_TYPES if name in seen]
    return {"type": ordered[0] if len(ordered) == 1 else ordered} if ordered else {}


def _readme(name: str, source: str, mapping: ColumnMapping) -> str:
    types = (f"from the column `{mapping.test_types_column}`" if mapping.test_types_column
             else ", ".join(mapping.test_types))
    return (f"# {name}\n\nImported by `evalkit dataset import` from `{source}`: input from "
            + ", ".join(f"`{c}`" for c in mapping.inputs)
            + f", expected_output from `{mapping.expected}`, ids "
            + (f"from `{mapping.id}`" if mapping.id else "derived from the input")
            + (f", groups from `{mapping.group}`" if mapping.group else "")
            + (f", expected tool calls from `{mapping.tool_calls}`" if mapping.tool_calls
               else "")
            + f"; test types {types}.\n\n## How it was made\n\nSay where the rows come from, "
              "who reviewed them and how the dataset changes.\n")


def _from_lint(violations: Iterable[Any], staging: Path, target: Path,
               documents: Mapping[str, tuple[int, dict[str, Any]]], mapping: ColumnMapping,
               source: str, schema: Path | None) -> list[tuple[int, str]]:
    """Lint's violations, each named by the source row (and column) it came from; line 0 for
    the schema given with --schema, or the dataset added to."""
    rows_of = {display(staging / DATA_DIR / f"{i}.json"): line
               for i, (line, _) in documents.items()}
    columns = {"input": ",".join(mapping.inputs), "expected_output": mapping.expected,
               "group": mapping.group, "test_types": mapping.test_types_column or "--test-types",
               "expected_trajectory": mapping.tool_calls}
    named = []
    for v in violations:
        if v.file in rows_of:
            field = v.pointer.split("/")[1] if v.pointer.count("/") else ""
            column = columns.get(field) or field or "row"
            named.append((rows_of[v.file],
                          f"{source}:{rows_of[v.file]}: {column}: {v.message}. Fix: {v.fix}"))
        else:
            where = display(schema) if schema is not None and v.file.endswith(SCHEMA_FILE) \
                else v.file.replace(display(staging), display(target))
            named.append((0, f"{where}: {v.pointer or '/'}: {v.message}. Fix: {v.fix}"))
    return named


def _swap(staging: Path, target: Path, add: bool) -> None:
    """Put the staged dataset at ``target``: a rename, so no reader sees half of it."""
    if not add:
        os.rename(staging, target)  # replaces only an empty folder
        return
    previous = _beside(target, "previous")
    os.rename(target, previous / target.name)
    os.rename(staging, target)
    shutil.rmtree(previous)


def _beside(target: Path, what: str) -> Path:
    """A new hidden folder next to ``target`` (so a rename stays on its file system), made with
    the usual permissions: the dataset folder it becomes is the user's like any other."""
    folder = target.parent / f".{target.name}.{what}-{secrets.token_hex(6)}"
    folder.mkdir()
    return folder
