"""The cost of a run before it starts (``--estimate``) and while it runs (``MAX_COST_USD``): the
arithmetic against hand-worked numbers, the calls counted from the plan, and the spending rule.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit import (
    BudgetExhausted,
    Call,
    ConfigError,
    Entry,
    EvalConfig,
    OverBudget,
    RunContext,
    Selection,
    Stop,
    evaluate,
)
from evalkit.evaluation import check_budget, estimate_run
from evalkit.evaluation._prediction import Spread, predicted_total, summed
from evalkit.evaluation._spending import Spending
from evalkit.records import TokenPrice, TokenUsage
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset

# --- the arithmetic, worked by hand ----------------------------------------------------------
# Student's t quantiles at 0.975 from a printed table (e.g. NIST/SEMATECH e-Handbook, 1.3.6.7.2):
# 2 degrees of freedom 4.303, 3 degrees 3.182.


def test_a_total_of_three_calls_from_three_samples() -> None:
    # mean 2, s 1; half-width 4.3027 * 1 * sqrt(3 * (1 + 3/3)) = 4.3027 * 2.4495 = 10.539
    spread = predicted_total([1.0, 2.0, 3.0], 3)
    assert spread.estimate == 6.0
    assert spread.low == 0.0  # 6 - 10.539, clamped: a cost is never negative
    assert spread.high == pytest.approx(16.539, abs=1e-3)


def test_a_total_whose_interval_stays_above_zero() -> None:
    # mean 5, s = sqrt(4/3) = 1.1547; half-width 3.1824 * 1.1547 * sqrt(4 * 2) = 10.394
    spread = predicted_total([4.0, 6.0, 4.0, 6.0], 4)
    assert spread.estimate == 20.0
    assert spread.low == pytest.approx(9.606, abs=1e-3)
    assert spread.high == pytest.approx(30.394, abs=1e-3)


def test_a_larger_run_than_the_sample_widens_by_the_uncertain_mean() -> None:
    # 8 calls from 4 samples: sqrt(8 * (1 + 8/4)) = sqrt(24) = 4.899; 3.1824 * 1.1547 * 4.899
    spread = predicted_total([4.0, 6.0, 4.0, 6.0], 8)
    assert spread.estimate == 40.0
    assert spread.high == pytest.approx(40 + 18.003, abs=1e-3)


def test_one_sample_gives_an_estimate_without_a_spread() -> None:
    assert predicted_total([0.25], 4) == Spread(1.0, None, None)
    with pytest.raises(ValueError, match="no call"):
        predicted_total([], 3)


def test_parts_add_their_estimates_and_their_half_widths_in_quadrature() -> None:
    # half-widths 3 and 4: sqrt(9 + 16) = 5
    total = summed([Spread(10.0, 7.0, 13.0), Spread(5.0, 1.0, 9.0)])
    assert total == Spread(15.0, 10.0, 20.0)
    assert summed([Spread(10.0, 7.0, 13.0), Spread(2.0, None, None)]) == Spread(12.0, None, None)


@given(st.lists(st.floats(0, 1e3, allow_nan=False), min_size=2, max_size=40),
       st.integers(1, 10_000))
def test_the_interval_holds_the_estimate_and_scales_with_the_calls(
        samples: list[float], calls: int) -> None:
    spread = predicted_total(samples, calls)
    assert spread.estimate == pytest.approx(calls * sum(samples) / len(samples))
    assert spread.low is not None and spread.high is not None
    assert 0.0 <= spread.low <= spread.estimate + 1e-9 <= spread.high + 2e-9
    if len(set(samples)) == 1:  # every call alike: nothing to spread
        assert spread.high == pytest.approx(spread.estimate)
    wider = predicted_total(samples, calls + 1)
    assert wider.high is not None
    assert wider.high - wider.estimate >= spread.high - spread.estimate - 1e-9


@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=2, max_size=20))
def test_the_half_width_is_the_student_formula(samples: list[float]) -> None:
    from scipy.stats import t  # an independent check of the quantile the module computes

    n = len(samples)
    mean = sum(samples) / n
    s = math.sqrt(sum((x - mean) ** 2 for x in samples) / (n - 1))
    spread = predicted_total(samples, n)
    assert spread.high == pytest.approx(n * mean + t.ppf(0.975, n - 1) * s * math.sqrt(2 * n),
                                        rel=1e-9, abs=1e-9)


def test_the_interval_covers_a_future_total_at_its_level() -> None:
    """For normal per-call figures the interval is exact: over 4,000 simulated pairs of a
    last run (n = 12 calls) and a next one (N = 30 calls), 95% of the next totals fall inside.
    The binomial error of 4,000 runs at 0.95 is 0.0034: the band is four of it either way."""
    import random

    rng = random.Random(31)
    covered = 0
    runs = 4000
    for _ in range(runs):
        last = [rng.gauss(10.0, 3.0) for _ in range(12)]
        spread = predicted_total(last, 30)
        future = sum(rng.gauss(10.0, 3.0) for _ in range(30))
        covered += spread.contains(future)
    assert 0.936 <= covered / runs <= 0.964


# --- the spending rule -----------------------------------------------------------------------

PRICE = {"m": TokenPrice(1000.0, 0.0)}  # $0.001 per input token


def test_spending_stops_before_the_call_expected_to_pass_the_limit() -> None:
    # 5 tokens a call: $0.005. Limit $0.022: after 4 calls $0.020 + $0.005 expected > $0.022.
    stop = Stop()
    spending = Spending(0.022, PRICE, stop, planned_calls=10)
    for made in range(1, 5):
        assert not stop.requested, f"stopped after {made - 1} calls"
        spending.add([TokenUsage(5, 0, "m")])
    assert spending.exhausted and stop.requested
    assert spending.spent_usd == pytest.approx(0.020) and spending.calls == 4


def test_spending_counts_calls_without_usage_as_free_and_never_stops_without_a_limit() -> None:
    stop = Stop()
    spending = Spending(None, PRICE, stop, planned_calls=1000)
    for _ in range(100):
        spending.add([TokenUsage(1000, 0, "m")])
    spending.add([])
    spending.add([TokenUsage(10**6, 0, "unpriced")])
    assert spending.spent_usd == pytest.approx(100.0) and spending.calls == 102
    assert not spending.exhausted and not stop.requested


def test_spending_never_stops_after_the_last_planned_call() -> None:
    # $0.001, $0.001, then $0.010 against $0.005: after the second, $0.002 + $0.001 expected
    # is under it; the third passes it, and with none to come there is nothing to stop
    def three_calls(planned: int) -> tuple[Spending, Stop]:
        stop = Stop()
        spending = Spending(0.005, PRICE, stop, planned_calls=planned)
        for tokens in (1, 1, 10):
            spending.add([TokenUsage(tokens, 0, "m")])
        return spending, stop

    spending, stop = three_calls(3)
    assert spending.spent_usd == pytest.approx(0.012)
    assert not spending.exhausted and not stop.requested
    spending, stop = three_calls(4)  # $0.012 + $0.004 expected: a fourth is not started
    assert spending.exhausted and stop.requested
    assert spending.stopped_at_usd == pytest.approx(0.012)


def test_spending_asks_to_stop_once() -> None:
    stop = Stop()
    spending = Spending(0.001, PRICE, stop, planned_calls=10)
    for _ in range(3):
        spending.add([TokenUsage(5, 0, "m")])
    assert stop.requested and not stop.abandons  # a second request would abandon calls


# --- the calls of the plan, the usage of the last run ----------------------------------------

def _reporting() -> Any:
    """A component that reports one input token per word of its entry's input."""
    def component(entry: Entry, call: Call) -> str:
        call.record_usage(input_tokens=len(str(entry.input).split()), output_tokens=2,
                          model="m")
        return "a"
    return component


