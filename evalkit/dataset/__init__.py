"""Golden datasets: the folder layout, the entry envelope and its test types, and lint.

A dataset is a folder holding ``README.md``, ``dataset.schema.json`` and ``data/`` with one
JSON file per entry. :func:`lint_dataset` collects every violation; :func:`load_dataset`
hands out entries only from a dataset with none; :func:`import_rows` writes one from rows a
user has (a CSV or JSONL file, read by :func:`read_source_rows`).
"""

from evalkit.dataset._envelope import (
    BIAS,
    COMPARATIVE_TYPES,
    PROMPT_USES,
    REPEATABILITY,
    TEST_TYPES,
    BiasKey,
    Entry,
)
from evalkit.dataset._import import ColumnMapping, import_rows, read_source_rows
from evalkit.dataset._label_file import read_label_file
from evalkit.dataset._lint import Dataset, lint_dataset, load_dataset, require_trajectories
from evalkit.dataset._rows import Problems as RowProblems
from evalkit.dataset._violations import LintReport, LintViolation

__all__ = ["BIAS", "COMPARATIVE_TYPES", "PROMPT_USES", "REPEATABILITY", "TEST_TYPES", "BiasKey",
           "ColumnMapping", "Dataset", "Entry", "LintReport", "LintViolation", "RowProblems",
           "import_rows",
           "lint_dataset", "load_dataset", "read_label_file", "read_source_rows",
           "require_trajectories"]
