"""The per-entry results table (``mlflow.log_table``), which the MLflow UI shows as a grid."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

from evalkit.records import ScoredRun


def results_table(evaluation: ScoredRun) -> dict[str, list[Any]]:
    columns: dict[str, list[Any]] = {name: [] for name in (
        "test_type", "id", "passed", "expected_pass", "correct", "similarity", "error",
        "input", "expected", "outputs")}
    for result in evaluation.types:
        for item in result.items:
            for name, value in (
                ("test_type", result.test_type), ("id", item.id), ("passed", item.passed),
                ("expected_pass", item.expected_pass), ("correct", item.correct),
                ("similarity", item.similarity), ("error", item.error or ""),
                ("input", json.dumps(item.input, ensure_ascii=False)),
                ("expected", json.dumps(item.expected, ensure_ascii=False)),
                ("outputs", json.dumps(list(item.outputs), ensure_ascii=False)),
            ):
                columns[name].append(value)
    return columns


def table_json(table: Mapping[str, list[Any]]) -> str:
    """The table as ``mlflow.log_table`` stores it (pandas "split" orientation)."""
    import pandas

    return str(pandas.DataFrame(table).to_json(orient="split", index=False))


def table_from_json(content: bytes) -> Any:
    import pandas

    return pandas.read_json(io.StringIO(content.decode("utf-8")), orient="split")
