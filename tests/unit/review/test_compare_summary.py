"""The comparison as CI shows it (``evalkit.review.compare_markdown``): the exact Markdown of a
small comparison, the one-line verdict in each case ``evalkit compare`` distinguishes, and the
table as GitHub's dialect of Markdown reads it."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from evalkit.records import RunUsage
from evalkit.review import (
    Difference,
    Margins,
    Side,
    compare,
    compare_markdown,
    comparison_verdict,
    margin_line,
)
from tests.support.markdown import tables

COLUMNS = ("Type", "A", "B", "Gap A − B", "Noise floor", "Right in A only / B only", "Verdict")


def side(run_id: str, items: Mapping[str, Mapping[str, bool]],
         floors: Mapping[str, float] | None = None, url: str | None = None,
         usage: RunUsage | None = None) -> Side:
    accuracy = {t: sum(v.values()) / len(v) for t, v in items.items()}
    return Side(run_id, f"router/golden / {run_id}", accuracy, items, floors or {}, {},
                usage or RunUsage(), url)


# functional: A right on 9 of 10, B on 6, the three A fixed flip (paired gap +0.3, Newcombe's
# interval [-0.070, +0.593]); smoke: one item flips each way (gap 0). A floor of 10% behind A
# gates both: +0.3 clears 2 x 10%, 0 does not.
FUNCTIONAL_A = {f"f{i}": i < 9 for i in range(10)}
FUNCTIONAL_B = {f"f{i}": i < 6 for i in range(10)}
SMOKE_A = {f"s{i}": i != 0 for i in range(10)}
SMOKE_B = {f"s{i}": i != 1 for i in range(10)}
A = side("aaaa1111", {"functional": FUNCTIONAL_A, "smoke": SMOKE_A},
         {"functional": 0.1, "smoke": 0.1}, "http://127.0.0.1:5000/#/experiments/1/runs/aaaa1111",
         RunUsage(1200, 0.001))
B = side("bbbb2222", {"functional": FUNCTIONAL_B, "smoke": SMOKE_B})
CHANGED = (Difference("prompt", "router-system", "sha256 " + "a" * 16, "v2 (sha256 " + "b" * 16
                      + ")", ("@@ -1 +1 @@", "-Answer in one word.",
                              "+Answer in a friendly sentence.")),
           Difference("param", "TEMPERATURE", "0.0", "0.7"),
           Difference("code", "git_commit", "1" * 40, None))


def test_a_comparison_is_its_verdict_the_two_runs_a_row_per_type_and_what_differs() -> None:
    markdown = compare_markdown(A, B, compare(A, B), CHANGED)
    assert markdown == (
        "### evalkit compare: A better on functional\n"
        "\n"
        "A: run [aaaa1111](http://127.0.0.1:5000/#/experiments/1/runs/aaaa1111) (router/golden "
        "/ aaaa1111); 1,200 tokens, \\$0.0010<br>\n"
        "B: run bbbb2222 (router/golden / bbbb2222)\n"
        "\n"
        "| Type | A | B | Gap A − B | Noise floor | Right in A only / B only | Verdict |\n"
        "|---|---|---|---|---|---|---|\n"
        "| functional | 0.900 | 0.600 | +0.300 [-0.070, +0.593] (95% paired, 10 shared items) "
        "| 10.00% (a gap must exceed 20.00%) | 3 / 0 of 10 | **A better** |\n"
        "| smoke | 0.900 | 0.900 | +0.000 [-0.324, +0.324] (95% paired, 10 shared items) "
        "| 10.00% (a gap must exceed 20.00%) | 1 / 1 of 10 | INCONCLUSIVE: inside the noise |\n"
        "\n"
        "What differs (A → B):\n"
        "\n"
        "- prompt router-system: sha256 aaaaaaaaaaaaaaaa → v2 (sha256 bbbbbbbbbbbbbbbb)\n"
        "  ```text\n"
        "  @@ -1 +1 @@\n"
        "  -Answer in one word.\n"
        "  +Answer in a friendly sentence.\n"
        "  ```\n"
        "- param TEMPERATURE: 0.0 → 0.7\n"
        "- code git\\_commit: 1111111111111111 → (not recorded)\n")
    (table,) = tables(markdown)
    assert table.header == COLUMNS
    assert [row[0] for row in table.rows] == ["functional", "smoke"]
    assert [row[-1] for row in table.rows] == ["A better", "INCONCLUSIVE: inside the noise"]


def test_a_gap_that_differs_over_the_shared_items_shows_both() -> None:
    # B has one more item, wrong: its accuracy counts it, the paired gap does not
    b = side("b", {"functional": {**FUNCTIONAL_B, "extra": False}})
    a = side("a", {"functional": FUNCTIONAL_A})
    (table,) = tables(compare_markdown(a, b, compare(a, b), ()))
    assert table.rows[0][3] == ("+0.355; over the shared items +0.300 [-0.070, +0.593] "
                                "(95% paired, 10 shared items)")
    assert table.rows[0][4:] == ("none (no replicates)", "3 / 0 of 10",
                                 "not gated (no replicates)")


@pytest.mark.parametrize(("a", "b", "verdict"), [
    (side("a", {"functional": FUNCTIONAL_B}, {"functional": 0.1}), B,
     "INCONCLUSIVE: no test type's gap clears the noise floor replicates measured"),
    (side("a", {"functional": FUNCTIONAL_A}), B,
     "not gated (no replicates measured a noise floor): each gap with its paired interval"),
    (side("a", {"functional": FUNCTIONAL_B, "smoke": SMOKE_B}, {"functional": 0.1, "smoke": 0.1}),
     side("b", {"functional": FUNCTIONAL_A, "smoke": SMOKE_A}), "A worse on functional"),
    (side("a", {"bias": {"g": True}}), B, "A and B share no test type with an accuracy"),
])
def test_the_verdict_line_says_where_a_changed_or_why_no_winner(a: Side, b: Side,
                                                                  verdict: str) -> None:
    assert comparison_verdict(compare(a, b)) == verdict
    markdown = compare_markdown(a, b, compare(a, b), ())
    assert markdown.splitlines()[0] == f"### evalkit compare: {verdict}"
    assert markdown.endswith("What differs: nothing recorded differs (params, prompts, code, "
                             "dataset, judge, versions)\n")


def test_better_and_worse_types_are_both_named() -> None:
    a = side("a", {"functional": FUNCTIONAL_A, "smoke": {f"s{i}": i < 3 for i in range(10)}},
             {"functional": 0.1, "smoke": 0.1})
    b = side("b", {"functional": FUNCTIONAL_B, "smoke": {f"s{i}": True for i in range(10)}})
    assert comparison_verdict(compare(a, b)) == "A better on functional; A worse on smoke"


@pytest.mark.parametrize(("margin", "cell", "line"), [
    # functional: B - A = -0.3 [-0.593, +0.070] (the A - B interval mirrored)
    (0.5, "B - A -0.300 [-0.593, +0.070] (95% paired) against margin 0.500: INCONCLUSIVE: "
          "the interval holds -0.500",
     "INCONCLUSIVE against the margin on functional (B - A's interval holds -margin: more "
     "shared items would settle it)"),
    (0.6, "B - A -0.300 [-0.593, +0.070] (95% paired) against margin 0.600: no worse: the "
          "interval lies above -0.600",
     "B no worse than A by more than the margin on functional"),
])
def test_a_margin_adds_its_answer_to_the_heading_and_a_column(margin: float, cell: str,
                                                             line: str) -> None:
    results = compare(A, B, Margins(per_type={"functional": margin}))
    assert margin_line(results) == line
    markdown = compare_markdown(A, B, results, ())
    assert markdown.splitlines()[0] == f"### evalkit compare: {line}; A better on functional"
    (table,) = tables(markdown)
    assert table.header == (*COLUMNS, "B − A against the margin")
    assert [row[-1] for row in table.rows] == [cell, "no margin given"]


def test_without_a_margin_there_is_no_margin_line() -> None:
    assert margin_line(compare(A, B)) is None
