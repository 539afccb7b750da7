"""The paired gap of two runs over shared items (Newcombe's method 10). Fast."""

from __future__ import annotations

import numpy as np
import pytest

from evalkit.stats import paired_gap


def test_a_published_example() -> None:
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017),
    # chapter 8, Cavo et al. 2012 (59, 6 / 16, 80): the Newcombe square-and-add interval
    # -0.0621 (-0.1186 to -0.0046), as the R package contingencytables tests it.
    gap = paired_gap(59, 6, 16, 80)
    assert gap is not None and gap.items == 161 and gap.gap == pytest.approx(-10 / 161)
    assert (gap.low, gap.high) == pytest.approx((-0.1186, -0.0046), abs=5e-5)


def test_no_shared_item_has_no_gap_and_the_bounds_stay_in_range() -> None:
    assert paired_gap(0, 0, 0, 0) is None
    one = paired_gap(0, 1, 0, 0)
    assert one is not None and one.high == 1.0 and -1 < one.low < 0  # one item says little
    same = paired_gap(3, 0, 0, 0)
    assert same is not None and same.gap == 0 and same.low < 0
    assert same.low == pytest.approx(-same.high)


def test_more_items_with_the_same_split_narrow_the_interval() -> None:
    small, large = paired_gap(8, 12, 2, 8), paired_gap(80, 120, 20, 80)
    assert small is not None and large is not None and small.gap == large.gap
    assert small.low < large.low < large.gap < large.high < small.high


def test_coverage_is_near_nominal() -> None:
    # 40 items, each right in A with 0.7 and in B with 0.6, correlated; 2,000 draws.
    rng = np.random.default_rng(1)
    cell_probabilities = [0.5, 0.2, 0.1, 0.2]  # both right, A only, B only, neither
    truth = 0.2 - 0.1
    covered = 0
    for counts in rng.multinomial(40, cell_probabilities, size=2000):
        gap = paired_gap(*map(int, counts))
        assert gap is not None
        covered += gap.low <= truth <= gap.high
    assert 0.93 <= covered / 2000 <= 0.99
