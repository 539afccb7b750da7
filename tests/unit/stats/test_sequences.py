"""Confidence sequences (evalkit.stats._sequences): the capital worked by hand, the values of
the authors' implementation (``confseq``), properties at every look, coverage by simulation.
Fast."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalkit.stats import (
    MeanSequence,
    PairedSequence,
    Scope,
    SequentialVerdict,
)
from evalkit.stats._betting import BettingSequence
from tools.confseq_reference import LOOKS, series

CONFSEQ = {  # (series, N or None): ((look, low, high), ...): tools/confseq_reference.py
    ('binary', None): (
        (1, 0.000000, 1.000000),
        (2, 0.034000, 1.000000),
        (3, 0.034000, 1.000000),
        (5, 0.194000, 1.000000),
        (10, 0.360000, 1.000000),
        (20, 0.553000, 1.000000),
        (50, 0.633000, 0.941000),
        (100, 0.679000, 0.913000),
        (150, 0.695000, 0.898000),
        (200, 0.708000, 0.889000),
        (250, 0.717000, 0.882000),
        (299, 0.721000, 0.876000),
        (300, 0.722000, 0.876000),
    ),
    ('binary', 300): (
        (1, 0.003333, 1.000000),
        (2, 0.035000, 1.000000),
        (3, 0.035000, 0.996667),
        (5, 0.196000, 0.996667),
        (10, 0.367000, 0.993333),
        (20, 0.561000, 0.990000),
        (50, 0.646000, 0.935000),
        (100, 0.697000, 0.902000),
        (150, 0.719000, 0.881000),
        (200, 0.738000, 0.866000),
        (250, 0.753000, 0.833333),
        (299, 0.796667, 0.800000),
        (300, 0.800000, 0.800000),
    ),
    ('spread', None): (
        (1, 0.000000, 1.000000),
        (2, 0.000000, 1.000000),
        (3, 0.000000, 1.000000),
        (5, 0.117000, 0.844000),
        (10, 0.228000, 0.754000),
        (20, 0.317000, 0.687000),
        (50, 0.386000, 0.615000),
        (100, 0.418000, 0.582000),
        (150, 0.431000, 0.570000),
        (200, 0.437000, 0.561000),
        (250, 0.444000, 0.556000),
        (299, 0.448000, 0.552000),
        (300, 0.448000, 0.552000),
    ),
    ('spread', 300): (
        (1, 0.001381, 0.998047),
        (2, 0.004142, 0.997475),
        (3, 0.004951, 0.994951),
        (5, 0.118000, 0.842000),
        (10, 0.231000, 0.751000),
        (20, 0.322000, 0.681000),
        (50, 0.394000, 0.607000),
        (100, 0.429000, 0.571000),
        (150, 0.446000, 0.555000),
        (200, 0.456000, 0.542000),
        (250, 0.467000, 0.533000),
        (299, 0.498261, 0.501594),
        (300, 0.499141, 0.499141),
    ),
    ('paired', None): (
        (1, 0.000000, 1.000000),
        (2, 0.000000, 1.000000),
        (3, 0.102000, 1.000000),
        (5, 0.148000, 0.907000),
        (10, 0.261000, 0.777000),
        (20, 0.343000, 0.696000),
        (50, 0.427000, 0.638000),
        (100, 0.455000, 0.605000),
        (150, 0.468000, 0.592000),
        (200, 0.476000, 0.586000),
        (250, 0.480000, 0.579000),
        (299, 0.483000, 0.576000),
        (300, 0.484000, 0.576000),
    ),
    ('paired', 300): (
        (1, 0.001667, 0.998333),
        (2, 0.005000, 0.998333),
        (3, 0.103000, 0.996667),
        (5, 0.151000, 0.906000),
        (10, 0.265000, 0.774000),
        (20, 0.348000, 0.691000),
        (50, 0.434000, 0.629000),
        (100, 0.467000, 0.595000),
        (150, 0.482000, 0.578000),
        (200, 0.492000, 0.568000),
        (250, 0.500000, 0.558000),
        (299, 0.526667, 0.530000),
        (300, 0.528333, 0.528333),
    ),
}


def _bet(t: int, variance: float) -> float:
    """The predictable plug-in bet at alpha 0.05: sqrt(2 log 40 / (s2 t log(1 + t)))."""
    return math.sqrt(2 * math.log(40) / (variance * t * math.log1p(t)))


def test_the_bets_worked_by_hand() -> None:
    # s2_0 = 1/4; after x1 = 1: mu^_1 = (1/2 + 1)/2 = 3/4, s2_1 = (1/4 + 1/16)/2 = 5/32;
    # after x2 = 1: mu^_2 = 5/6, s2_2 = (1/4 + 1/16 + 1/36)/3
    assert _bet(1, 0.25) == pytest.approx(6.524985, abs=1e-6)
    assert _bet(2, 5 / 32) == pytest.approx(4.635696, abs=1e-6)
    assert _bet(3, (1 / 4 + 1 / 16 + 1 / 36) / 3) == pytest.approx(3.954738, abs=1e-6)


def test_the_capital_after_three_values_worked_by_hand() -> None:
    # i.i.d., x = 1, 0, 1 at m = 1/2: every bet above the truncation 1/2 / (1/2) = 1, so
    # K+ = 1.5 x 0.5 x 1.5, K- = 0.5 x 1.5 x 0.5
    iid = BettingSequence(0.05, 10, finite=False, grid=1000)
    iid.extend(np.array([1.0, 0.0, 1.0]))
    assert math.exp(iid.log_plus[500]) == pytest.approx(1.125)
    assert math.exp(iid.log_minus[500]) == pytest.approx(0.375)
    # without replacement, N = 4, m = 1/2: the unseen mean mu_t = (4 m - S_{t-1}) / (5 - t)
    # is 1/2, 1/3, 1/2; the bets min(l_t, 1/(2 mu_t)) are 1, 1.5, 1 for K+ and
    # min(l_t, 1/(2 (1 - mu_t))) are 1, 0.75, 1 for K-
    finite = BettingSequence(0.05, 4, finite=True, grid=1000)
    low, high = finite.extend(np.array([1.0, 0.0]))
    assert math.exp(finite.log_plus[500]) == pytest.approx(1.5 * (1 - 1.5 / 3))
    assert math.exp(finite.log_minus[500]) == pytest.approx(0.5 * (1 + 0.75 / 3))
    assert (low[-1], high[-1]) == (0.25, 0.75)  # the deterministic bounds: 1 + 0 + {0, 2}
    low, high = finite.extend(np.array([1.0]))
    assert math.exp(finite.log_plus[500]) == pytest.approx(0.75 * 1.5)
    assert math.exp(finite.log_minus[500]) == pytest.approx(0.625 * 0.5)
    assert (low[-1], high[-1]) == (0.5, 0.75)


def test_a_candidate_mean_leaves_when_its_capital_reaches_two_over_alpha() -> None:
    # three 1s against m = 0.1: bets 5 (truncated: 1/2 / 0.1), 4.6357, 3.9547; K+ after two
    # is 5.5 x 5.172 = 28.4 < 40 = 2/alpha, after three 129.7 >= 40: 0.1 is out at look 3
    sequence = BettingSequence(0.05, 10, finite=False, grid=1000)
    low, _ = sequence.extend(np.ones(3))
    assert math.exp(sequence.log_plus[100]) == pytest.approx(
        (1 + 5 * 0.9) * (1 + 0.9 * _bet(2, 5 / 32))
        * (1 + 0.9 * _bet(3, (1 / 4 + 1 / 16 + 1 / 36) / 3)))
    assert low[1] < 0.1 < low[2]


@pytest.mark.parametrize(("name", "total"), sorted(CONFSEQ, key=str))
def test_the_values_equal_the_authors_implementation(name: str, total: int | None) -> None:
    values = np.array(series()[name])
    sequence = BettingSequence(0.05, len(values), finite=total is not None, grid=1000)
    low, high = sequence.extend(values)
    for look, reference_low, reference_high in CONFSEQ[(name, total)]:
        # confseq prints six decimals; the grid is 1/1000
        assert low[look - 1] == pytest.approx(reference_low, abs=1e-6), look
        assert high[look - 1] == pytest.approx(reference_high, abs=1e-6), look
    assert [look for look, *_ in CONFSEQ[(name, total)]] == list(LOOKS)


def test_one_value_at_a_time_equals_one_batch() -> None:
    values = series()["spread"]
    batch, single = MeanSequence(300, 0.5), MeanSequence(300, 0.5)
    whole = batch.update(values)
    for value in values:
        last = single.update(value)
    assert last == whole


def test_the_whole_dataset_settles_at_its_last_entry_and_the_population_can_end_undecided(
        ) -> None:
    outcomes = [1.0] * 4 + [0.0]  # exactly the threshold
    dataset = MeanSequence(5, 0.8, scope=Scope.DATASET).update(outcomes)
    assert (dataset.low, dataset.high, dataset.verdict) == (0.8, 0.8, SequentialVerdict.PASS)
    assert dataset.settled_at == 4  # four right of five already make 80%, whatever comes
    population = MeanSequence(5, 0.8, scope=Scope.POPULATION)
    assert population.update(outcomes[:4]).verdict is SequentialVerdict.UNSETTLED
    final = population.update(outcomes[4])
    assert final.verdict is SequentialVerdict.INCONCLUSIVE and final.settled_at is None
    assert final.estimate == 0.8 and final.n == final.total == 5


def test_a_verdict_settles_at_the_first_look_that_clears_the_threshold() -> None:
    ones = MeanSequence(1000, 0.5, scope=Scope.POPULATION)
    look = ones.update(np.ones(40))
    low, _ = BettingSequence(0.05, 1000, finite=False, grid=1000).extend(np.ones(40))
    first = int(np.flatnonzero(low >= 0.5)[0]) + 1
    assert look.verdict is SequentialVerdict.PASS and look.settled_at == first
    zeros = MeanSequence(1000, 0.5, scope=Scope.POPULATION).update(np.zeros(40))
    assert zeros.verdict is SequentialVerdict.FAIL and zeros.settled_at == first


@pytest.mark.parametrize(("differences", "verdict"), [
    ([1.0] * 2 + [0.0] * 2, SequentialVerdict.BETTER),
    ([-1.0] * 1 + [0.0] * 3, SequentialVerdict.WORSE),       # -0.25 < -0.2
    ([-1.0] * 1 + [0.0] * 4, SequentialVerdict.WITHIN_MARGIN),  # -0.2: at the margin
    ([0.0] * 5, SequentialVerdict.WITHIN_MARGIN),
])
def test_the_paired_verdicts_at_the_last_entry(differences: list[float],
                                               verdict: SequentialVerdict) -> None:
    look = PairedSequence(len(differences), margin=0.2).update(differences)
    assert look.verdict is verdict and look.low == look.high == look.estimate


def test_a_paired_gap_that_straddles_the_margin_is_inconclusive() -> None:
    look = PairedSequence(50, margin=0.05, scope=Scope.POPULATION).update(
        [1.0, -1.0, 0.0, 0.0, -1.0] * 10)
    assert look.verdict is SequentialVerdict.INCONCLUSIVE
    assert -1 <= look.low < -0.05 < 0 < look.high <= 1


@pytest.mark.parametrize(("make", "message"), [
    (lambda: MeanSequence(0, 0.8), "at least one entry"),
    (lambda: MeanSequence(10, 1.5), "threshold"),
    (lambda: MeanSequence(10, 0.8, confidence=1.0), "confidence"),
    (lambda: MeanSequence(10, 0.8, grid=1), "grid"),
    (lambda: PairedSequence(10, margin=-0.1), "margin"),
    (lambda: MeanSequence(10, 0.8).update([0.5, 1.2]), r"in \[0, 1\]"),
    (lambda: MeanSequence(10, 0.8).update([float("nan")]), r"in \[0, 1\]"),
    (lambda: PairedSequence(10).update([-1.5]), r"in \[-1, 1\]"),
    (lambda: MeanSequence(2, 0.8).update([1.0, 1.0, 1.0]), "3 values for a sequence of 2"),
])
def test_bad_input_is_refused_with_its_reason(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0]) | st.floats(0, 1), min_size=1, max_size=120),
       st.integers(0, 40), st.sampled_from(list(Scope)), st.integers(1, 20))
def test_the_intervals_are_nested_in_range_and_exact_at_the_end(
        values: list[float], extra: int, scope: Scope, batch: int) -> None:
    total = len(values) + (extra if scope is Scope.POPULATION else 0)
    sequence = MeanSequence(total, 0.7, scope=scope, grid=200)
    looks = [sequence.update(values[start:start + batch])
             for start in range(0, len(values), batch)]
    for before, after in zip(looks, looks[1:], strict=False):
        assert 0 <= before.low <= after.low <= after.high <= before.high <= 1
    assert looks[-1].n == len(values)
    if scope is Scope.DATASET:
        assert looks[-1].low == looks[-1].high == pytest.approx(sum(values) / total)
        assert looks[-1].verdict.settled


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=80),
       st.floats(0, 0.5), st.sampled_from(list(Scope)))
def test_the_paired_intervals_are_nested_in_range_and_say_their_verdict(
        differences: list[float], margin: float, scope: Scope) -> None:
    sequence = PairedSequence(len(differences), margin, scope=scope, grid=200)
    looks = [sequence.update(d) for d in differences]
    for before, after in zip(looks, looks[1:], strict=False):
        assert -1 <= before.low <= after.low <= after.high <= before.high <= 1
    for look in looks:
        if look.verdict is SequentialVerdict.BETTER:
            assert look.low > 0
        elif look.verdict is SequentialVerdict.WORSE:
            assert look.high < -margin
        elif look.verdict is SequentialVerdict.WITHIN_MARGIN:
            assert -margin - 1e-12 <= look.low and look.high <= margin + 1e-12
    assert scope is Scope.POPULATION or looks[-1].verdict.settled


RUNS = 300


def _missed(sequence: MeanSequence | PairedSequence, values: np.ndarray, truth: float) -> bool:
    """Whether the interval leaves ``truth`` at some look, fed in batches of 50 (by more than
    the rounding of the paired gap's 2 m - 1)."""
    for start in range(0, len(values), 50):
        look = sequence.update(values[start:start + 50])
        if not look.low - 1e-12 <= truth <= look.high + 1e-12:
            return True
    return False


def _within_level(misses: int) -> None:
    # at most alpha plus three binomial standard errors of the simulation
    assert misses / RUNS <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / RUNS)


