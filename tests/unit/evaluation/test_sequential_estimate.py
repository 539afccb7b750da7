"""The range of a sequential run before it starts (``--estimate`` with ``--sequential`` or
``SEQUENTIAL``): the simulation against numbers worked with :class:`MeanSequence` by hand,
against the gate itself (one simulated order is the order a real run drew), its outcomes
(a sequential last run's, types it never scored), its seed, and what the estimate shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalkit import Call, ConfigError, Entry, OverBudget, RunContext, Selection, evaluate
from evalkit.calls import plan_run
from evalkit.dataset import load_dataset
from evalkit.evaluation import check_budget, estimate_run
from evalkit.evaluation._sequential_estimate import (
    CountRange,
    recorded_outcomes,
    simulate_sequential,
)
from evalkit.records import ScoredRun, names
from evalkit.stats import MeanSequence, Scope
from evalkit.tracking import Tracker
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset
from tests.unit.evaluation.test_estimate import JUDGED_ENTRIES

PRICES = {"m": (1000.0, 0.0)}  # $0.001 per input token


def _reporting(answers: dict[str, str] | None = None) -> Any:
    """Answers ``a`` (right) unless ``answers`` says otherwise; one input token per call."""
    def component(item: Entry, call: Call) -> str:
        call.record_usage(input_tokens=1, output_tokens=0, model="m")
        return (answers or {}).get(item.id, "a")
    return component


def _entries(count: int) -> dict[str, Any]:
    return {f"e{i:03d}": entry("functional", input=f"q{i}") for i in range(count)}


def _context(tmp_path: Path, tracker: Tracker) -> RunContext:
    return RunContext(tracker=tracker, runs_dir=tmp_path / "runs")


def test_every_entry_right_settles_at_the_look_the_sequence_gives(tmp_path: Path,
                                                                 tracker: Tracker) -> None:
    # 100 entries all right, threshold 0.5, the dataset's question: whatever the order, the
    # sequence fed 1s settles at the same look, so every simulated run calls that many
    settles = MeanSequence(100, 0.5, scope=Scope.DATASET).update([1.0] * 100).settled_at
    assert settles == 9
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", _entries(100)),
                        TOKEN_PRICES=PRICES, MAX_CONCURRENCY=1)
    context = _context(tmp_path, tracker)
    run_id = evaluate(config, _reporting(), Selection("all"), context).run_id
    estimate = estimate_run(config, Selection("all", sequential="dataset"), context=context)
    sequential = estimate.sequential
    assert sequential is not None
    assert sequential.entries_called == CountRange(9, 9, 9)
    assert sequential.component_calls == CountRange(9, 9, 9)
    assert sequential.judge_calls == CountRange(0, 0, 0)
    # every call cost $0.001: no spread, nine calls $0.009
    assert sequential.cost is not None
    assert (sequential.cost.low, sequential.cost.estimate, sequential.cost.high) == \
        pytest.approx((0.009, 0.009, 0.009))
    assert (sequential.scored_units, sequential.drawn_units) == (100, 0)
    assert estimate.lines()[-2:] == [
        "estimate: sequential (dataset): 9 of 100 entries (median 9), 9 component calls; "
        "$0.0090",
        f"estimate: sequential: 5-95% of 200 simulated orders of run {run_id}'s outcomes"]
    doc = estimate.to_json()
    assert doc["sequential"]["entries_called"] == {"median": 9, "low": 9, "high": 9}
    assert doc["sequential_cost_usd"] == {"estimate": pytest.approx(0.009),
                                          "low": pytest.approx(0.009),
                                          "high": pytest.approx(0.009)}
    # the full run's estimate is unchanged beside it
    assert estimate.component.calls == 100


def test_calls_in_flight_add_a_type_s_units_past_its_settling_one(
        tmp_path: Path, tracker: Tracker) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", _entries(100)),
                        MAX_CONCURRENCY=4)
    context = _context(tmp_path, tracker)
    evaluate(config, _reporting(), Selection("all"), context)
    estimate = estimate_run(config, Selection("all", sequential="dataset"), context=context)
    assert estimate.sequential is not None
    # 3 more in flight, in the median and the high end; the low end is one call at a time
    assert estimate.sequential.entries_called == CountRange(12, 9, 12)
    assert "4 calls in flight (MAX_CONCURRENCY) included" in estimate.lines()[-1]


def test_a_type_at_its_threshold_may_read_the_whole_dataset(tmp_path: Path,
                                                            tracker: Tracker) -> None:
    # 50 of 100 right at threshold 0.5: the exact accuracy is the threshold, which only the
    # last look proves, or the 99th when the last entry is a wrong one (50 right seen)
    answers = {f"e{i:03d}": "x" for i in range(50)}
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", _entries(100)),
                        MAX_CONCURRENCY=1)
    context = _context(tmp_path, tracker)
    evaluate(config, _reporting(answers), Selection("all"), context)
    estimate = estimate_run(config, Selection("all", sequential="dataset"), context=context)
    assert estimate.sequential is not None
    assert estimate.sequential.entries_called.high == 100
    assert estimate.sequential.entries_called.median >= 99


def test_one_simulated_order_is_the_order_the_gate_draws_from_the_same_seed(
        tmp_path: Path, tracker: Tracker) -> None:
    """The simulation drives the gate's own design: a real sequential run (entries, repeats,
    bias groups) calls exactly the entries one simulated order from the run's seed calls."""
    entries = {**{f"f{i:02d}": entry("functional", input=f"q{i}") for i in range(40)},
               **{f"r{i:02d}": entry("repeatability", input=f"r{i}") for i in range(30)},
               **{f"b{i:02d}{v}": entry("bias", bias_group=f"g{i:02d}", input=f"{v} {i}")
                  for i in range(20) for v in "xy"}}
    answers = RecordingComponent({f"r{i:02d}": (lambda e, c: f"x{c.repeat}")
                                  for i in range(0, 30, 3)})
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", entries), REPEAT_COUNT=3,
                        MAX_CONCURRENCY=1, EVAL_MIN_ACCURACY=0.9, EVAL_MIN_ACCURACY_BIAS=0.5)
    context = _context(tmp_path, tracker)
    full = evaluate(config, answers, Selection("all"), context)
    real = evaluate(config, answers, Selection("all", sequential="dataset"), context)
    assert real.sequential is not None
    scored = ScoredRun.from_json(tracker.reader.read_json(full.run_id, names.EVALUATION_ARTIFACT))
    plan = plan_run(load_dataset(config.dataset_path),
                    Selection("all", sequential="dataset"), config)
    simulated = simulate_sequential(plan, config, recorded_outcomes(scored),
                                    full.run_id, from_sequential=False,
                                    seed=real.sequential.seed, runs=1)
    assert real.sequential.entries_called < len(plan.items)  # it stopped early
    assert simulated.entries_called.median == real.sequential.entries_called
    assert simulated.component_calls.median == real.sequential.calls_made


