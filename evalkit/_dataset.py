"""Golden datasets: the folder layout, the entry envelope, and lint.

A dataset is a folder holding ``README.md``, ``dataset.schema.json`` and ``data/`` with one JSON
file per entry (sub-folders allowed). An entry's id is its path under ``data/`` without
``.json``; it is the join key of every cross-run statistic, so it never depends on file order
or content.

Lint collects *every* violation (file, JSON pointer, message, fix) before anything runs;
:func:`load_dataset` refuses to hand out entries from a dataset with any violation.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError
from referencing.exceptions import Unresolvable

from evalkit._errors import DatasetInvalid

SCHEMA_FILE = "dataset.schema.json"
README_FILE = "README.md"
DATA_DIR = "data"

_ENVELOPE: dict[str, Any] = json.loads(
    resources.files("evalkit").joinpath("envelope.schema.json").read_text(encoding="utf-8")
)
TEST_TYPES: tuple[str, ...] = tuple(_ENVELOPE["properties"]["test_types"]["items"]["enum"])
# Types scored by comparing outputs with each other rather than with expected_output (rules B, C).
COMPARATIVE_TYPES = frozenset({"bias", "repeatability"})
_ENVELOPE_FIELDS = frozenset(_ENVELOPE["properties"])


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
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Project-specific fields beyond the envelope."""

    @property
    def bias_key(self) -> BiasKey | None:
        """The bias group this entry is a variant of (``1`` and ``"1"`` are different)."""
        return None if self.bias_group is None else (type(self.bias_group).__name__,
                                                     self.bias_group)


@dataclass(frozen=True)
class LintViolation:
    """One broken rule: where (file and JSON pointer), what, and how to fix it."""

    file: str
    pointer: str
    message: str
    fix: str

    def render(self) -> str:
        return f"{self.file}: {self.pointer or '/'}: {self.message}. Fix: {self.fix}"


