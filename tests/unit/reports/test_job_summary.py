"""The verdict as CI shows it (``evalkit.reports.run_markdown``): the exact Markdown of a small
run, failing types first, replicates, labels-corrected and F1-gated types, names that would
break a table, and the table as GitHub's dialect of Markdown reads it."""

from __future__ import annotations

import doctest

from evalkit.records import Threshold
from evalkit.reports import EVAL_COMMENT_MARKER, inline, link, pr_comment, run_markdown
from evalkit.reports import _job_summary as job_summary
from evalkit.stats import (
    CorrectedAccuracy,
    Look,
    Scope,
    SequentialOutcome,
    SequentialVerdict,
    TypeMetrics,
    TypeSettlement,
)
from tests.support.markdown import html, tables

COLUMNS = ("Type", "Metric", "Value [95% interval]", "Threshold", "Verdict")


def figures(test_type: str, correct: int, samples: int, ci: tuple[float, float],
            threshold: Threshold, f1: float = 0.0,
            corrected: CorrectedAccuracy | None = None) -> TypeMetrics:
    return TypeMetrics(test_type, samples, correct, 0, correct / samples, 1.0, correct / samples,
                       f1, *ci, (), (), threshold, corrected)


# 2 of 4 and 4 of 4 with their 95% Wilson intervals, by hand (z² = 3.8415, 1 + z²/n = 1.9604):
# 2/4: 0.5 ± 1.96 sqrt(0.0625 + 0.0600) / 1.9604 = 0.5 ± 0.350; 4/4: 0.755 ± 0.245
FUNCTIONAL = figures("functional", 2, 4, (0.150, 0.850), Threshold(0.8))
SMOKE = figures("smoke", 4, 4, (0.510, 1.0), Threshold(0.5))


def test_a_run_is_its_verdict_line_its_link_and_a_row_per_type_failing_first() -> None:
    markdown = run_markdown(
        "FAIL: 1/2 types passed (failed: functional); 8 entries, 8 calls, 0 errors, 2.5 s; "
        "1,200 tokens, $0.0010", "c5e6c943", "http://127.0.0.1:5000/#/experiments/1/runs/c5e6c943",
        "router/golden", [[SMOKE, FUNCTIONAL]])
    assert markdown == (
        "### FAIL: 1/2 types passed (failed: functional); 8 entries, 8 calls, 0 errors, 2.5 s; "
        "1,200 tokens, \\$0.0010\n"
        "\n"
        "Run [c5e6c943](http://127.0.0.1:5000/#/experiments/1/runs/c5e6c943) in experiment "
        "router/golden\n"
        "\n"
        "| Type | Metric | Value [95% interval] | Threshold | Verdict |\n"
        "|---|---|---|---|---|\n"
        "| functional | functional\\_accuracy | 0.500 [0.150, 0.850] (n = 4) | accuracy ≥ 0.8 "
        "| **FAIL** |\n"
        "| smoke | smoke\\_accuracy | 1.000 [0.510, 1.000] (n = 4) | accuracy ≥ 0.5 | PASS |\n")
    (table,) = tables(markdown)
    assert table.header == COLUMNS
    assert table.rows == (
        ("functional", "functional_accuracy", "0.500 [0.150, 0.850] (n = 4)", "accuracy ≥ 0.8",
         "FAIL"),
        ("smoke", "smoke_accuracy", "1.000 [0.510, 1.000] (n = 4)", "accuracy ≥ 0.5", "PASS"))
    assert "<h3>FAIL: 1/2 types passed" in html(markdown)
    assert "$0.0010</h3>" in html(markdown)  # the escape renders as the dollar sign


def test_over_replicates_a_type_fails_when_any_replicate_fails_and_lists_each() -> None:
    second = figures("functional", 4, 4, (0.510, 1.0), Threshold(0.8))
    markdown = run_markdown("FAIL: 0/1 types passed (failed: functional); 4 entries x 2 "
                            "replicates, 8 calls, 0 errors, 1.0 s", "p1", None, "r/g",
                            [[FUNCTIONAL], [second]])
    (table,) = tables(markdown)
    assert table.rows == (("functional", "functional_accuracy",
                           "replicate 0: 0.500 [0.150, 0.850] (n = 4)replicate 1: 1.000 "
                           "[0.510, 1.000] (n = 4)", "accuracy ≥ 0.8", "FAIL"),)
    assert ("| replicate 0: 0.500 [0.150, 0.850] (n = 4)<br>replicate 1: 1.000 [0.510, 1.000] "
            "(n = 4) |") in markdown
    assert "\nRun p1 in experiment r/g\n" in markdown  # no URL: the id, unlinked


def test_a_corrected_type_is_gated_on_its_corrected_interval_and_f1_shows_when_gated() -> None:
    corrected = CorrectedAccuracy("PPI++", 0.62, 0.05, 0.95, 0.522, 0.718, 40, 200)
    judged = figures("functional", 3, 4, (0.301, 0.954), Threshold(0.6, min_f1=0.7), f1=0.857,
                     corrected=corrected)
    (table,) = tables(run_markdown("PASS", "r", None, "r/g", [[judged]]))
    assert table.rows == (("functional", "functional_accuracy_corrected",
                           "0.620 [0.522, 0.718] (40 labels); uncorrected 0.750; F1 0.857",
                           "accuracy ≥ 0.6, F1 ≥ 0.7", "PASS"),)


