"""Golden datasets: the folder layout, the entry envelope, and lint.

A dataset is a folder holding ``README.md``, ``dataset.schema.json`` and ``data/`` with one JSON
file per entry (sub-folders allowed). An entry's id is its path under ``data/`` without
``.json``; it is the join key of every cross-run statistic, so it never depends on file order
or content.

Lint collects *every* violation (file, JSON pointer, message, fix) before anything runs;
:func:`load_dataset` refuses to hand out entries from a dataset with any violation.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from referencing.exceptions import Unresolvable

from evalkit._errors import DatasetInvalid
from evalkit.dataset._envelope import (
    BIAS,
    ENVELOPE_FIELDS,
    BiasKey,
    Entry,
    check_rules,
    envelope_validator,
    explain,
    location,
    with_bias_ids,
)
from evalkit.dataset._files import entry_files
from evalkit.dataset._json import read_document
from evalkit.dataset._schema import load_project_schema
from evalkit.dataset._violations import Collector, LintReport, display, json_type

SCHEMA_FILE = "dataset.schema.json"
README_FILE = "README.md"
DATA_DIR = "data"


@dataclass(frozen=True)
class Dataset:
    """A linted dataset: its entries in id order and the digest that identifies its content."""

    path: Path
    entries: tuple[Entry, ...]
    digest: str
    """sha256 over the schema and every data file (paths and bytes); README excluded."""


def load_dataset(path: str | os.PathLike[str]) -> Dataset:
    """Lint the dataset at ``path`` and return its entries; raise :class:`DatasetInvalid` if any
    rule is broken."""
    linted = _lint(Path(path))
    if not linted.report.ok:
        raise DatasetInvalid(linted.report)
    return Dataset(path=Path(path), entries=linted.entries, digest=linted.digest)


def require_trajectories(dataset: Dataset, scored: Iterable[tuple[Entry, str]]) -> None:
    """Raise :class:`DatasetInvalid` naming each entry with no ``expected_trajectory`` among
    ``scored``: the entries of the types the ``trajectory`` scorer scores, with their type."""
    found = Collector()
    for entry, test_type in scored:
        if entry.expected_trajectory is None:
            found.add(entry.path, "/expected_trajectory",
                      f"{test_type} is scored by 'trajectory' but the entry has no "
                      "expected_trajectory", 'add the tool calls it must make, e.g. '
                      '"expected_trajectory": {"tool_calls": [{"name": "lookup", "arguments": '
                      '{"city": "Rome"}}]} ({"tool_calls": []}: none), or score '
                      f"{test_type} with another scorer")
    if found.violations:
        raise DatasetInvalid(LintReport(display(dataset.path), len(dataset.entries),
                                        tuple(found.violations)))


def lint_dataset(path: str | os.PathLike[str]) -> LintReport:
    """Check every file of the dataset at ``path`` and return all violations found."""
    return _lint(Path(path)).report


@dataclass
class _Linted:
    report: LintReport
    entries: tuple[Entry, ...]
    digest: str


def _lint(root: Path) -> _Linted:
    found = Collector()
    warnings: list[str] = []
    if not root.is_dir():
        found.add(root, "", "dataset folder not found", "pass the path of a dataset folder")
        return _Linted(LintReport(display(root), 0, tuple(found.violations)), (), "")
    if not (root / README_FILE).is_file():
        found.add(root / README_FILE, "", "README.md is missing",
                  "describe what the dataset is, how it was made and how to consume it")
    schema_path = root / SCHEMA_FILE
    schema_bytes, project_validator = load_project_schema(schema_path, found)
    data_root = root / DATA_DIR
    unusable = len(found.violations)
    files, strays = entry_files(data_root, root, found) if data_root.is_dir() else ([], [])
    if not files and len(found.violations) == unusable:  # else each unusable file is named
        found.add(data_root, "", "no entry files (data/**/*.json) found",
                  "add one JSON file per entry under data/")
    warnings += [f"{display(p)}: ignored, entries must be .json files" for p in strays]

    digest = hashlib.sha256()
    if schema_bytes is not None:
        _digest_file(digest, SCHEMA_FILE, schema_bytes)
    entries: list[Entry] = []
    bias_members: dict[BiasKey, list[Path]] = defaultdict(list)
    for file in files:
        raw = file.read_bytes()
        entry_id = PurePosixPath(file.relative_to(data_root).as_posix()).with_suffix("").as_posix()
        _digest_file(digest, f"{DATA_DIR}/{entry_id}.json", raw)
        doc, entry = _lint_entry(file, entry_id, raw, schema_path, project_validator, found)
        if entry is not None:
            entries.append(entry)
        key = _bias_key_of(doc)
        if key is not None:
            bias_members[key].append(file)

    for (_, group), members in bias_members.items():
        if len(members) < 2:
            found.add(members[0], "/bias_group",
                      f"bias group {group!r} has only one variant (this entry)",
                      "add at least one more entry with the same bias_group, or correct the "
                      "bias_group value")
    report = LintReport(display(root), len(files), tuple(found.violations), tuple(warnings))
    return _Linted(report, with_bias_ids(entries), digest.hexdigest())


def _digest_file(digest: Any, name: str, content: bytes) -> None:
    digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())


def _bias_group(value: Any) -> Any:
    """JSON Schema counts 1.0 as an integer, so the envelope admits it: make it the group 1."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _bias_key_of(doc: Any) -> BiasKey | None:
    """:attr:`Entry.bias_key` of a document that may still be invalid."""
    if not isinstance(doc, dict):
        return None
    types, group = doc.get("test_types"), _bias_group(doc.get("bias_group"))
    if not isinstance(types, list) or BIAS not in types:
        return None
    if isinstance(group, bool) or not isinstance(group, str | int):
        return None
    return type(group).__name__, group