def test_the_same_estimate_twice_gives_the_same_range_and_another_seed_another(
        tmp_path: Path, tracker: Tracker) -> None:
    answers = {f"e{i:03d}": "x" for i in range(0, 200, 6)}  # 83% right, threshold 0.7
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", _entries(200)),
                        EVAL_MIN_ACCURACY=0.7, MAX_CONCURRENCY=1)
    context = _context(tmp_path, tracker)
    evaluate(config, _reporting(answers), Selection("all"), context)
    selection = Selection("all", sequential="dataset")
    first = estimate_run(config, selection, context=context).sequential
    assert first is not None
    assert first == estimate_run(config, selection, context=context).sequential
    assert first.entries_called.low < first.entries_called.median < first.entries_called.high
    reseeded = config_for(tmp_path, config.dataset_path, EXPERIMENT_NAME=config.experiment_name,
                          EVAL_MIN_ACCURACY=0.7, MAX_CONCURRENCY=1, ROOT_SEED=7)
    assert estimate_run(reseeded, selection, context=context).sequential != first


def test_a_sequential_last_run_lends_the_outcomes_of_the_entries_it_called(
        tmp_path: Path, tracker: Tracker) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", _entries(100)),
                        MAX_CONCURRENCY=1, SEQUENTIAL=True)
    context = _context(tmp_path, tracker)
    last = evaluate(config, _reporting(), Selection("all"), context)  # SEQUENTIAL applies
    assert last.sequential is not None and last.sequential.entries_called == 9
    estimate = estimate_run(config, Selection("all"), context=context)
    sequential = estimate.sequential
    assert sequential is not None and sequential.from_sequential
    assert (sequential.scored_units, sequential.drawn_units) == (9, 91)
    # every outcome it has is 1, so every drawn one is too: the same look as before
    assert sequential.entries_called == CountRange(9, 9, 9)
    assert (f"estimate: sequential: run {last.run_id} was sequential: its outcomes on the 9 "
            "units it called, those of the other 91 drawn from them") in estimate.lines()
    # the full run's estimate rests on the 9 calls it made
    assert estimate.component.sampled == 9 and estimate.component.calls == 100


