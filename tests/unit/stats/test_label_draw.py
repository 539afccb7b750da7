"""The draw of entries for people to label: stratified by the judge's verdict, seeded,
with the inclusion probabilities the corrected accuracy weighs labels by."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.stats._label_draw import draw_for_labels

VERDICTS = {f"p{i:02d}": True for i in range(40)} | {f"f{i}": False for i in range(6)}


def test_half_among_passes_half_among_failures_the_rest_to_the_other() -> None:
    draw = draw_for_labels(VERDICTS, 10, seed=7)
    assert dict(draw.entries) == {True: 40, False: 6}
    assert [len(draw.of(True)), len(draw.of(False))] == [5, 5]
    assert {d.inclusion_probability for d in draw.of(True)} == {5 / 40}
    assert {d.inclusion_probability for d in draw.of(False)} == {5 / 6}
    # 20 asked, 6 failures: every failure (probability 1) and 14 passes
    wide = draw_for_labels(VERDICTS, 20, seed=7)
    assert [len(wide.of(True)), len(wide.of(False))] == [14, 6]
    assert {d.inclusion_probability for d in wide.of(False)} == {1.0}
    everything = draw_for_labels(VERDICTS, 100, seed=7)
    assert sorted(d.entry_id for d in everything.drawn) == sorted(VERDICTS)


def test_the_same_seed_draws_the_same_entries_and_another_seed_others() -> None:
    first = draw_for_labels(VERDICTS, 10, seed=7)
    assert first == draw_for_labels(dict(reversed(VERDICTS.items())), 10, seed=7)
    assert first.drawn != draw_for_labels(VERDICTS, 10, seed=8).drawn
    assert first.seed == 7


def test_each_entry_of_a_verdict_is_drawn_equally_often() -> None:
    # over 3000 seeds each pass is drawn 3000 x 5/40 = 375 times (binomial sd 18)
    counts = Counter(d.entry_id for seed in range(3000)
                     for d in draw_for_labels(VERDICTS, 10, seed).of(True))
    assert len(counts) == 40
    assert all(375 - 75 < c < 375 + 75 for c in counts.values())


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot draw -1 entries"):
        draw_for_labels(VERDICTS, -1, seed=0)


@given(st.dictionaries(st.text(min_size=1, max_size=4), st.booleans(), max_size=30),
       st.integers(0, 40), st.integers(0, 10))
def test_a_draw_never_repeats_an_entry_and_takes_min_of_n_and_all(
        verdicts: dict[str, bool], n: int, seed: int) -> None:
    draw = draw_for_labels(verdicts, n, seed)
    ids = [d.entry_id for d in draw.drawn]
    assert len(ids) == len(set(ids)) == min(n, len(verdicts))
    for d in draw.drawn:
        assert verdicts[d.entry_id] is d.verdict
        assert d.inclusion_probability == len(draw.of(d.verdict)) / draw.entries[d.verdict]


def test_an_odd_label_goes_to_the_more_common_verdict_and_draws_are_pinned() -> None:
    fewer_passes = {f"p{i}": True for i in range(6)} | {f"f{i:02d}": False for i in range(40)}
    odd = draw_for_labels(fewer_passes, 7, seed=1)
    assert [len(odd.of(True)), len(odd.of(False))] == [3, 4]
    odd_other_way = draw_for_labels(VERDICTS, 7, seed=1)  # passes are the common verdict
    assert [len(odd_other_way.of(True)), len(odd_other_way.of(False))] == [4, 3]
    # a recorded draw must be drawn again the same on any machine and release
    assert [d.entry_id for d in draw_for_labels(VERDICTS, 10, seed=7).drawn] == [
        "p37", "p31", "p14", "p11", "p21", "f2", "f5", "f3", "f0", "f4"]
