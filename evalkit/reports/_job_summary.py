"""The verdict as CI shows it: the Markdown a finished ``eval.py`` run appends to a GitHub
Actions job summary (the file ``GITHUB_STEP_SUMMARY`` names) or writes as a pull request
comment.

Small on purpose, so that GitHub's renderer shows it at a glance: a heading that is the run's
verdict line, one line naming the run (linked to the MLflow UI), then one table row per test
type, failing types first: the metric its threshold is checked on, that metric's value with
the interval the reports compute (Wilson over the type's entries, bias: its groups; the
interval of the accuracy corrected by people's labels where labels correct it), the threshold
and the verdict. Over replicates a type's row lists each replicate's value; a sequential
run's rows say where each type's confidence sequence settled, and its verdict is the
sequence's, with the settle line under the table. Only what the reports already show
appears; every name and line goes through :func:`inline` (:func:`cell`, and ``$`` escaped
too: GitHub reads a pair of them as inline math), so no name can break the table.

>>> from evalkit.records import Threshold
>>> from evalkit.stats import TypeMetrics
>>> smoke = TypeMetrics("smoke", 4, 4, 0, 1.0, 1.0, 1.0, 1.0, 0.51, 1.0, (), (), Threshold(0.5))
>>> print(run_markdown("PASS: 1/1 types passed; 4 entries, 4 calls, 0 errors, 1.0 s",
...                    "0af1", None, "demo", [[smoke]]))
### PASS: 1/1 types passed; 4 entries, 4 calls, 0 errors, 1.0 s
<BLANKLINE>
Run 0af1 in experiment demo
<BLANKLINE>
| Type | Metric | Value [95% interval] | Threshold | Verdict |
|---|---|---|---|---|
| smoke | smoke\\_accuracy | 1.000 [0.510, 1.000] (n = 4) | accuracy ≥ 0.5 | PASS |
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from urllib.parse import quote

from evalkit.records import TypeNames
from evalkit.reports._common import accuracy_text, corrected_text, number, threshold_text
from evalkit.reports._markdown import cell, table
from evalkit.reports._settlement import type_verdict
from evalkit.stats import SequentialOutcome, TypeMetrics

EVAL_COMMENT_MARKER = "<!-- evalkit: eval.py verdict -->"
"""The first line of ``eval.py --pr-comment``'s body: a CI step finds its earlier comment by
it and updates that comment instead of adding one per push."""
COMPARE_COMMENT_MARKER = "<!-- evalkit: compare verdict -->"
"""The first line of ``evalkit compare --pr-comment``'s body."""

_URL_SAFE = ":/#?&=%@+,;~!*'"
"""What a URL keeps as it is; spaces, parentheses and angle brackets would end or break a
Markdown link's destination."""
_LINE_LIMIT = 400
"""Characters a heading or a line keeps: a verdict line is far shorter."""


def inline(value: object, limit: int = 80) -> str:
    """``value`` as safe one-line Markdown: :func:`cell`, with ``$`` escaped as well (GitHub
    renders the text between two of them as math, and costs are written ``$0.0012``)."""
    return cell(value, limit).replace("$", "\\$")


def link(label: str, url: str | None) -> str:
    """``label`` linked to ``url`` (already free of credentials), or plain without one; the
    characters that would end a link destination are percent-encoded."""
    shown = inline(label, _LINE_LIMIT)
    return f"[{shown}]({quote(url, safe=_URL_SAFE)})" if url else shown


def pr_comment(markdown: str, marker: str) -> str:
    """A pull request comment body: ``markdown`` under its hidden ``marker`` line."""
    return f"{marker}\n{markdown}"


_Column = tuple[str, Callable[[Sequence[TypeMetrics]], str]]
"""A column of the verdict table: its header and its cell from one type's figures, one per
run (a run, or each replicate). A sequential run's settle point is one more of these
(:func:`_sequential_columns`)."""


def _metric(runs: Sequence[TypeMetrics]) -> str:
    """The metric the threshold is checked on: the corrected accuracy once labels correct it."""
    n = TypeNames.of(runs[0].test_type)
    return inline(n.accuracy_corrected if runs[0].corrected else n.accuracy)


def _value(m: TypeMetrics) -> str:
    figure = accuracy_text(m)
    if m.corrected is not None:
        figure = f"{corrected_text(m)}; uncorrected {number(m.accuracy)}"
    if m.threshold.min_f1 is not None:
        figure += f"; F1 {number(m.f1)}"
    return figure  # figures and fixed words only: nothing to escape


def _values(runs: Sequence[TypeMetrics]) -> str:
    if len(runs) == 1:
        return _value(runs[0])
    return "<br>".join(f"replicate {i}: {_value(m)}" for i, m in enumerate(runs))


def _verdict(runs: Sequence[TypeMetrics]) -> str:
    return "PASS" if all(m.passed for m in runs) else "**FAIL**"


RUN_COLUMNS: tuple[_Column, ...] = (
    ("Type", lambda runs: inline(runs[0].test_type)),
    ("Metric", _metric),
    ("Value [95% interval]", _values),
    ("Threshold", lambda runs: threshold_text(runs[0])),
    ("Verdict", _verdict),
)


def _sequential_columns(sequential: SequentialOutcome) -> tuple[_Column, ...]:
    """A sequential run's columns: the value covers the entries called, ``Settled`` says
    where the type's sequence stopped and its interval there, and the verdict is the
    sequence's (INCONCLUSIVE too), not the value's threshold check."""
    def settled(runs: Sequence[TypeMetrics]) -> str:
        found = sequential.settlement(runs[0].test_type)
        return "—" if found is None else f"{found.point()}; {found.interval()}"

    def verdict(runs: Sequence[TypeMetrics]) -> str:
        shown = type_verdict(runs[0], sequential)
        return shown if shown == "PASS" else f"**{shown}**"

    level = f"{sequential.confidence:.0%}"
    return (*RUN_COLUMNS[:-1], (f"Settled [{level} confidence sequence]", settled),
            ("Verdict", verdict))


def run_markdown(verdict_line: str, run_id: str, run_url: str | None, experiment: str,
                 runs: Sequence[Sequence[TypeMetrics]],
                 sequential: SequentialOutcome | None = None) -> str:
    """The job summary of one ``eval.py`` invocation.

    ``verdict_line`` is the line the terminal ends with (the heading), ``run_id`` and
    ``run_url`` the run's (a replicate series: its parent's), ``runs`` the figures of each
    evaluated run, one tuple of types per replicate, ``sequential`` a sequential run's
    settlement (its verdicts are its sequences'; a line under the table says where it
    stopped). A type passes when it passes in every run; failing types come first. Ends with
    a blank line, so that appended sections stay apart."""
    types = [[m for run in runs for m in run if m.test_type == t.test_type] for t in runs[0]]
    ordered = sorted(types, key=lambda figures: all(
        type_verdict(m, sequential) == "PASS" for m in figures))
    columns = RUN_COLUMNS if sequential is None else _sequential_columns(sequential)
    rows = [[render(figures) for _, render in columns] for figures in ordered]
    below = [] if sequential is None else [inline(sequential.line(), _LINE_LIMIT), ""]
    return "\n".join([
        f"### {inline(verdict_line, _LINE_LIMIT)}", "",
        f"Run {link(run_id, run_url)} in experiment {inline(experiment)}", "",
        table([header for header, _ in columns], rows), "", *below])
