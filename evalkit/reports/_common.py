"""Parts every report shares: the header, number formatting, pass/fail marks, output summaries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from evalkit.records import RunRecord, as_object, as_text, names
from evalkit.reports._markdown import cell
from evalkit.stats import TypeMetrics

PASS, FAIL = "✓", "✗"
MAX_ROWS = 200
"""Item rows a report shows (failures always first); beyond them it points to the artifact
that holds every item, so that a 10,000-entry report stays readable."""


def header(record: RunRecord, title: str, extra: Sequence[tuple[str, str]] = ()) -> list[str]:
    params, tags = record.params, record.tags
    started = datetime.fromtimestamp(record.start_time_ms / 1000, tz=UTC)
    source = _source(tags)
    lines = [
        f"# {title}", "",
        f"- **Date:** {started:%Y-%m-%d %H:%M:%S} UTC",
        f"- **Dataset:** {cell(params.get(names.DATASET_PATH_PARAM, 'unknown'))} "
        f"({params.get(names.DATASET_ENTRIES_PARAM, '?')} entries, sha256 "
        f"{cell(params.get(names.DATASET_DIGEST_PARAM, 'unknown')[:16])})",
        f"- **Script:** {source}",
        *(f"- **{label}:** {value}" for label, value in extra),
        f"- **MLflow:** experiment {cell(record.experiment_name)} (id {record.experiment_id}), "
        f"run {record.run_id} ({cell(record.run_name)})",
        f"- **Groups filter:** {cell(tags.get(names.GROUPS_FILTER_TAG, 'all'))}",
    ]
    if names.RESCORED_FROM_TAG in tags:
        lines.append(f"- **Rescored from:** run {cell(tags[names.RESCORED_FROM_TAG])}: its "
                     "recorded outputs scored again, no component call made")
    return [*lines, ""]


_NO_GIT_COMMIT = {names.NO_COMMIT: "no git commit yet",
                  names.NOT_A_CHECKOUT: "not in a git checkout"}


def _source(tags: Mapping[str, str]) -> str:
    """The script and the commit it ran at: ``eval.py at git 1a2b3c4d5e6f``, or why there is
    no commit (a short hash of those words would read as a clipped sentence)."""
    script = cell(tags.get(names.SOURCE_NAME_TAG, "unknown"))
    commit = tags.get(names.GIT_COMMIT_TAG, "unknown")
    if commit in _NO_GIT_COMMIT:
        return f"{script} ({_NO_GIT_COMMIT[commit]})"
    source = f"{script} at git {cell(commit[:12])}"
    if tags.get(names.GIT_DIRTY_TAG) == "true":
        source += " (with uncommitted changes)"
    return source


def number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def accuracy_text(m: TypeMetrics) -> str:
    """A type's accuracy with its Wilson interval and samples: ``0.750 [0.301, 0.954] (n = 4)``."""
    if not m.samples:
        return "no samples"
    return f"{number(m.accuracy)} [{number(m.ci_low)}, {number(m.ci_high)}] (n = {m.samples})"


def corrected_text(m: TypeMetrics) -> str:
    """The accuracy corrected by people's labels with its interval, or ``—`` without one."""
    c = m.corrected
    if c is None:
        return "—"
    return f"{number(c.estimate)} [{number(c.low)}, {number(c.high)}] ({c.labels} labels)"


def threshold_text(m: TypeMetrics) -> str:
    """The threshold a type is checked against: ``accuracy ≥ 0.8, F1 ≥ 0.7``."""
    text = f"accuracy ≥ {m.threshold.min_accuracy:g}"
    if m.threshold.min_f1 is not None:
        text += f", F1 ≥ {m.threshold.min_f1:g}"
    return text


TEXT_LIMIT = 500
"""Characters of each distinct output a repeatability or bias cell shows: enough for a reply
in full, so that the difference is visible without opening an artifact."""
_ABSENT = "(absent)"


def distinct(outputs: Sequence[Any], shown: int = 5) -> str:
    """How the outputs of one item differ, for a table cell.

    Structured outputs (JSON objects, or strings holding one) are compared field by field:
    each field whose values differ is listed with every value and its count, the fields that
    agree are counted. Other outputs are listed as distinct texts, in full up to
    :data:`TEXT_LIMIT` characters, most frequent first, at most ``shown`` of them."""
    if not outputs:
        return "—"
    counts = Counter(as_text(o) for o in outputs)
    summary = f"{len(counts)} distinct of {len(outputs)}"
    records = [as_object(o) for o in outputs]
    if all(r is not None for r in records) and len(counts) > 1:
        return summary + "; " + _field_differences([r for r in records if r is not None],
                                                   shown)
    parts = [f"{n}× {cell(text, TEXT_LIMIT)}" for text, n in counts.most_common(shown)]
    if len(counts) > shown:
        parts.append(f"+{len(counts) - shown} more")
    return f"{summary}:<br>" + "<br>".join(parts)


def _field_differences(records: Sequence[dict[str, Any]], shown: int) -> str:
    fields = sorted({key for r in records for key in r})
    values = {key: Counter(_ABSENT if key not in r else as_text(r[key]) for r in records)
              for key in fields}
    differing = [key for key in fields if len(values[key]) > 1]
    lines = []
    for key in differing:
        common = values[key].most_common(shown)
        more = len(values[key]) - len(common)
        lines.append(f"field **{cell(key)}**: " + "; ".join(
            f"{n}× {cell(value, TEXT_LIMIT)}" for value, n in common)
            + (f"; +{more} more" if more > 0 else ""))
    agree = len(fields) - len(differing)
    noun = "field differs" if len(differing) == 1 else "fields differ"
    return (f"{len(differing)} {noun}, {agree} agree:<br>" + "<br>".join(lines))