ENTRIES = {"e1": entry("functional", input="one two"),
           "e2": entry("functional", input="one two three four"),
           "e3": entry("functional", "repeatability", input="one")}


def test_with_no_earlier_run_the_estimate_counts_calls_only(tmp_path: Path,
                                                            tracker: Tracker) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", ENTRIES),
                        TOKEN_PRICES={"m": (1000.0, 0.0)})
    estimate = estimate_run(config, Selection("all"), context=RunContext(tracker=tracker))
    assert (estimate.entries, estimate.component.calls, estimate.judge.calls) == (3, 6, 0)
    assert estimate.based_on is None and estimate.cost is None and estimate.tokens is None
    assert estimate.lines() == [
        "estimate: 3 entries, 6 component calls; nothing was called",
        "estimate: no earlier finished run in this experiment: calls only"]
    replicated = estimate_run(config, Selection("all"), True, RunContext(tracker=tracker))
    assert (replicated.runs, replicated.component.calls) == (2, 12)


def test_the_estimate_of_a_rerun_is_the_cost_the_last_run_logged(tmp_path: Path,
                                                                 tracker: Tracker) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", ENTRIES),
                        TOKEN_PRICES={"m": (1000.0, 0.0)})
    context = RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
    logged = evaluate(config, _reporting(), Selection("all"), context).usage
    estimate = estimate_run(config, Selection("all"), context=context)
    # calls: e1 2 tokens, e2 4, e3 four times 1 (REPEAT_COUNT 4): 10 tokens, $0.010
    assert logged.cost_usd == pytest.approx(0.010)
    assert estimate.component.sampled == 6 and estimate.judge.sampled == 0
    assert estimate.cost is not None and estimate.tokens is not None
    assert estimate.cost.estimate == pytest.approx(0.010)
    assert estimate.tokens.estimate == pytest.approx(10 + 6 * 2)  # inputs and outputs
    assert estimate.cost.contains(0.010)
    assert estimate.based_on is not None
    shown = "\n".join(estimate.lines())
    assert "$0.010 [" in shown and "95% prediction intervals" in shown
    # --type=functional: one call per entry, predicted from the same six (mean $0.010 / 6)
    smaller = estimate_run(config, Selection("functional"), context=context)
    assert smaller.component.calls == 3
    assert smaller.cost is not None and smaller.cost.estimate == pytest.approx(0.005)


