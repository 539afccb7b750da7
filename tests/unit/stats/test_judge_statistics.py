"""The judge measured against people: agreement (rates, kappa, AC1) and the corrected accuracy
(PPI++, stratified PPI, Rogan-Gladen with the Lang-Reiczigel interval).

Reference values: worked by hand in the comments, ``ppi-python`` (a test-only dependency) for
PPI++, and the ``irrCAC`` package (Gwet's own, run once outside this suite because it pins an
old scipy) for kappa and AC1. Fast: among the tests ``make mutation`` runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.stats._agreement import agreement, cohens_kappa, gwets_ac1
from evalkit.stats._corrected import (
    Stratum,
    labels_for_half_width,
    labels_missing,
    ppi_mean,
    rogan_gladen,
    stratified_ppi_mean,
)

Z95 = 1.959963984540054


def pairs_of(both_pass: int, both_fail: int, judge_only: int,
             person_only: int) -> list[tuple[bool, bool]]:
    """(judge, person) verdicts: agreeing passes and failures, then each kind of disagreement."""
    return ([(True, True)] * both_pass + [(False, False)] * both_fail
            + [(True, False)] * judge_only + [(False, True)] * person_only)


def test_kappa_and_ac1_by_hand_when_the_answers_are_balanced() -> None:
    # p_a = 30/40 = 0.75; each rater passes half: p_e = 0.5 for both coefficients, so both are
    # (0.75 - 0.5)/0.5 = 0.5. Every item's chance share is 0.5, so its linearised value is
    # (a_i - 0.5)/0.5 = +1 (30 agreements) or -1 (10): sum of squares about 0.5 is
    # 30 x 0.25 + 10 x 2.25 = 30, Var = 30/(40 x 39), SE = 0.138675.
    pairs = pairs_of(15, 15, 5, 5)
    for coefficient in (cohens_kappa(pairs), gwets_ac1(pairs)):
        assert coefficient is not None
        assert (coefficient.value, coefficient.chance) == (pytest.approx(0.5), 0.5)
        assert coefficient.standard_error == pytest.approx(math.sqrt(30 / (40 * 39)))
        # t(39) 97.5% = 2.022691
        assert coefficient.low == pytest.approx(0.5 - 2.022691 * 0.138675, abs=1e-6)
        assert coefficient.high == pytest.approx(0.5 + 2.022691 * 0.138675, abs=1e-6)


def test_kappa_collapses_and_ac1_does_not_when_nearly_everything_passes() -> None:
    # irrCAC 0.4.4 (CAC(...).conger() and .gwet(), digits=10) on the same 40 pairs.
    pairs = pairs_of(30, 3, 5, 2)
    kappa, ac1 = cohens_kappa(pairs), gwets_ac1(pairs)
    assert kappa is not None and ac1 is not None
    assert (kappa.value, kappa.chance, kappa.standard_error) == (
        pytest.approx(0.3636363636), pytest.approx(0.725), pytest.approx(0.1910063518))
    assert (kappa.low, kappa.high) == (pytest.approx(-0.0227104482, abs=1e-8),
                                       pytest.approx(0.7499831754, abs=1e-8))
    assert (ac1.value, ac1.chance, ac1.standard_error) == (
        pytest.approx(0.7595534564), pytest.approx(0.2721875), pytest.approx(0.0965174124))
    assert (ac1.low, ac1.high) == (pytest.approx(0.5643285636, abs=1e-8),
                                   pytest.approx(0.9547783492, abs=1e-8))


def test_no_kappa_when_both_gave_one_answer_throughout_and_none_from_one_pair() -> None:
    assert cohens_kappa(pairs_of(10, 0, 0, 0)) is None  # p_e = 1
    # AC1's chance agreement is 2 pi (1 - pi) = 0 there: full agreement, AC1 = 1
    ac1 = gwets_ac1(pairs_of(10, 0, 0, 0))
    assert ac1 is not None and (ac1.value, ac1.low, ac1.high) == (1.0, 1.0, 1.0)
    assert cohens_kappa(pairs_of(1, 0, 0, 0)) is None and gwets_ac1([]) is None


def test_agreement_rates_and_prevalence() -> None:
    found = agreement(pairs_of(30, 3, 5, 2))
    c = found.confusion
    assert (c.tp, c.tn, c.fp, c.fn) == (30, 3, 5, 2)
    assert found.labels == 40 and found.prevalence == pytest.approx(32 / 40)
    assert found.tpr is not None and (found.tpr.successes, found.tpr.n) == (30, 32)
    assert found.tnr is not None and (found.tnr.successes, found.tnr.n) == (3, 8)
    assert found.precision is not None and (found.precision.successes,
                                            found.precision.n) == (30, 35)
    assert found.tpr.low < 30 / 32 < found.tpr.high  # Wilson, checked in test_statistics
    passes_only = agreement(pairs_of(4, 0, 0, 0))
    assert passes_only.tnr is None and passes_only.kappa is None  # no failure labelled
    assert agreement([]).prevalence is None


def test_ppi_plus_plus_equals_ppi_python_at_95_percent() -> None:
    import ppi_py  # here, not at collection: it takes seconds to import (numba)

    rng = np.random.default_rng(1)
    for accuracy, tpr, tnr, n in ((0.7, 0.9, 0.8, 100), (0.95, 0.85, 0.7, 30),
                                  (0.5, 0.95, 0.95, 300)):
        truth = rng.random(2000) < accuracy
        judge = np.where(truth, rng.random(2000) < tpr, rng.random(2000) >= tnr).astype(float)
        labelled = np.zeros(2000, dtype=bool)
        labelled[rng.choice(2000, n, replace=False)] = True
        y = truth[labelled].astype(float)
        ours = ppi_mean(y, judge[labelled], judge[~labelled])
        low, high = ppi_py.ppi_mean_ci(y, judge[labelled], judge[~labelled], alpha=0.05)
        assert (ours.low, ours.high) == (pytest.approx(float(low[0])),
                                         pytest.approx(float(high[0])))
        assert ours.estimate == pytest.approx(float(ppi_py.ppi_mean_pointestimate(
            y, judge[labelled], judge[~labelled])[0]))
        assert 0 <= (ours.power_tuning or 0) <= 1 and (ours.labels, ours.entries) == (n, 2000)


def test_ppi_by_hand_and_a_judge_with_one_verdict() -> None:
    # Y = (1, 0, 1, 1), f = (1, 0, 0, 1), f~ = (1, 1, 0, 1): Ybar = 0.75, fbar = 0.5,
    # cov = (0.25·0.5 + (-0.75)(-0.5) + 0.25(-0.5) + 0.25·0.5)/4 = 0.125; s² over the eight
    # verdicts (five passes) = 8 x (5/8)(3/8)/7 = 0.267857; lambda = 0.125/(2 x 0.267857)
    # = 0.233333; theta = 0.2333 x 0.75 + mean(Y - 0.2333 f) = 0.175 + 0.633333 = 0.808333.
    found = ppi_mean([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1])
    assert found.power_tuning == pytest.approx(0.233333, abs=1e-6)
    assert found.estimate == pytest.approx(0.808333, abs=1e-6)
    residual = np.array([1, 0, 1, 1]) - 0.2333333333 * np.array([1, 0, 0, 1])
    se = math.sqrt(0.2333333333 ** 2 * 0.1875 / 4 + residual.var() / 4)
    assert found.standard_error == pytest.approx(se)
    constant = ppi_mean([1, 0, 1, 1], [1, 1, 1, 1], [1, 1])  # nothing to borrow
    assert constant.power_tuning == 0.0 and constant.estimate == 0.75
    with pytest.raises(ValueError, match="two or more labels"):
        ppi_mean([1], [1], [1, 0])


def test_stratified_ppi_by_hand() -> None:
    # 80 entries judged pass, 20 fail; ten labels drawn in each: 8 of the passes and 2 of the
    # failures are passes to a person. theta = 0.8 x 0.8 + 0.2 x 0.2 = 0.68. Smoothed shares
    # 8.5/11 and 2.5/11 have the same p(1-p) = 0.175620: labels 0.68 x 0.175620/10 = 0.0119421;
    # entries (0.8 x 0.12² + 0.2 x 0.48²)/100 = 0.000576; V = 0.0125181, SE = 0.111885.
    # Effective n = 0.68 x 0.32/V = 17.3828; Wilson at p = 0.68, n = 17.3828, z = 1.959964:
    # centre (0.68 + z²/2n)/(1 + z²/n), half z/(1 + z²/n) sqrt(p(1-p)/n + z²/4n²)
    # = [0.446310, 0.848532].
    found = stratified_ppi_mean({True: Stratum(80, [True] * 8 + [False] * 2),
                                 False: Stratum(20, [True] * 2 + [False] * 8)})
    assert found is not None
    assert found.estimate == pytest.approx(0.68)
    assert found.standard_error == pytest.approx(0.1118845, abs=1e-7)
    assert (found.low, found.high) == (pytest.approx(0.4463099, abs=1e-7),
                                       pytest.approx(0.8485322, abs=1e-7))
    assert (found.labels, found.entries, found.method) == (20, 100, "stratified PPI")
    # a stratum with entries and fewer than two labels: no estimate
    assert stratified_ppi_mean({True: Stratum(80, [True] * 5),
                                False: Stratum(20, [False])}) is None
    # a verdict given to one entry only, that entry labelled: the stratum is known whole, as
    # labels_missing promises (25 passes, 19 labelled; the one failure a pass to a person)
    one = {True: Stratum(25, [True] * 19), False: Stratum(1, [True])}
    assert labels_missing(one) == {True: 0, False: 0}
    single = stratified_ppi_mean(one)
    assert single is not None and (single.estimate, single.labels) == (1.0, 20)
    assert stratified_ppi_mean({True: Stratum(25, [True] * 19), False: Stratum(1, [])}) is None
    # a verdict the judge never gave needs no labels
    only = stratified_ppi_mean({True: Stratum(50, [True, False]), False: Stratum(0, [])})
    assert only is not None and only.estimate == 0.5
    # every label a pass: Wilson at the labels' count, below 1 and up to 1
    perfect = stratified_ppi_mean({True: Stratum(90, [True] * 10),
                                   False: Stratum(10, [True] * 10)})
    assert perfect is not None and perfect.estimate == 1.0
    assert perfect.high == 1.0 and perfect.low == pytest.approx(0.8389, abs=1e-4)  # 20/20


@given(st.integers(2, 30), st.integers(2, 30), st.integers(0, 30), st.integers(0, 30))
def test_stratified_ppi_with_every_entry_judged_right_is_the_raw_accuracy(
        passes: int, failures: int, labelled_passes: int, labelled_failures: int) -> None:
    # a judge people agree with everywhere: the corrected accuracy is the judge's own
    labelled_passes, labelled_failures = max(2, labelled_passes), max(2, labelled_failures)
    found = stratified_ppi_mean({True: Stratum(passes, [True] * labelled_passes),
                                 False: Stratum(failures, [False] * labelled_failures)})
    assert found is not None
    assert found.estimate == pytest.approx(passes / (passes + failures))
    assert found.low <= found.estimate <= found.high


def test_rogan_gladen_with_the_lang_reiczigel_interval_by_hand() -> None:
    # 70 of 100 entries judged pass; Se = 45/50 = 0.9, Sp = 40/50 = 0.8:
    # theta = (0.7 + 0.8 - 1)/(0.9 + 0.8 - 1) = 0.714286. Primed: Se' = 46/52, Sp' = 41/52,
    # AP' = (70 + z²/2)/(100 + z²) = 0.692609, theta' = 0.714722; shift 2z²(...) = 0.003749;
    # V = 0.0073152; interval 0.714722 + 0.003749 ± 1.959964 x 0.085529 = [0.550837, 0.886104].
    found = rogan_gladen(70, 100, (45, 50), (40, 50))
    assert found is not None
    assert found.estimate == pytest.approx(0.5 / 0.7)
    assert found.standard_error == pytest.approx(math.sqrt(0.0073152127))
    assert (found.low, found.high) == (pytest.approx(0.5508366, abs=1e-6),
                                       pytest.approx(0.8861042, abs=1e-6))
    assert rogan_gladen(70, 100, (25, 50), (25, 50)) is None  # Se + Sp = 1: no information
    assert rogan_gladen(70, 100, (45, 50), (0, 0)) is None
    clipped = rogan_gladen(5, 100, (45, 50), (40, 50))  # AP below 1 - Sp: clipped to 0
    assert clipped is not None and clipped.estimate == 0.0 and clipped.low == 0.0


def test_label_budget_by_hand() -> None:
    # 800 entries judged pass, 200 fail, 8 of 10 and 2 of 10 labels pass (as above, ten times
    # the entries): V* = (0.05/1.959964)² = 0.00065080, F = 0.0576/1000 = 0.0000576;
    # sum W sigma = sqrt(0.175620) = 0.419071, n = 0.175620/0.00059320 = 296.05:
    # 0.8 n = 236.8 -> 237 among the passes, 0.2 n = 59.2 -> 60 among the failures.
    strata = {True: Stratum(800, [True] * 8 + [False] * 2),
              False: Stratum(200, [True] * 2 + [False] * 8)}
    budget = labels_for_half_width(strata, 0.05)
    assert budget is not None
    assert dict(budget.needed) == {True: 237, False: 60}
    assert (budget.total, budget.more) == (297, 277)
    # the same shares over 100 entries: the entries alone hold the interval wider
    assert labels_for_half_width({True: Stratum(80, strata[True].labels),
                                  False: Stratum(20, strata[False].labels)}, 0.05) is None
    # a generous target: the minimum per verdict, never more than its entries
    easy = labels_for_half_width({True: Stratum(800, [True] * 12), False: Stratum(5, [])}, 0.4)
    assert easy is not None and dict(easy.needed) == {True: 10, False: 5}
    assert easy.more == 5


def test_two_pairs_are_enough_and_the_names_and_level_are_kept() -> None:
    agreeing = pairs_of(1, 1, 0, 0)  # p_a = 1, p_e = 0.5 for both: each coefficient is 1
    for coefficient, name in ((cohens_kappa(agreeing), "Cohen's kappa"),
                              (gwets_ac1(agreeing), "Gwet's AC1")):
        assert coefficient is not None
        assert (coefficient.name, coefficient.value, coefficient.low) == (name, 1.0, 1.0)
    assert gwets_ac1(pairs_of(1, 0, 0, 0)) is None  # one pair
    pairs = pairs_of(15, 15, 5, 5)
    at_90 = agreement(pairs, confidence=0.9)
    assert at_90.kappa == cohens_kappa(pairs, 0.9) and at_90.ac1 == gwets_ac1(pairs, 0.9)
    assert at_90.kappa is not None and at_90.kappa.confidence == 0.9
    assert at_90.kappa.high - at_90.kappa.value == pytest.approx(1.684875 * 0.1386750, rel=1e-5)
    for rate in (at_90.tpr, at_90.tnr, at_90.precision):
        assert rate is not None and rate.confidence == 0.9


def test_ppi_refuses_what_it_cannot_estimate_and_takes_the_smallest_it_can() -> None:
    message = "PPI needs two or more labels, a verdict for each, and unlabelled entries"
    for labels, judged, rest in (([1], [1], [1, 0]), ([1, 0], [1], [1, 0]), ([1, 0], [1, 0], [])):
        with pytest.raises(ValueError) as refused:
            ppi_mean(labels, judged, rest)
        assert str(refused.value) == message
    smallest = ppi_mean([1, 0], [1, 0], [1])  # two labels, one unlabelled entry
    assert (smallest.labels, smallest.entries, smallest.method) == (2, 3, "PPI++")
    assert smallest.confidence == 0.95


def test_ppi_power_tuning_is_clipped_to_one() -> None:
    # the labelled verdicts vary with the labels while nearly every other verdict passes:
    # cov = 0.25 against s² of about 0.004, lambda unclipped about 60
    found = ppi_mean([1, 0, 1, 0], [1, 0, 1, 0], [1] * 1000)
    assert found.power_tuning == 1.0
    assert found.estimate == pytest.approx(1.0 + 0.5 - 0.5)


def test_stratified_ppi_by_hand_when_weights_and_shares_differ() -> None:
    # 70 entries judged pass, 30 fail; 9 of 10 and 3 of 10 labels pass: theta = 0.63 + 0.09
    # = 0.72. Smoothed 9.5/11 and 3.5/11: labels 0.49 x 0.117769/10 + 0.09 x 0.216942/10
    # = 0.0077232; entries (0.7 x 0.18² + 0.3 x 0.42²)/100 = 0.000756; V = 0.0084791.
    strata = {True: Stratum(70, [True] * 9 + [False]), False: Stratum(30, [True] * 3 + [False] * 7)}
    found = stratified_ppi_mean(strata)
    assert found is not None and found.estimate == pytest.approx(0.72)
    assert found.standard_error == pytest.approx(0.0920822, abs=1e-7)
    assert (found.low, found.high) == (pytest.approx(0.5191697, abs=1e-7),
                                       pytest.approx(0.8596284, abs=1e-7))
    at_90 = stratified_ppi_mean(strata, confidence=0.9)
    assert at_90 is not None and at_90.confidence == 0.9
    assert (at_90.low, at_90.high) == (pytest.approx(0.5522576, abs=1e-7),
                                       pytest.approx(0.8427889, abs=1e-7))
    # every label a fail: Wilson at the labels' count, from 0 (0 of 20: [0, 0.161125])
    none = stratified_ppi_mean({True: Stratum(10, [False] * 10), False: Stratum(90, [False] * 10)})
    assert none is not None and (none.estimate, none.low) == (0.0, 0.0)
    assert none.high == pytest.approx(0.1611252, abs=1e-7)
    assert stratified_ppi_mean({True: Stratum(0, []), False: Stratum(0, [])}) is None


def test_rogan_gladen_edges() -> None:
    found = rogan_gladen(70, 100, (45, 50), (40, 50), confidence=0.9)
    assert found is not None
    assert (found.method, found.confidence, found.labels, found.entries) == (
        "Rogan-Gladen (Lang-Reiczigel interval)", 0.9, 100, 100)
    assert rogan_gladen(0, 0, (45, 50), (40, 50)) is None  # no entries
    assert rogan_gladen(70, 100, (0, 0), (40, 50)) is None  # no label people passed
    single = rogan_gladen(1, 1, (1, 1), (1, 1))  # one of each is enough to compute
    assert single is not None and single.estimate == 1.0
    # a pass rate above what Se and Sp allow: (1 + 0.8 - 1)/0.7 = 1.14, clipped to 1
    above = rogan_gladen(100, 100, (45, 50), (40, 50))
    assert above is not None and above.estimate == 1.0 and above.high == 1.0


def test_label_budget_for_a_verdict_without_labels_yet() -> None:
    # 500 and 500 entries, 8 of 10 labels pass among the judge's passes, none drawn among its
    # failures (p = 1/2 there): theta = 0.65, F = 0.0225/1000; W sigma = 0.5 x 0.419071 and
    # 0.5 x 0.5, n = 0.459536²/(0.00065080 - 0.0000225) = 336.1: 154 and 183.
    budget = labels_for_half_width({True: Stratum(500, [True] * 8 + [False] * 2),
                                    False: Stratum(500, [])}, 0.05)
    assert budget is not None
    assert dict(budget.needed) == {True: 154, False: 183} and budget.more == 327
    assert (budget.half_width, budget.confidence) == (0.05, 0.95)


def test_a_budget_of_exactly_every_entry_is_still_a_budget() -> None:
    # 112 and 28 entries with the shares above: a half-width of 0.08 needs exactly all of them
    budget = labels_for_half_width({True: Stratum(112, [True] * 8 + [False] * 2),
                                    False: Stratum(28, [True] * 2 + [False] * 8)}, 0.08)
    assert budget is not None and dict(budget.needed) == {True: 112, False: 28}


def test_agreement_intervals_stay_within_minus_one_and_one() -> None:
    # 8 agree on pass, 1 on fail, 1 disagrees: c + t x SE passes 1 for both coefficients
    pairs = [(True, True)] * 8 + [(False, False)] + [(True, False)]
    ac1, kappa = gwets_ac1(pairs), cohens_kappa(pairs)
    assert ac1 is not None and kappa is not None
    assert ac1.value + 2.262 * ac1.standard_error > 1 and ac1.high == 1.0
    assert kappa.value + 2.262 * kappa.standard_error > 1 and kappa.high == 1.0
    # ten disagreements on a two-way split: kappa -1 with no spread, its bound -1
    opposed = [(True, False)] * 5 + [(False, True)] * 5
    worst = cohens_kappa(opposed)
    assert worst is not None and (worst.value, worst.low) == (-1.0, -1.0)
    wide = cohens_kappa([(True, False)] * 4 + [(False, True)] * 3 + [(True, True)] * 2
                        + [(False, False)])
    assert wide is not None and wide.value - 2.262 * wide.standard_error < -1
    assert wide.low == -1.0