@dataclass(frozen=True)
class LintReport:
    """Every violation found in one dataset, in file order."""

    dataset: str
    files_checked: int
    violations: tuple[LintViolation, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    def render(self) -> str:
        lines = [v.render() for v in self.violations] + [f"warning: {w}" for w in self.warnings]
        verdict = (
            f"{self.dataset}: {self.files_checked} entries, valid"
            if self.ok
            else f"{self.dataset}: {len(self.violations)} violation(s) in "
            f"{len({v.file for v in self.violations})} file(s)"
        )
        return "\n".join([*lines, verdict])


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


def lint_dataset(path: str | os.PathLike[str]) -> LintReport:
    """Check every file of the dataset at ``path`` and return all violations found."""
    return _lint(Path(path)).report


# --- implementation -------------------------------------------------------------------------


@dataclass
class _Linted:
    report: LintReport
    entries: tuple[Entry, ...]
    digest: str


class _Collector:
    def __init__(self) -> None:
        self.violations: list[LintViolation] = []

    def add(self, file: Path | str, pointer: str, message: str, fix: str) -> None:
        self.violations.append(LintViolation(_display(file), pointer, message, fix))


def _display(path: Path | str) -> str:
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _pointer(parts: Sequence[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _lint(root: Path) -> _Linted:
    found = _Collector()
    warnings: list[str] = []
    if not root.is_dir():
        found.add(root, "", "dataset folder not found", "pass the path of a dataset folder")
        return _Linted(LintReport(_display(root), 0, tuple(found.violations)), (), "")
    if not (root / README_FILE).is_file():
        found.add(root / README_FILE, "", "README.md is missing",
                  "describe what the dataset is, how it was made and how to consume it")
    schema_path = root / SCHEMA_FILE
    schema_bytes, project_validator = _load_project_schema(schema_path, found)
    data_root = root / DATA_DIR
    files = sorted(p for p in data_root.rglob("*.json") if p.is_file()) if data_root.is_dir() \
        else []
    if not files:
        found.add(data_root, "", "no entry files (data/**/*.json) found",
                  "add one JSON file per entry under data/")
    if data_root.is_dir():
        strays = sorted(p for p in data_root.rglob("*")
                        if p.is_file() and p.suffix != ".json" and not p.name.startswith("."))
        warnings += [f"{_display(p)}: ignored, entries must be .json files" for p in strays]

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
    report = LintReport(_display(root), len(files), tuple(found.violations), tuple(warnings))
    return _Linted(report, tuple(entries), digest.hexdigest())


def _digest_file(digest: Any, name: str, content: bytes) -> None:
    digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())


def _load_project_schema(path: Path, found: _Collector) -> tuple[bytes | None, Any]:
    if not path.is_file():
        found.add(path, "", "dataset.schema.json is missing",
                  "add the dataset's JSON Schema next to README.md")
        return None, None
    raw = path.read_bytes()
    try:
        schema = _parse_json(raw)
    except ValueError as err:
        found.add(path, "", f"not valid JSON: {err}", "repair the JSON syntax")
        return raw, None
    if not isinstance(schema, dict | bool):
        found.add(path, "", f"not a valid JSON Schema: found {_json_type(schema)}",
                  "make the schema a JSON object, e.g. {\"type\": \"object\"}")
        return raw, None
    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        found.add(path, "/$schema", "not a valid JSON Schema: $schema must be a URI string",
                  "set it to \"https://json-schema.org/draft/2020-12/schema\"")
        return raw, None
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        found.add(path, _pointer(err.absolute_path), f"not a valid JSON Schema: {err.message}",
                  "correct the schema so that it validates against its metaschema")
        return raw, None
    validator = cls(schema)
    broken = [(pointer, ref) for pointer, ref in _local_refs(schema)
              if not _resolves(validator, ref)]
    for pointer, ref in broken:
        found.add(path, pointer, f"$ref {ref!r} points nowhere in the schema",
                  "define the referenced subschema (e.g. under $defs) or correct the $ref")
    return raw, None if broken else validator


def _local_refs(schema: Any, parts: tuple[Any, ...] = ()) -> Iterator[tuple[str, str]]:
    """(pointer, ref) of every ``$ref`` inside the document itself (those starting with #)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#"):
                yield _pointer([*parts, key]), value
            else:
                yield from _local_refs(value, (*parts, key))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _local_refs(value, (*parts, index))


def _resolves(validator: Any, ref: str) -> bool:
    try:
        validator.evolve(schema={"$ref": ref}).is_valid(None)
    except Unresolvable:
        return False
    return True


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


def _parse_json(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8 ({err.reason} at byte {err.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates,
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ValueError(f"{err.msg} at line {err.lineno} column {err.colno}") from None


def _bias_group(value: Any) -> Any:
    """JSON Schema counts 1.0 as an integer, so the envelope admits it: make it the group 1."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _bias_key_of(doc: Any) -> BiasKey | None:
    """:attr:`Entry.bias_key` of a document that may still be invalid."""
    if not isinstance(doc, dict):
        return None
    types, group = doc.get("test_types"), _bias_group(doc.get("bias_group"))
    if not isinstance(types, list) or "bias" not in types:
        return None
    if isinstance(group, bool) or not isinstance(group, str | int):
        return None
    return type(group).__name__, group


def _lint_entry(file: Path, entry_id: str, raw: bytes, schema_path: Path,
                project_validator: Any, found: _Collector) -> tuple[Any, Entry | None]:
    try:
        doc = _parse_json(raw)
    except ValueError as err:
        found.add(file, "", f"not valid JSON: {err}", "repair the JSON syntax")
        return None, None
    if not isinstance(doc, dict):
        found.add(file, "", f"an entry must be a JSON object, found {_json_type(doc)}",
                  "wrap the entry in an object with $schema, test_types, input and "
                  "expected_output")
        return doc, None

    before = len(found.violations)
    _check_schema_reference(file, doc, schema_path, found)
    for violation in _envelope_validator().iter_errors(doc):
        found.add(file, *_explain(violation))
    if project_validator is not None:
        try:
            errors = list(project_validator.iter_errors(doc))
        except Unresolvable as unresolvable:  # a $ref the up-front check cannot see (nested $id)
            found.add(file, "", f"cannot be checked: dataset.schema.json has an unresolvable "
                      f"$ref ({unresolvable})", "correct the $ref in dataset.schema.json")
            errors = []
        for error in errors:
            found.add(file, _location(error), f"violates dataset.schema.json: {error.message}",
                      "make the entry satisfy the dataset's own schema, or correct the schema")
    _check_rules(file, doc, found)
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
        extra={k: v for k, v in doc.items() if k not in _ENVELOPE_FIELDS},
    )


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), (str, "a string"), (list, "an array"),
                       ((int, float), "a number"), (type(None), "null")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _check_schema_reference(file: Path, doc: dict[str, Any], schema_path: Path,
                            found: _Collector) -> None:
    reference = doc.get("$schema")
    expected = Path(os.path.relpath(schema_path, file.parent)).as_posix()
    if not isinstance(reference, str) or not reference or not schema_path.is_file():
        return  # reported once already: by the envelope, or as the missing schema file
    if "://" in reference or reference.startswith("/"):
        found.add(file, "/$schema", f"{reference!r} is not a relative path",
                  f"set it to {expected!r}")
        return
    target = (file.parent / reference)
    if not target.is_file() or target.resolve() != schema_path.resolve():
        found.add(file, "/$schema", f"{reference!r} does not resolve to the dataset's "
                  f"{SCHEMA_FILE}", f"set it to {expected!r}")


