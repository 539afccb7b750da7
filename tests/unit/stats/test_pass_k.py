"""pass@k and pass^k over replicates: worked by hand, against brute force over k-subsets, and
their properties."""

from __future__ import annotations

import math
import statistics
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.stats import pass_at_k, pass_hat_k, pass_k, replicate_stability

Table = dict[str, dict[int, bool]]


def hand_table() -> Table:
    """a right 3 of 3, b 2 of 3, c 0 of 3, d 1 of 2 (replicate 2 lost it)."""
    return {"a": {0: True, 1: True, 2: True}, "b": {0: True, 1: False, 2: True},
            "c": {0: False, 1: False, 2: False}, "d": {0: True, 1: False}}


def test_pass_k_worked_by_hand() -> None:
    # Per item (n, c) and its estimates, C(a, k) = 0 when a < k:
    #   k = 1: pass@1 = pass^1 = c/n: a 1, b 2/3, c 0, d 1/2; mean (6 + 4 + 0 + 3)/6/4 = 13/24
    #   k = 2: pass@2 = 1 - C(n-c, 2)/C(n, 2): a 1 - 0/3 = 1, b 1 - C(1,2)/3 = 1, c 1 - 3/3 = 0,
    #          d 1 - C(1,2)/C(2,2) = 1; mean 3/4
    #          pass^2 = C(c, 2)/C(n, 2): a 3/3 = 1, b 1/3, c 0, d C(1,2)/1 = 0; mean (4/3)/4 = 1/3
    #   k = 3: d has n = 2 < 3 and is left out (3 items). pass@3: a 1, b 1 - C(1,3)/1 = 1, c 0;
    #          mean 2/3. pass^3: a 1, b C(2,3) = 0, c 0; mean 1/3
    result = pass_k(hand_table())
    assert [(row.k, row.items) for row in result.by_k] == [(1, 4), (2, 4), (3, 3)]
    assert [row.pass_at.value for row in result.by_k] == pytest.approx([13 / 24, 3 / 4, 2 / 3])
    assert [row.pass_hat.value for row in result.by_k] == pytest.approx([13 / 24, 1 / 3, 1 / 3])


def test_pass_k_intervals_worked_by_hand() -> None:
    # k = 3, pass^3 over (1, 0, 0): p = 1/3; squares about p (2/3)^2 + 2 (1/3)^2 = 2/3, plus the
    # pseudo-items' p^2 + (1-p)^2 = 5/9: 11/9; s^2 = (11/9)/(m + 1) = 11/36;
    # n_eff = p(1-p) m / s^2 = (2/9)(3)(36/11) = 24/11 = 2.181818.
    # Wilson at n = 24/11, z = 1.9599640, z^2/n = 1.7606686:
    # centre = (p + z^2/2n)/(1 + z^2/n) = 1.2136676/2.7606686 = 0.4396282,
    # half = z/(1 + z^2/n) sqrt(p(1-p)/n + z^2/4n^2) = 0.7099599 x sqrt(0.3035951) = 0.3911841:
    # [0.0484440, 0.8308123].
    result = pass_k(hand_table())
    hat = result.at(3).pass_hat
    assert hat.n_eff == pytest.approx(24 / 11)
    assert (hat.low, hat.high) == pytest.approx((0.0484440, 0.8308123), abs=2e-7)
    # k = 1 over (1, 2/3, 0, 1/2): p = 13/24, squares (121 + 9 + 169 + 1)/576 = 300/576, plus
    # (169 + 121)/576: 590/576; s^2 = 590/576/5, p(1-p) = 143/576,
    # n_eff = (143/576)(4)(5)/(590/576) = 2860/590 = 4.847458.
    assert result.at(1).pass_at.n_eff == pytest.approx(2860 / 590)


def test_all_or_nothing_items_give_wilson_near_the_item_count() -> None:
    # Items right in every replicate or in none: 3 of 5 items, values 0/1, p = 0.6;
    # squares 5 x 0.24 = 1.2, plus 0.36 + 0.16: 1.72; s^2 = 1.72/6;
    # n_eff = 0.24 x 5 x 6/1.72 = 4.186047, and Wilson's interval for 0.6 at that n.
    table = {f"i{i}": dict.fromkeys(range(4), i < 3) for i in range(5)}
    row = pass_k(table).at(4)
    n = 0.24 * 5 * 6 / 1.72
    assert row.pass_hat.n_eff == pytest.approx(n)
    assert row.pass_hat.value == row.pass_at.value == pytest.approx(0.6)
    z2 = 1.959963984540054 ** 2
    centre = (0.6 + z2 / (2 * n)) / (1 + z2 / n)
    half = math.sqrt(z2) / (1 + z2 / n) * math.sqrt(0.24 / n + z2 / (4 * n * n))
    assert (row.pass_hat.low, row.pass_hat.high) == pytest.approx((centre - half, centre + half))