def test_a_run_over_the_limit_is_refused_before_it_starts(tmp_path: Path,
                                                          tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", ENTRIES)
    config = config_for(tmp_path, dataset, TOKEN_PRICES={"m": (1000.0, 0.0)})
    context = RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
    evaluate(config, _reporting(), Selection("all"), context)
    limited = config_for(tmp_path, dataset, EXPERIMENT_NAME=config.experiment_name,
                         TOKEN_PRICES={"m": (1000.0, 0.0)}, MAX_COST_USD=0.009)
    with pytest.raises(OverBudget, match=r"estimated to cost \$0\.010 .*MAX_COST_USD = "
                                         r"0\.009: nothing was started.*--ignore-estimate"):
        check_budget(limited, Selection("all"), context=context)
    roomy = config_for(tmp_path, dataset, EXPERIMENT_NAME=config.experiment_name,
                       TOKEN_PRICES={"m": (1000.0, 0.0)}, MAX_COST_USD=0.011)
    assert check_budget(roomy, Selection("all"), context=context) is not None


def test_a_run_stops_for_budget_and_says_what_it_spent(tmp_path: Path,
                                                       tracker: Tracker) -> None:
    entries = {f"e{i}": entry("functional", input="a b c d e") for i in range(10)}
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", entries),
                        TOKEN_PRICES={"m": (1000.0, 0.0)}, MAX_COST_USD=0.022,
                        MAX_CONCURRENCY=1)
    context = RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
    with pytest.raises(BudgetExhausted) as stopped:
        evaluate(config, _reporting(), Selection("all"), context)
    message = str(stopped.value)
    assert "stopped for budget" in message and "spent $0.020 on 4 calls" in message
    assert "MAX_COST_USD = 0.022" in message and "--resume" in message
    (run,) = tracker.reader.runs(config.experiment_name)
    assert run.status == "KILLED" and run.tags["stopped_for"] == "budget"
    assert run.tags["budget_spent_usd"] == "0.02 of 0.022"
    assert len(tracker.reader.raw_results(run.run_id).records) == 4