def _lint_entry(file: Path, entry_id: str, raw: bytes, schema_path: Path,
                project_validator: Any, found: Collector) -> tuple[Any, Entry | None]:
    usable, doc = read_document(file, raw, found)
    if not usable:
        return None, None
    if not isinstance(doc, dict):
        found.add(file, "", f"an entry must be a JSON object, found {json_type(doc)}",
                  "wrap the entry in an object with $schema, test_types, input and "
                  "expected_output")
        return doc, None

    before = len(found.violations)
    _check_schema_reference(file, doc, schema_path, found)
    for violation in envelope_validator().iter_errors(doc):
        found.add(file, *explain(violation))
    if project_validator is not None:
        try:
            errors = list(project_validator.iter_errors(doc))
        except Unresolvable as unresolvable:  # a $ref the up-front check cannot see (nested $id)
            found.add(file, "", f"cannot be checked: dataset.schema.json has an unresolvable "
                      f"$ref ({unresolvable})", "correct the $ref in dataset.schema.json")
            errors = []
        except RecursionError:  # a $ref cycle that consumes no input, e.g. {"$ref": "#"}
            found.add(file, "", "cannot be checked: dataset.schema.json refers to itself "
                      "without end (a $ref cycle)", "break the $ref cycle in dataset.schema.json")
            errors = []
        for error in errors:
            found.add(file, location(error), f"violates dataset.schema.json: {error.message}",
                      "make the entry satisfy the dataset's own schema, or correct the schema")
    check_rules(file, doc, found)
    if len(found.violations) != before:
        return doc, None
    return doc, Entry(
        id=entry_id,
        path=file,
        test_types=tuple(doc["test_types"]),
        input=doc["input"],
        expected_output=doc["expected_output"],
        mock_fixtures=doc.get("mock_fixtures", {}),
        group=doc.get("group"),
        bias_group=_bias_group(doc.get("bias_group")),
        human_review=doc.get("human_review", False),
        human_instructions=doc.get("human_instructions"),
        expected_pass=doc.get("expected_pass", True),
        expected_trajectory=doc.get("expected_trajectory"),
        extra={k: v for k, v in doc.items() if k not in ENVELOPE_FIELDS},
    )


def _check_schema_reference(file: Path, doc: dict[str, Any], schema_path: Path,
                            found: Collector) -> None:
    reference = doc.get("$schema")
    if not isinstance(reference, str) or not reference or not schema_path.is_file():
        return  # reported once already: by the envelope, or as the missing schema file
    if "://" in reference or reference.startswith("/"):
        problem = "is not a relative path"
    elif os.path.normpath(file.parent / reference) == os.path.normpath(schema_path):
        return  # the common case, decided without touching the file system
    elif (file.parent / reference).is_file() \
            and (file.parent / reference).resolve() == schema_path.resolve():
        return
    else:
        problem = f"does not resolve to the dataset's {SCHEMA_FILE}"
    expected = Path(os.path.relpath(schema_path, file.parent)).as_posix()
    found.add(file, "/$schema", f"{reference!r} {problem}", f"set it to {expected!r}")