@pytest.mark.slow  # seconds of simulation: make test-slow
def test_the_population_interval_covers_at_every_look() -> None:
    rng = np.random.default_rng(31)
    misses = sum(_missed(MeanSequence(400, 0.8, scope=Scope.POPULATION),
                         (rng.random(400) < 0.8).astype(float), 0.8) for _ in range(RUNS))
    _within_level(misses)


@pytest.mark.slow  # seconds of simulation: make test-slow
def test_the_dataset_interval_covers_at_every_look() -> None:
    rng = np.random.default_rng(32)
    dataset = (np.arange(400) < 330).astype(float)  # a fixed dataset, 82.5% right
    misses = sum(_missed(MeanSequence(400, 0.8, scope=Scope.DATASET),
                         rng.permutation(dataset), 0.825) for _ in range(RUNS))
    _within_level(misses)


@pytest.mark.slow  # seconds of simulation: make test-slow
def test_the_paired_intervals_cover_at_every_look() -> None:
    rng = np.random.default_rng(33)
    gaps = np.repeat([1.0, -1.0, 0.0], [50, 30, 320])  # a fixed pair of runs: gap +0.05
    misses = {scope: 0 for scope in Scope}
    for _ in range(RUNS):
        misses[Scope.DATASET] += _missed(PairedSequence(400, 0.05, scope=Scope.DATASET),
                                         rng.permutation(gaps), 0.05)
        draws = rng.choice([1.0, -1.0, 0.0], size=400, p=[0.125, 0.075, 0.8])
        misses[Scope.POPULATION] += _missed(
            PairedSequence(400, 0.05, scope=Scope.POPULATION), draws, 0.05)
    for count in misses.values():
        _within_level(count)