def settlement(test_type: str, verdict: SequentialVerdict, n: int, units: int,
               interval: tuple[float, float], not_called: tuple[str, ...] = ()
               ) -> TypeSettlement:
    """A type's sequence stopped at look ``n`` (settled there unless INCONCLUSIVE)."""
    settled_at = n if verdict.settled else None
    return TypeSettlement(test_type, units, Look(Scope.POPULATION, n, units, 0.9, *interval,
                                                 verdict, settled_at, 0.95, 1000), not_called)


# 2000 entries, 412 called: functional settled PASS at its 412th, smoke ran out INCONCLUSIVE
SEQUENTIAL = SequentialOutcome(
    "population", "does the component pass on the population the dataset samples?", 0.95, 7,
    (), (settlement("functional", SequentialVerdict.PASS, 412, 2000, (0.8124, 0.8711)),
         settlement("smoke", SequentialVerdict.INCONCLUSIVE, 4, 4, (0.41, 1.0))),
    2000, 412, 2000, 412)


def test_a_sequential_run_shows_where_each_type_settled_and_the_sequences_verdict() -> None:
    # smoke's 4 of 4 pass its threshold, but its sequence is undecided: the verdict is the
    # sequence's, and the undecided type comes first
    markdown = run_markdown("INCONCLUSIVE: 1/2 types passed (not passed: smoke); not settled "
                            "after 412 of 2000 entries (1588 calls saved)", "r", None, "r/g",
                            [[SMOKE, figures("functional", 340, 412, (0.785, 0.859),
                                             Threshold(0.8))]], SEQUENTIAL)
    assert markdown.endswith(
        "| Type | Metric | Value [95% interval] | Threshold | Settled [95% confidence sequence] "
        "| Verdict |\n"
        "|---|---|---|---|---|---|\n"
        "| smoke | smoke\\_accuracy | 1.000 [0.510, 1.000] (n = 4) | accuracy ≥ 0.5 "
        "| INCONCLUSIVE after 4 of 4; [0.410, 1.000] | **INCONCLUSIVE** |\n"
        "| functional | functional\\_accuracy | 0.825 [0.785, 0.859] (n = 412) | accuracy ≥ 0.8 "
        "| PASS at 412 of 2000; [0.812, 0.871] | PASS |\n"
        "\n"
        "sequential (population: does the component pass on the population the dataset "
        "samples?) at 95%: not settled after 412 of 2000 entries (1588 calls saved)\n")
    (table,) = tables(markdown)
    assert [row[4:] for row in table.rows] == [
        ("INCONCLUSIVE after 4 of 4; [0.410, 1.000]", "INCONCLUSIVE"),
        ("PASS at 412 of 2000; [0.812, 0.871]", "PASS")]


def test_a_sequential_outcome_reads_back_from_its_json() -> None:
    assert SequentialOutcome.from_json(SEQUENTIAL.to_json()) == SEQUENTIAL
    # as a run recorded before the grid and the units not called were written has it
    older = SEQUENTIAL.to_json()
    for settled in older["types"]:
        del settled["grid"], settled["not_called"]
    assert SequentialOutcome.from_json(older) == SEQUENTIAL


def test_names_cannot_break_the_table_or_the_heading() -> None:
    odd = figures("fair|ness", 1, 1, (0.207, 1.0), Threshold(0.5))
    markdown = run_markdown("PASS: 1/1 | *types* passed", "r", "http://h/a b(c)", "x|y/z_w",
                            [[odd]])
    (table,) = tables(markdown)
    assert table.rows[0][:2] == ("fair|ness", "fair|ness_accuracy")
    assert table.rows[0][4] == "PASS"
    assert markdown.startswith("### PASS: 1/1 \\| \\*types\\* passed\n")
    assert "Run [r](http://h/a%20b%28c%29) in experiment x\\|y/z\\_w" in markdown
    assert '<a href="http://h/a%20b%28c%29">r</a>' in html(markdown)


def test_the_pull_request_comment_is_the_summary_under_its_hidden_marker() -> None:
    markdown = run_markdown("PASS", "r", None, "r/g", [[SMOKE]])
    comment = pr_comment(markdown, EVAL_COMMENT_MARKER)
    assert comment == "<!-- evalkit: eval.py verdict -->\n" + markdown
    # an HTML comment, passed through as one (a browser shows nothing of it), not text
    assert html(comment).startswith("<!-- evalkit: eval.py verdict -->\n<h3>PASS</h3>")
    assert tables(comment) == tables(markdown)


def test_inline_text_and_links_escape_what_would_end_them() -> None:
    assert inline("a|b $1 and $2 [x](y)") == "a\\|b \\$1 and \\$2 \\[x\\](y)"
    assert link("run", None) == "run"
    assert link("r|1", "http://h/#/x?a=1&b=(2)") == "[r\\|1](http://h/#/x?a=1&b=%282%29)"


def test_the_module_example_prints_what_it_says() -> None:
    failures, tried = doctest.testmod(job_summary)
    assert (failures, tried) == (0, 4)