JUDGED_ENTRIES = {"f1": entry("functional"), "f2": entry("functional"),
                  "f3": entry("functional"),
                  "b1": entry("bias", bias_group="g", input="x"),
                  "b2": entry("bias", bias_group="g", input="y"),
                  "b3": entry("bias", bias_group="h", input="x"),
                  "b4": entry("bias", bias_group="h", input="y")}
"""Three functional entries and two bias groups of two variants, for the judge's counts."""

def test_judge_calls_are_counted_per_judged_item_and_repeat(tmp_path: Path,
                                                            tracker: Tracker) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", JUDGED_ENTRIES),
                        SCORER="llm_judge", JUDGE_MODEL="judge", JUDGE_REPEATS=3)
    estimate = estimate_run(config, Selection("all"), context=RunContext(tracker=tracker))
    # 3 functional entries + 2 bias groups, each asked 3 times
    assert (estimate.component.calls, estimate.judge.calls) == (7, 15)
    assert "15 judge calls at most" in estimate.lines()[0]


def test_a_last_run_without_usage_or_prices_says_what_is_missing(tmp_path: Path,
                                                                 tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", ENTRIES)
    context = RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
    silent = config_for(tmp_path, dataset)
    run_id = evaluate(silent, lambda entry, call: "a", Selection("all"), context).run_id
    estimate = estimate_run(silent, Selection("all"), context=context)
    assert estimate.based_on == run_id and estimate.cost is None
    assert estimate.lines()[1] == (f"estimate: the last finished run ({run_id}) recorded no "
                                   "token usage: calls only")
    unpriced = config_for(tmp_path, dataset, EXPERIMENT_NAME=silent.experiment_name)
    evaluate(unpriced, _reporting(), Selection("all"), context)
    tokens_only = estimate_run(unpriced, Selection("all"), context=context)
    assert tokens_only.tokens is not None and tokens_only.cost is None
    assert tokens_only.tokens.estimate == pytest.approx(22)
    assert tokens_only.lines()[-1] == ("estimate: no cost: TOKEN_PRICES prices none of the "
                                       "models the calls reported")
    priced_elsewhere = config_for(tmp_path, dataset, EXPERIMENT_NAME=silent.experiment_name,
                                  TOKEN_PRICES={"other": (1.0, 1.0)})
    assert "TOKEN_PRICES prices no 'm'" in estimate_run(
        priced_elsewhere, Selection("all"), context=context).lines()[-1]


def test_the_constants_are_checked_before_an_invalid_dataset(tmp_path: Path,
                                                             tracker: Tracker) -> None:
    (tmp_path / "ds").mkdir()  # no README, no schema: invalid
    config = EvalConfig.read_constants({  # as eval.py's command line reads them
        "EXPERIMENT_NAME": "cost/tests", "DATASET_PATH": str(tmp_path / "ds"),
        "EVAL_MIN_ACCURACY": 0.5, "SCORER": "no-such-scorer"}, "eval.py")
    with pytest.raises(ConfigError, match="SCORER='no-such-scorer' is not a scorer"):
        estimate_run(config, Selection("all"), context=RunContext(tracker=tracker))


def test_the_modules_examples_hold() -> None:
    import doctest

    from evalkit.evaluation import _prediction, _spending

    for module in (_prediction, _spending):
        result = doctest.testmod(module)
        assert result.attempted and not result.failed, module.__name__