def test_no_spread_gives_wilson_at_the_item_count() -> None:
    every = pass_k({f"i{i}": {0: True, 1: True} for i in range(10)}).at(2).pass_hat
    assert (every.value, every.n_eff, every.high) == (1.0, 10.0, 1.0)
    assert every.low == pytest.approx(10 / (10 + 1.959963984540054 ** 2))  # Wilson for 10/10
    none = pass_k({f"i{i}": {0: False} for i in range(4)}).at(1).pass_at
    assert (none.value, none.n_eff, none.low) == (0.0, 4.0, 0.0)


def test_homogeneous_items_count_for_more_than_their_number() -> None:
    # every item right 2 of 4 times: the items do not differ, only their tries do. k = 1:
    # values all 1/2, squares 0, plus 1/4 + 1/4; s^2 = (1/2)/11; n_eff = (1/4)(10)(11)/(1/2) = 55
    table = {f"i{i}": {0: True, 1: False, 2: True, 3: False} for i in range(10)}
    assert pass_k(table).at(1).pass_at.n_eff == pytest.approx(55)


def test_the_item_estimators_against_every_k_subset() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            tries = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(combinations(tries, k))
                assert pass_at_k(n, c, k) == pytest.approx(
                    sum(any(s) for s in subsets) / len(subsets), abs=1e-15)
                assert pass_hat_k(n, c, k) == pytest.approx(
                    sum(all(s) for s in subsets) / len(subsets), abs=1e-15)


@pytest.mark.parametrize(("n", "c", "k", "message"), [
    (3, 4, 1, "right tries must lie in [0, 3], got 4"),
    (3, -1, 1, "right tries must lie in [0, 3], got -1"),
    (3, 1, 0, "k must lie in [1, 3] (the item's tries), got 0"),
    (3, 1, 4, "k must lie in [1, 3] (the item's tries), got 4"),
])
def test_an_estimate_outside_its_item_is_refused(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)")):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_an_empty_table_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one scored item"):
        pass_k({"a": {}})


def test_an_unbalanced_table_need_not_be_monotone() -> None:
    # the means at k = 1 and k = 2 are over different items: a (n = 1) counts only at k = 1
    result = pass_k({"a": {0: False}, "b": {0: True, 1: True}})
    assert (result.at(1).pass_hat.value, result.at(2).pass_hat.value) == (0.5, 1.0)


cells = st.dictionaries(st.integers(0, 5), st.booleans(), min_size=1, max_size=6)
tables = st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), cells, min_size=1,
                         max_size=10)


@st.composite
def balanced_tables(draw: st.DrawFn) -> Table:
    replicates = draw(st.integers(1, 6))
    rows = draw(st.lists(st.lists(st.booleans(), min_size=replicates, max_size=replicates),
                         min_size=1, max_size=12))
    return {f"i{i}": dict(enumerate(row)) for i, row in enumerate(rows)}


@given(tables)
def test_the_closed_form_equals_brute_force_over_k_subsets(table: Table) -> None:
    result = pass_k(table)
    for row in result.by_k:
        tried = [list(cells.values()) for cells in table.values() if len(cells) >= row.k]
        at = [statistics.fmean(any(s) for s in combinations(t, row.k)) for t in tried]
        hat = [statistics.fmean(all(s) for s in combinations(t, row.k)) for t in tried]
        assert row.items == len(tried)
        assert row.pass_at.value == pytest.approx(statistics.fmean(at), abs=1e-12)
        assert row.pass_hat.value == pytest.approx(statistics.fmean(hat), abs=1e-12)
    assert len(result.by_k) == max(len(cells) for cells in table.values())


@given(tables)
def test_every_figure_lies_in_its_interval_inside_0_1(table: Table) -> None:
    for row in pass_k(table).by_k:
        assert row.pass_hat.value <= row.pass_at.value
        for mean in (row.pass_at, row.pass_hat):
            assert 0.0 <= mean.low <= mean.value <= mean.high <= 1.0
            assert mean.n_eff > 0


@given(balanced_tables())
def test_over_a_balanced_table_pass_at_rises_and_pass_hat_falls_with_k(table: Table) -> None:
    rows = pass_k(table).by_k
    for before, after in zip(rows, rows[1:], strict=False):
        assert after.pass_at.value >= before.pass_at.value - 1e-12
        assert after.pass_hat.value <= before.pass_hat.value + 1e-12
    accuracy = statistics.fmean(v for cells in table.values() for v in cells.values())
    assert rows[0].pass_at.value == pytest.approx(accuracy)
    assert rows[0].pass_hat.value == pytest.approx(accuracy)
    assert rows[0].pass_at.value == pytest.approx(replicate_stability("m", table).mean)


@given(tables)
def test_a_stability_holds_the_pass_k_of_its_table(table: Table) -> None:
    assert replicate_stability("m", table).reliability == pass_k(table)
    assert replicate_stability("m", table, 0.8).reliability == pass_k(table, 0.8)
