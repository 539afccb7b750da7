"""``evalkit dataset import``: a golden dataset from a CSV or JSONL file the user has."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from evalkit._errors import ConfigError
from evalkit.cli._exit import ExitStatus
from evalkit.dataset import (
    TEST_TYPES,
    ColumnMapping,
    RowProblems,
    import_rows,
    read_source_rows,
)
from evalkit.tracking import SOURCE_COLUMNS, is_mlflow_source, mlflow_rows

IMPORT_DESCRIPTION = (
    "Write a golden dataset to --to from SOURCE: a .csv file (with a header row), a .jsonl "
    "file (one JSON object per line), mlflow-dataset:NAME (the records of an MLflow GenAI "
    "evaluation dataset; columns inputs, expectations, outputs, tags, record_id) or "
    "traces:EXPERIMENT[:FILTER] (an experiment's traces, FILTER as in mlflow.search_traces, "
    "e.g. traces:support/golden:tag.reviewed = 'yes'; columns request, response, "
    "expectations, tags, trace_id), both from MLFLOW_TRACKING_URI, else ./mlflow.db; an "
    "object column's keys are columns too (inputs.question). One entry file per row, a "
    "README, and a "
    "dataset.schema.json inferred from the rows (the JSON types seen per field, no enums; "
    "narrow it later) or given with --schema. The result is linted before it is put in "
    "place: every bad row is named as FILE:LINE: column: what is wrong. Fix: ..., and "
    "nothing is written until every row is right (exit status 3). A CSV cell is text unless "
    "its column is named in --parse-json.")
IMPORT_EXAMPLE = """\
example:
  evalkit dataset import answers.csv --to datasets/capitals \\
      --input question --expected answer --id id --group topic --test-types functional,smoke
"""


def add_dataset_parser(commands: argparse._SubParsersAction) -> None:
    dataset = commands.add_parser("dataset", help="build golden datasets from your data",
                                  description="Build golden datasets from data you have.")
    actions = dataset.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    imports = actions.add_parser(
        "import", help="a dataset from a .csv or .jsonl file, an MLflow evaluation dataset or "
                       "traces, every row checked",
        description=textwrap.fill(IMPORT_DESCRIPTION, 100), epilog=IMPORT_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    imports.add_argument("source", metavar="SOURCE",
                         help="a .csv or .jsonl file, mlflow-dataset:NAME or "
                              "traces:EXPERIMENT[:FILTER]")
    imports.add_argument("--to", type=Path, required=True, metavar="DIR",
                         help="the dataset folder to write, e.g. datasets/capitals")
    imports.add_argument("--input", action="append", metavar="COL",
                         help="the column holding the component's input; repeat it for an "
                              "input of several fields (an object keyed by column name); "
                              "default for MLflow sources: inputs, or request")
    imports.add_argument("--expected", metavar="COL",
                         help="the column holding the expected output (an empty cell: none, "
                              "as repeatability and bias entries have); default for MLflow "
                              "sources: expectations, or response")
    imports.add_argument("--id", metavar="COL",
                         help="the column holding each entry's id (letters, digits, '.', '_', "
                              "'-', '/'); default: derived from the input")
    imports.add_argument("--group", metavar="COL",
                         help="the column holding each entry's group (for --groups)")
    imports.add_argument("--tool-calls", metavar="COL",
                         help="the column holding each entry's expected tool calls, a list of "
                              "{name, arguments} (expected_trajectory, for the trajectory "
                              "scorer); traces: sources have it as tool_calls, their TOOL spans")
    types = imports.add_mutually_exclusive_group()
    types.add_argument("--test-types", default="functional", metavar="TYPES",
                       help="the test types of every entry, comma-separated (default: "
                            f"functional); one of {', '.join(TEST_TYPES)}")
    types.add_argument("--test-types-column", metavar="COL",
                       help="the column holding each row's test types (comma-separated)")
    imports.add_argument("--parse-json", action="append", default=[], metavar="COL",
                         help="a column whose cells hold JSON (an object, a list, a number); "
                              "repeatable")
    imports.add_argument("--schema", type=Path, metavar="FILE",
                         help="use this dataset.schema.json instead of inferring one")
    imports.add_argument("--add", action="store_true",
                         help="add the rows to the existing dataset at --to (its schema and "
                              "README are kept; an id it has already is refused)")


def dataset_command(args: argparse.Namespace) -> int:
    from_mlflow = is_mlflow_source(args.source)
    inputs, expected = args.input, args.expected
    if from_mlflow:
        default = next(c for prefix, c in SOURCE_COLUMNS.items()
                       if args.source.startswith(prefix))
        inputs, expected = inputs or [default[0]], expected or default[1]
    if inputs is None or expected is None:
        raise ConfigError("name the columns: --input COL and --expected COL (the header's "
                          "names in a .csv, the keys in a .jsonl)")
    mapping = ColumnMapping(
        inputs=tuple(inputs), expected=expected, id=args.id, group=args.group,
        test_types_column=args.test_types_column,
        test_types=tuple(t.strip() for t in args.test_types.split(",") if t.strip()),
        json_columns=frozenset(args.parse_json), tool_calls=args.tool_calls)
    if not mapping.test_types:
        raise ConfigError("--test-types is empty: name at least one, e.g. functional")
    unknown = [t for t in mapping.test_types if t not in TEST_TYPES]
    if unknown:
        raise ConfigError(f"--test-types: unknown test type {unknown[0]!r}; use one of "
                          + ", ".join(TEST_TYPES))
    unmapped = sorted(mapping.json_columns - set(mapping.columns))
    if unmapped:
        raise ConfigError(f"--parse-json {unmapped[0]}: the column is not mapped (by --input, "
                          "--expected, --id, --group, --test-types-column or --tool-calls)")
    problems = RowProblems()
    if from_mlflow:  # a dead server or a missing store: one line naming it, in seconds
        found = mlflow_rows(args.source)
    else:
        found = read_source_rows(Path(args.source), mapping, problems)
    imported = import_rows(args.source, found, problems, args.to, mapping,
                           schema=args.schema, add=args.add)
    schema = imported.schema
    kinds = "" if schema is None else "; schema inferred: " + ", ".join(
        f"{field} {_shown_type(schema['properties'][field])}"
        for field in ("input", "expected_output"))
    print(f"wrote: {imported.target} ({imported.entries} "
          f"entr{'y' if imported.entries == 1 else 'ies'}"
          f"{' added' if args.add else ''}{kinds})")
    if imported.ignored_columns:
        print("ignored columns: " + ", ".join(imported.ignored_columns))
    print(f'next: point eval.py at it: DATASET_PATH = "{imported.target.as_posix()}"')
    return ExitStatus.OK


def _shown_type(schema: dict[str, object]) -> str:
    kind = schema.get("type", "any JSON")
    return " or ".join(kind) if isinstance(kind, list) else str(kind)