def test_a_type_never_scored_reads_every_unit_and_the_judge_counts_follow(
        tmp_path: Path) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", JUDGED_ENTRIES),
                        SCORER="llm_judge", JUDGE_MODEL="judge", MAX_CONCURRENCY=1)
    plan = plan_run(load_dataset(config.dataset_path), Selection("all", sequential="dataset"),
                    config)
    simulated = simulate_sequential(plan, config, {}, "abc", from_sequential=False, seed=1)
    # every unit read: 7 entries called once; the judge asked about 3 entries and twice about
    # each of the 2 bias groups (once for the stopping rule, once when the run is scored)
    assert simulated.entries_called == CountRange(7, 7, 7)
    assert simulated.component_calls == CountRange(7, 7, 7)
    assert simulated.judge_calls == CountRange(7, 7, 7)
    assert simulated.unread_types == ("bias", "functional")
    assert simulated.lines()[-1] == ("estimate: sequential: run abc scored no bias, "
                                     "functional: taken to read every unit")


def test_without_an_earlier_run_there_is_no_range_and_the_budget_holds_the_full_run(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", _entries(100))
    config = config_for(tmp_path, dataset, TOKEN_PRICES=PRICES, MAX_CONCURRENCY=1)
    context = _context(tmp_path, tracker)
    selection = Selection("all", sequential="dataset")
    assert estimate_run(config, selection, context=context).sequential is None
    evaluate(config, _reporting(), Selection("all"), context)
    # the full run costs $0.100; a sequential one $0.009: a limit of $0.05 refuses it, since
    # a sequential run may read every entry
    limited = config_for(tmp_path, dataset, EXPERIMENT_NAME=config.experiment_name,
                         TOKEN_PRICES=PRICES, MAX_COST_USD=0.05)
    with pytest.raises(OverBudget, match=r"estimated to cost \$0\.10"):
        check_budget(limited, selection, context=context)
    with pytest.raises(ConfigError, match="cannot be used with --replicates"):
        estimate_run(config, selection, True, context)


def test_near_the_threshold_most_simulated_orders_read_most_of_two_thousand_entries(
        tmp_path: Path) -> None:
    entries = {f"e{i:04d}": entry("functional", input=f"q{i}") for i in range(2000)}
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", entries),
                        EVAL_MIN_ACCURACY=0.8)
    plan = plan_run(load_dataset(config.dataset_path), Selection("all", sequential="dataset"),
                    config)
    right = np.arange(2000) < 1640  # 82% right at 0.8: most orders read most entries
    outcomes = {"functional": {frozenset([f"e{i:04d}"]): bool(r) for i, r in enumerate(right)}}
    simulated = simulate_sequential(plan, config, outcomes, "abc", from_sequential=False,
                                    seed=1)
    assert simulated.entries_called.high > simulated.entries_called.median