def _explain(err: ValidationError) -> tuple[str, str, str]:
    """Pointer, message and fix for an envelope violation, phrased for dataset authors."""
    path = list(err.absolute_path)
    if err.validator == "required":
        missing = _missing_field(err)
        return _location(err), "required field is missing", (
            f"add \"{missing}\"" + (" (null is allowed)" if missing == "expected_output" else ""))
    field_name = str(path[0]) if path else ""
    if field_name == "test_types":
        if err.validator == "enum":
            return _pointer(path), f"unknown test type {err.instance!r}", (
                "use one of: " + ", ".join(TEST_TYPES))
        if err.validator == "minItems":
            return _pointer(path), "test_types is empty", "list at least one test type"
        if err.validator == "uniqueItems":
            return _pointer(path), "test_types lists a type twice", "list each type once"
    if field_name == "group" and err.validator == "pattern":
        return _pointer(path), f"group {err.instance!r} contains a comma", (
            "remove the comma: --groups splits its value on commas")
    if err.validator == "minLength":
        return _pointer(path), "must not be empty", f"write a non-empty {field_name}"
    expected_types = err.schema.get("type") if err.validator == "type" else None
    if expected_types is not None:
        wanted = " or ".join(expected_types) if isinstance(expected_types, list) else expected_types
        return _pointer(path), f"must be {wanted}, found {_json_type(err.instance)}", (
            f"make {field_name or 'the entry'} {wanted}")
    return _pointer(path), err.message, "correct the value as the message says"


@functools.cache
def _missing_field(err: ValidationError) -> str:
    present = err.instance if isinstance(err.instance, dict) else {}
    return next(f for f in err.validator_value if f not in present)


def _location(err: ValidationError) -> str:
    """JSON pointer of a violation; a missing required field points at the field itself."""
    if err.validator == "required":
        return _pointer([*err.absolute_path, _missing_field(err)])
    return _pointer(err.absolute_path)


def _envelope_validator() -> Any:
    return jsonschema.Draft202012Validator(_ENVELOPE)


def _check_rules(file: Path, doc: dict[str, Any], found: _Collector) -> None:
    """Rules A-D of the spec, enforced whatever the dataset's own schema allows."""
    listed = doc.get("test_types")
    types = [t for t in listed if t in TEST_TYPES] if isinstance(listed, list) else []
    has_bias = "bias" in types
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
    if doc.get("human_review") is True and doc.get("human_instructions") is None:
        found.add(file, "/human_instructions",
                  "rule D: human_review is true but human_instructions is missing",
                  "add \"human_instructions\" telling the reviewer what to check")
