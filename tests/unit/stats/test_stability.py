"""Replicate statistics: the seeds' worked examples, edge cases and properties."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.stats import (
    StabilitySummary,
    VarianceComponents,
    replicate_seed,
    replicate_stability,
    wilson_interval,
)
from evalkit.stats._stability import effective_interval, variance_components


def seed_example() -> dict[str, dict[int, bool]]:
    """seeds/000's worked example: 200 items, 2 replicates, 188 and 191 right, 11 unstable.

    188 + 191 = 2 x always-right + 11 gives 184 always right and so 5 always wrong; the 11
    unstable items are right 4 times in replicate 0 and 7 times in replicate 1."""
    table = {f"right-{i}": {0: True, 1: True} for i in range(184)}
    table |= {f"wrong-{i}": {0: False, 1: False} for i in range(5)}
    table |= {f"flip-{i}": {0: i < 4, 1: i >= 4} for i in range(11)}
    return table


def test_seed_worked_example() -> None:
    result = replicate_stability("correct", seed_example())
    assert result.rates == {0: (188, 200), 1: (191, 200)}
    assert result.mean == pytest.approx(0.9475)
    assert round(result.sd, 4) == 0.0106
    assert result.spread == pytest.approx(0.015)
    assert (result.unstable_items, result.repeated_items) == (11, 200)
    components = result.components
    assert components is not None
    # The seed prints six decimals: total is 7.19875 / 199 = 0.0361746...
    assert components.completion == pytest.approx(0.01375, abs=5e-7)
    assert components.item == pytest.approx(0.022425, abs=5e-7)
    assert components.total == pytest.approx(0.036175, abs=5e-7)
    assert components.total == pytest.approx(7.19875 / 199)
    assert (components.trials, components.items, components.estimator) == (2.0, 200,
                                                                           "anova_moment")
    # The seed's reading: four trials halve completion, 10% off the interval width.
    assert components.width_change_if_trials_scaled(2) == pytest.approx(-0.10, abs=0.001)
    document = StabilitySummary.of(result).to_json()
    assert document["rates"] == {"0": [188, 200], "1": [191, 200]}
    assert document["components"]["completion"] == pytest.approx(0.01375)


def test_seed_example_flips_and_noise_floor() -> None:
    result = replicate_stability("correct", seed_example())
    partition = result.partition
    assert (len(partition.always_right), len(partition.always_wrong),
            len(partition.changed), len(partition.seen_once)) == (184, 5, 11, 0)
    (pair,) = result.pairwise
    assert (pair.first, pair.second, pair.shared, pair.disagree) == (0, 1, 200, 11)
    assert result.noise_floor == pytest.approx(0.055)


def test_effective_sample_size_by_hand() -> None:
    result = replicate_stability("correct", seed_example())
    interval = result.interval
    assert interval is not None
    # n_eff = p(1-p) n / total = 0.9475 * 0.0525 * 200 / (7.19875 / 199) = 275.02
    assert interval.n_eff == pytest.approx(0.9475 * 0.0525 * 200 / (7.19875 / 199))
    assert interval.low < 0.9475 < interval.high


def test_effective_interval_is_wilson_at_the_effective_n() -> None:
    # p = 0.6 over 20 items with total = 0.192 gives n_eff = 0.24 * 20 / 0.192 = 25, where
    # the interval must be scipy's Wilson interval for 15 of 25.
    components = VarianceComponents(completion=0.05, item=0.142, total=0.192, trials=2.0,
                                    items=20)
    interval = effective_interval(0.6, components)
    assert interval is not None and interval.n_eff == pytest.approx(25)
    assert (interval.p, interval.confidence) == (0.6, 0.95)  # logged with the interval
    reference = wilson_interval(15, 25)
    assert interval.low == pytest.approx(reference.low, abs=1e-12)
    assert interval.high == pytest.approx(reference.high, abs=1e-12)


def test_all_deterministic_items_give_n_eff_of_about_n() -> None:
    # total = p(1-p) n/(n-1) when every item always gives the same answer: n_eff = n - 1.
    table = {f"i{i}": {0: i < 15, 1: i < 15} for i in range(20)}
    interval = replicate_stability("correct", table).interval
    assert interval is not None and interval.n_eff == pytest.approx(19)


def test_five_runs_with_a_steady_rate_can_still_churn() -> None:
    """seeds/002's lesson in miniature: the totals barely move, the items do."""
    rng = random.Random(7)
    table: dict[str, dict[int, bool]] = {}
    for i in range(800):
        stable = i < 762
        table[f"q{i}"] = {r: (i < 730) if stable else rng.random() < 0.5 for r in range(5)}
    result = replicate_stability("correct", table)
    assert result.spread < 0.05
    assert result.unstable_items > 10 * result.spread * 800 / 5
    assert len(result.pairwise) == 10
    assert result.noise_floor == max(p.rate for p in result.pairwise)


