"""Parts every report shares: the header, number formatting, pass/fail marks, output summaries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from evalkit.records import RunRecord, as_text
from evalkit.reports._markdown import cell

PASS, FAIL = "✓", "✗"
MAX_ROWS = 200
"""Item rows a report shows; beyond them it shows failures first and points to the artifact
that holds every item, so that a 10,000-entry report stays readable."""


def header(record: RunRecord, title: str, extra: Sequence[tuple[str, str]] = ()) -> list[str]:
    params, tags = record.params, record.tags
    started = datetime.fromtimestamp(record.start_time_ms / 1000, tz=UTC)
    commit = tags.get("git_commit", "unknown")
    source = f"{cell(tags.get('mlflow.source.name', 'unknown'))} at git {cell(commit[:12])}"
    if tags.get("git_dirty") == "true":
        source += " (with uncommitted changes)"
    lines = [
        f"# {title}", "",
        f"- **Date:** {started:%Y-%m-%d %H:%M:%S} UTC",
        f"- **Dataset:** {cell(params.get('DATASET_PATH', 'unknown'))} "
        f"({params.get('dataset_entries', '?')} entries, sha256 "
        f"{cell(params.get('dataset_digest', 'unknown')[:16])})",
        f"- **Script:** {source}",
        *(f"- **{label}:** {value}" for label, value in extra),
        f"- **MLflow:** experiment {cell(record.experiment_name)} (id {record.experiment_id}), "
        f"run {record.run_id} ({cell(record.run_name)})",
        f"- **Groups filter:** {cell(tags.get('groups_filter', 'all'))}",
        "",
    ]
    return lines


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def distinct(outputs: Sequence[Any], shown: int = 3) -> str:
    counts = Counter(as_text(o) for o in outputs)
    parts = [f"{n}× {cell(text, 40)}" for text, n in counts.most_common(shown)]
    if len(counts) > shown:
        parts.append(f"+{len(counts) - shown} more")
    return f"{len(counts)} of {len(outputs)}: " + "; ".join(parts) if parts else "—"
