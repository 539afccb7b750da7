"""Non-inferiority against a margin from the paired interval (``margin_check``): published and
hand-worked tables on both sides of the margin and straddling it, the three answers' order as
the margin grows, and the rate of a wrong "no worse" at the margin. Fast."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.stats import (
    Look,
    MarginVerdict,
    PairedSequence,
    margin_check,
    paired_gap,
    sequence_margin_check,
)

NO_WORSE, WORSE, INCONCLUSIVE = (MarginVerdict.NO_WORSE, MarginVerdict.WORSE,
                                 MarginVerdict.INCONCLUSIVE)


@pytest.mark.parametrize(("margin", "verdict"), [
    (0.15, NO_WORSE),  # -0.1186 > -0.15
    (0.10, INCONCLUSIVE),  # -0.1186 < -0.10 < -0.0046
    (0.003, WORSE),  # -0.0046 < -0.003
    (0.0, WORSE),  # the whole interval is below 0: worse at all
])
def test_a_published_table_on_each_side_of_the_margin(margin: float,
                                                      verdict: MarginVerdict) -> None:
    # Fagerland, Lydersen & Laake (2017), ch. 8 (59 both, 6 candidate only, 16 baseline
    # only, 80 neither): candidate - baseline -0.0621, Newcombe's interval (-0.1186, -0.0046).
    difference = paired_gap(59, 6, 16, 80)
    assert difference is not None
    assert (difference.low, difference.high) == pytest.approx((-0.1186, -0.0046), abs=5e-5)
    check = margin_check(difference, margin)
    assert (check.margin, check.verdict, check.difference) == (margin, verdict, difference)


Z2 = 1.959963984540054 ** 2
EQUAL_HALF_WIDTH = 1 - 10 / (10 + Z2)  # 0.27753: Wilson at 10 of 10 is [10/(10 + z²), 1]


@pytest.mark.parametrize(("table", "margin", "verdict"), [
    # ten items right in both: phi = 0 (a margin of the table is 0), so the interval is
    # +-sqrt(0.27753² + 0²) = [-0.2775, +0.2775]
    ((10, 0, 0, 0), 0.30, NO_WORSE),
    ((10, 0, 0, 0), 0.25, INCONCLUSIVE),
    ((10, 0, 0, 0), 0.0, INCONCLUSIVE),
    # ten items right in the baseline only: gap -1, high = -1 + sqrt(2) x 0.27753 = -0.6075
    ((0, 0, 10, 0), 0.60, WORSE),
    ((0, 0, 10, 0), 0.61, INCONCLUSIVE),
    ((0, 0, 10, 0), 1.0, INCONCLUSIVE),  # low is -1: never above -1
])
def test_hand_worked_tables(table: tuple[int, int, int, int], margin: float,
                            verdict: MarginVerdict) -> None:
    difference = paired_gap(*table)
    assert difference is not None
    if table[0]:
        assert (difference.low, difference.high) == pytest.approx(
            (-EQUAL_HALF_WIDTH, EQUAL_HALF_WIDTH), abs=1e-9)
        assert difference.low == pytest.approx(-0.2775, abs=5e-5)
    else:
        assert (difference.low, difference.high) == pytest.approx(
            (-1.0, -1 + np.sqrt(2) * EQUAL_HALF_WIDTH), abs=1e-9)
        assert difference.high == pytest.approx(-0.6075, abs=5e-5)
    assert margin_check(difference, margin).verdict is verdict


def test_no_shared_item_settles_nothing_and_a_margin_is_from_0_to_1() -> None:
    check = margin_check(None, 0.02)
    assert check.verdict is INCONCLUSIVE
    assert check.to_json() == {"margin": 0.02, "verdict": "INCONCLUSIVE",
                               "candidate_minus_baseline": None, "sequence": None}
    for margin in (-0.01, 1.5, float("nan")):
        with pytest.raises(ValueError, match="from 0 to 1"):
            margin_check(paired_gap(1, 0, 0, 0), margin)


tables = st.tuples(*[st.integers(0, 40)] * 4).filter(lambda t: sum(t) > 0)


@given(tables, st.floats(0, 1), st.floats(0, 1))
def test_a_larger_margin_never_gives_a_harsher_answer(
        table: tuple[int, int, int, int], one: float, other: float) -> None:
    difference = paired_gap(*table)
    order = [WORSE, INCONCLUSIVE, NO_WORSE]
    small, large = sorted((one, other))
    assert (order.index(margin_check(difference, small).verdict)
            <= order.index(margin_check(difference, large).verdict))


@given(tables)
def test_swapping_the_sides_mirrors_the_interval(table: tuple[int, int, int, int]) -> None:
    # compare reads B - A from the table with B's and A's discordant counts swapped
    both, a_only, b_only, neither = table
    a_minus_b, b_minus_a = paired_gap(*table), paired_gap(both, b_only, a_only, neither)
    assert a_minus_b is not None and b_minus_a is not None
    assert (b_minus_a.low, b_minus_a.high) == pytest.approx(
        (-a_minus_b.high, -a_minus_b.low), abs=1e-12)


def test_a_candidate_exactly_at_the_margin_is_called_no_worse_at_most_at_the_level() -> None:
    # 200 shared items; cells (both, candidate only, baseline only, neither) drawn with
    # probabilities (0.70, 0.05, 0.07, 0.18): candidate - baseline is -0.02, the margin.
    # "No worse" is then wrong; the 95% interval's lower bound errs with probability 2.5%
    # (plus 3 standard errors of 4,000 simulated runs: 0.0074).
    rng = np.random.default_rng(31)
    draws = rng.multinomial(200, [0.70, 0.05, 0.07, 0.18], size=4000)
    wrong = np.mean([margin_check(paired_gap(*map(int, d)), 0.02).verdict is NO_WORSE
                     for d in draws])
    assert wrong <= 0.025 + 0.0074
    assert wrong > 0.005  # the gate is not simply mute at the margin


@pytest.mark.parametrize(("gaps", "answer"), [
    ([0.0] * 200, "no worse"),          # within the margin
    ([1.0] * 40, "no worse"),           # better
    ([-1.0] * 40, "worse by more than the margin"),
    ([0.0] * 5, "INCONCLUSIVE"),        # not settled yet
])
def test_a_run_against_the_baseline_answers_from_its_sequence(
        gaps: list[float], answer: str) -> None:
    look = PairedSequence(400, margin=0.05).update(gaps)
    check = sequence_margin_check(paired_gap(1, 0, 0, 0), look, 0.05)
    assert (str(check.verdict), check.sequence, check.margin) == (answer, look, 0.05)
    assert check.to_json()["sequence"] == look.to_json()
    assert Look.from_json(look.to_json()) == look