def test_one_replicate() -> None:
    result = replicate_stability("correct", {"a": {0: True}, "b": {0: False}})
    assert result.sd is None and result.spread == 0.0
    assert (result.repeated_items, result.unstable_items) == (0, 0)
    assert result.components is None and result.interval is None
    assert result.pairwise == () and result.noise_floor is None
    assert result.partition.seen_once == ("a", "b")


def test_one_item() -> None:
    result = replicate_stability("correct", {"a": {0: True, 1: False, 2: True}})
    assert result.components is None  # below two items
    assert result.unstable_items == 1
    assert result.sd == pytest.approx(0.5773502691896257)


def test_unbalanced_table_has_fractional_trials() -> None:
    # Replicate 2 lost item c: t = (3, 3, 2), trials = 8/3, pooled df = 2 + 2 + 1 = 5.
    table = {"a": {0: True, 1: True, 2: True}, "b": {0: True, 1: False, 2: True},
             "c": {0: False, 1: False}}
    result = replicate_stability("correct", table)
    assert result.rates == {0: (2, 3), 1: (1, 3), 2: (2, 2)}
    components = result.components
    assert components is not None
    assert components.trials == pytest.approx(8 / 3)
    # within SS: a 0, b 2/3 (mean 2/3: 2 x 1/9 + 4/9), c 0 -> 2/3 / 5 = 2/15
    assert components.completion == pytest.approx((2 / 15) / (8 / 3))
    # item means 1, 2/3, 0 -> sample variance 7/27
    assert components.total == pytest.approx(7 / 27)
    assert result.partition.changed == ("b",)
    pairs = {(p.first, p.second): (p.shared, p.disagree) for p in result.pairwise}
    assert pairs == {(0, 1): (3, 1), (0, 2): (2, 0), (1, 2): (2, 1)}


def test_item_component_is_floored_at_zero() -> None:
    # Every item flips the same way: all the variance is completion noise.
    table = {f"i{i}": {0: True, 1: False} for i in range(10)}
    components = variance_components(table)
    assert components is not None
    assert components.total == 0.0 and components.item == 0.0
    assert components.completion == pytest.approx(0.25)


tables = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=3),
    st.dictionaries(st.integers(0, 4), st.booleans(), min_size=1, max_size=5),
    min_size=1, max_size=30)


@given(tables)
def test_components_are_never_negative(table: dict[str, dict[int, bool]]) -> None:
    components = variance_components(table)
    if components is not None:
        assert components.completion >= 0 and components.item >= 0
        assert components.total >= 0
        assert 1 <= components.trials <= 5


@given(tables, st.randoms(use_true_random=False))
def test_invariant_under_reordering_items_and_replicates(table: dict[str, dict[int, bool]],
                                                         rng: random.Random) -> None:
    before = replicate_stability("m", table)
    items = list(table.items())
    rng.shuffle(items)
    labels = sorted({r for cells in table.values() for r in cells})
    relabel = dict(zip(labels, rng.sample(labels, len(labels)), strict=True))
    reordered = {item: {relabel[r]: v for r, v in cells.items()} for item, cells in items}
    after = replicate_stability("m", reordered)
    for field in ("mean", "spread", "repeated_items", "unstable_items", "noise_floor"):
        assert getattr(after, field) == pytest.approx(getattr(before, field)), field
    if before.sd is not None:
        assert after.sd == pytest.approx(before.sd)
    assert sorted(after.rates.values()) == sorted(before.rates.values())
    if before.components is not None:
        assert after.components is not None
        assert after.components.completion == pytest.approx(before.components.completion)
        assert after.components.item == pytest.approx(before.components.item)
    assert after.partition == before.partition


def test_replicate_seed_follows_the_documented_derivation() -> None:
    import hashlib

    digest = hashlib.sha256(b"0:support-router/golden:1").digest()
    assert replicate_seed(0, "support-router/golden", 1) == int.from_bytes(digest[:8],
                                                                          "big") >> 11
    seeds = {replicate_seed(42, "pack", r) for r in range(100)}
    assert len(seeds) == 100 and all(0 <= s < 2**53 for s in seeds)
    assert replicate_seed(42, "pack", 3) == replicate_seed(42, "pack", 3)
    assert replicate_seed(42, "pack", 3) != replicate_seed(42, "other", 3)
