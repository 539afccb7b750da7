"""``evalkit compare A B`` in this process over a store in memory: what it prints and its exit
status for ordinary runs, replicate-backed runs, undecided items and a floor too high. Fast."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from evalkit.cli._compare import compare_status, render_comparison
from evalkit.records import SeriesItems, names
from evalkit.review._compare import CorrectedGap, MetricComparison, Side
from evalkit.stats import StabilityDocument
from evalkit.tracking import Tracker
from tests.support.commands import evalkit_command
from tests.unit.review.test_compare_sides import Store, cells, evaluation, item, summary


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Store:
    store = Store()
    monkeypatch.setattr("evalkit.cli._main._reachable", lambda: Tracker(backend=store.backend))
    return store


@pytest.fixture
def command(store: Store, capsys: pytest.CaptureFixture[str]) -> Any:
    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = evalkit_command("compare", *args)
        captured = capsys.readouterr()
        return status, captured.out, captured.err
    return run


def ordinary(store: Store, name: str, verdicts: dict[str, bool]) -> str:
    right = sum(verdicts.values()) / len(verdicts)
    return store.run(name, {"test_types": "functional"}, {"functional_accuracy": right},
                     evaluation(functional=tuple(item(i, v) for i, v in verdicts.items())))


def series(store: Store, name: str, floor_pairs: tuple[tuple[int, int], ...],
           rows: dict[str, tuple[bool | None, ...]]) -> str:
    documents = {
        names.STABILITY_ARTIFACT: StabilityDocument(
            "pack", 0, (1, 2), (summary("functional_accuracy", *floor_pairs),)).to_json(),
        names.STABILITY_ITEMS_ARTIFACT: SeriesItems(
            {"functional": {i: cells(*v) for i, v in rows.items()}}).to_json()}
    return store.run(name, {"test_types": "functional", "mode": "replicates"},
                     {"functional_accuracy": 0.5}, documents)


def test_two_ordinary_runs_show_the_gap_with_its_paired_interval_and_exit_0(
        store: Store, command: Any) -> None:
    a = ordinary(store, "a", {"w": True, "x": True, "y": True, "z": False})
    b = ordinary(store, "b", {"w": True, "x": False, "y": False, "z": False})
    status, out, _ = command(a, b)
    assert status == 0, out
    assert "gap +0.500; noise floor none (no replicates)" in out
    assert "  over the 4 shared items: gap +0.500 [" in out
    assert "(95%, paired; item sampling only" in out
    assert "  items flipped over 4 shared: 2 right in A only, 0 right in B only" in out
    assert out.rstrip().endswith(
        "verdict: not gated: no noise floor measured (no replicates); run replicates "
        "(python eval.py --replicates) to gate it")
    assert "undecided" not in out


def test_a_gap_inside_a_measured_floor_is_refused_with_exit_5(store: Store,
                                                            command: Any) -> None:
    a = series(store, "a", ((10, 2),), {"x": (True, True), "y": (True, False)})
    b = ordinary(store, "b", {"x": False, "y": True})
    status, out, _ = command(a, b)
    assert status == 5, out
    assert "noise floor 20.00% (a gap must exceed 40.00%)" in out
    # y split evenly over A's two replicates: out of the flips, and said so.
    assert "  items flipped over 1 shared: 1 right in A only, 0 right in B only" in out
    assert "  1 undecided item(s) left out: a replicate series split evenly on them" in out
    assert "over the 1 shared items" not in out  # a floor gates it: no ungated interval
    assert "verdict: inside the noise" in out


def test_a_floor_twice_which_reaches_100_percent_says_add_items_or_replicates(
        store: Store, command: Any) -> None:
    a = series(store, "a", ((3, 2),), {"x": (True, True, False)})
    b = ordinary(store, "b", {"x": True})
    status, out, _ = command(a, b)
    assert status == 5
    assert ("noise floor 66.67%: too high to ever call a winner (a gap would have to exceed "
            "100%): add items or replicates") in out
    assert "133.33%" not in out


def test_runs_without_a_common_test_type_are_a_usage_error(store: Store, command: Any) -> None:
    a = ordinary(store, "a", {"x": True})
    b = store.run("b", {"test_types": "smoke"}, {"smoke_accuracy": 1.0},
                  evaluation(smoke=(item("x", True),)))
    status, _, err = command(a, b)
    assert status == 2 and "share no test type" in err


@pytest.mark.parametrize(("floor", "gated"), [(None, False), (0.05, True)])
def test_the_corrected_gap_is_said_to_be_gated_only_against_a_measured_floor(
        floor: float | None, gated: bool) -> None:
    result = MetricComparison("functional", 0.9, 0.7, floor, 10, ("a", "b"), (),
                              corrected=CorrectedGap(0.25, 0.05, 0.152, 0.348))
    a = Side("a" * 32, "exp / A", {}, {}, {})
    text = render_comparison(a, replace(a, run_id="b" * 32), (result,))
    corrected = next(line for line in text.splitlines() if "corrected by people" in line)
    assert corrected.startswith("  corrected by people's labels: gap +0.250 [+0.152, +0.348]")
    assert ("the noise gate applies to this gap" in corrected) is gated


def test_a_type_that_changed_decides_the_exit_status_beside_one_inside_the_noise(
        store: Store, command: Any) -> None:
    # smoke is the same on both sides (inside the noise); functional clears its floor.
    rows = {f"f{i}": (True, True) for i in range(10)}
    documents = {
        names.STABILITY_ARTIFACT: StabilityDocument("pack", 0, (1, 2), (
            summary("functional_accuracy", (10, 0)),
            summary("smoke_accuracy", (10, 1)))).to_json(),
        names.STABILITY_ITEMS_ARTIFACT: SeriesItems(
            {"functional": {i: cells(*v) for i, v in rows.items()},
             "smoke": {"s": cells(True, True)}}).to_json()}
    a = store.run("a", {"test_types": "functional,smoke", "mode": "replicates"},
                  {"functional_accuracy": 1.0, "smoke_accuracy": 1.0}, documents)
    b = store.run("b", {"test_types": "functional,smoke"},
                  {"functional_accuracy": 0.5, "smoke_accuracy": 1.0},
                  evaluation(functional=tuple(item(i, i < "f5") for i in rows),
                             smoke=(item("s", True),)))
    status, out, _ = command(a, b)
    assert status == 0, out
    assert "verdict: A better" in out and "verdict: inside the noise" in out


def test_each_runs_tokens_and_cost_follow_its_line(store: Store, command: Any) -> None:
    metered = store.run("a", {"test_types": "functional"},
                        {"functional_accuracy": 1.0, "tokens_total": 450, "cost_usd": 0.0006},
                        evaluation(functional=(item("x", True),)))
    plain = ordinary(store, "b", {"x": True})
    status, out, _ = command(metered, plain)
    a_line, b_line = out.splitlines()[2:4]
    assert a_line == f"A: {metered} ({store.experiment} / a); 450 tokens, $0.00060"
    assert b_line == f"B: {plain} ({store.experiment} / b)"  # it reported no usage
    status, out, _ = command(metered, plain, "--json")
    doc = json.loads(out)
    assert doc["a"]["usage"] == {"tokens": 450, "cost_usd": 0.0006, "judge_tokens": None,
                                 "judge_cost_usd": None}
    assert doc["b"]["usage"]["tokens"] is None


@pytest.mark.parametrize(("gaps", "status"), [
    # (gap, floor) per type -> exit status
    ([(0.5, 0.1), (0.0, 0.1)], 0),  # A better beside an unchanged type
    ([(-0.5, 0.1), (0.0, 0.1)], 0),  # A worse beside an unchanged type
    ([(0.1, 0.1), (0.0, 0.1)], 5),  # nothing clears the floor
    ([(0.1, 0.1), (0.3, None)], 5),  # an ungated gap beside one inside the noise decides nothing
    ([(0.3, None), (0.0, None)], 0),  # no replicates: shown, not gated
    ([], 2),
])
def test_the_exit_status_follows_the_types_that_changed(
        gaps: list[tuple[float, float | None]], status: int) -> None:
    results = tuple(MetricComparison(f"t{k}", 0.5 + gap, 0.5, floor, 10, (), ())
                    for k, (gap, floor) in enumerate(gaps))
    assert compare_status(results) == status


@pytest.mark.parametrize("status", ["KILLED", "FAILED", "RUNNING"])
def test_a_run_that_did_not_finish_is_refused_naming_its_resume(
        store: Store, command: Any, capsys: pytest.CaptureFixture[str], status: str) -> None:
    finished = ordinary(store, "finished", {"x": True, "y": False})
    stopped = store.backend.create_run(store.experiment_id, "stopped",
                                       {"test_types": "functional"}).run_id
    store.backend.set_status(stopped, status)  # stopped before its results were written
    code, out, err = command(stopped, finished)
    assert (code, out) == (2, "")
    assert err == (f"error: run {stopped} did not finish ({status}): its results were never "
                   "written, so there is nothing to read yet; finish it first: evalkit resume "
                   f"{stopped} (--script PATH for a script other than ./eval.py; or python "
                   f"eval.py --resume {stopped}), then try again\n")
    # a replicate of a series is not resumed: it is run again
    replicate = store.backend.create_run(store.experiment_id, "replicate", {
        "test_types": "functional", names.PARENT_RUN_TAG: finished}).run_id
    store.backend.set_status(replicate, "KILLED")
    assert command(finished, replicate)[2].endswith(
        "nothing to read yet; it cannot be resumed: run it again\n")


# --- --margin: B (the candidate) no worse than A (the baseline) by more than a margin ----------

TEN = [f"f{i}" for i in range(10)]


@pytest.mark.parametrize(("b_right", "margin", "status", "answer"), [
    # ten shared items right in A. B right on all ten: B - A 0 [-0.2775, +0.2775]
    (10, "0.3", 0, "no worse: the interval lies above -0.300"),
    (10, "functional=0.25", 5, "INCONCLUSIVE: the interval holds -0.250"),
    # B right on none: B - A -1 [-1, -0.6075]
    (0, "0.6", 1, "worse by more than the margin: the interval lies below -0.600"),
])
def test_the_margin_gives_three_answers_and_their_exit_statuses(
        store: Store, command: Any, b_right: int, margin: str, status: int,
        answer: str) -> None:
    a = ordinary(store, "a", dict.fromkeys(TEN, True))
    b = ordinary(store, "b", {i: k < b_right for k, i in enumerate(TEN)})
    code, out, _ = command(a, b, "--margin", margin)
    assert code == status, out
    gap = "+0.000 [-0.278, +0.278]" if b_right else "-1.000 [-1.000, -0.608]"
    assert f"  against the margin: B - A {gap} (95% paired) against margin " in out
    assert out.splitlines()[-3].endswith(answer)
    code, out, _ = command(a, b, "--margin", margin, "--json")
    doc = json.loads(out)
    (metric,) = doc["metrics"]
    check = metric["margin"]
    assert check["verdict"] == doc["margin_verdict"]
    assert check["candidate_minus_baseline"]["gap"] == (0.0 if b_right else -1.0)
    assert check["candidate_minus_baseline"]["high"] == pytest.approx(
        0.27753 if b_right else -0.60751, abs=5e-6)
    # the counts named by side, as the metric's own item lists (A the baseline) read them
    assert {k: check["candidate_minus_baseline"][k] for k in (
        "right_in_candidate_only", "right_in_baseline_only")} == {
        "right_in_candidate_only": len(metric["right_in_b_only"]),
        "right_in_baseline_only": len(metric["right_in_a_only"])}
    assert code == status


def test_without_a_margin_nothing_changes(store: Store, command: Any) -> None:
    a = ordinary(store, "a", dict.fromkeys(TEN, True))
    b = ordinary(store, "b", dict.fromkeys(TEN, False))
    code, out, _ = command(a, b)
    assert code == 0 and "margin" not in out
    assert json.loads(command(a, b, "--json")[1])["margin_verdict"] is None


def test_with_a_margin_its_answer_decides_over_the_noise_floor(store: Store,
                                                               command: Any) -> None:
    # the gap 0.5 - 0.5 is inside a floor of 20% (exit 5 without a margin); B - A over the two
    # shared items (x right in both, y in A only) is -0.5 [-0.905, +0.273]: no worse than A
    # by more than 0.95, INCONCLUSIVE at 0.5
    a = series(store, "a", ((10, 2),), {"x": (True, True), "y": (True, True)})
    b = ordinary(store, "b", {"x": True, "y": False})
    assert command(a, b)[0] == 5
    assert command(a, b, "--margin", "0.5")[0] == 5
    code, out, _ = command(a, b, "--margin", "0.95")
    assert code == 0, out
    assert "B - A -0.500 [-0.905, +0.273] (95% paired) against margin 0.950: no worse" in out
    assert "verdict: inside the noise" in out  # still shown
    assert out.rstrip().endswith(
        "margin verdict: B no worse than A by more than the margin on functional")


def test_a_type_s_own_margin_beats_the_one_for_every_type_and_worse_decides(
        store: Store, command: Any) -> None:
    right = {i: True for i in TEN}
    a = store.run("a", {"test_types": "functional,smoke"},
                  {"functional_accuracy": 1.0, "smoke_accuracy": 1.0},
                  evaluation(functional=tuple(item(i, True) for i in TEN),
                             smoke=tuple(item(f"s{i}", True) for i in TEN)))
    b = store.run("b", {"test_types": "functional,smoke"},
                  {"functional_accuracy": 1.0, "smoke_accuracy": 0.0},
                  evaluation(functional=tuple(item(i, v) for i, v in right.items()),
                             smoke=tuple(item(f"s{i}", False) for i in TEN)))
    code, out, _ = command(a, b, "--margin", "0.3,smoke=0.6")
    assert code == 1, out
    assert "margin verdict: B worse than A by more than the margin on smoke" in out
    assert command(a, b, "--margin", "0.3", "--margin", "smoke=0.7")[0] == 5
    assert command(a, b, "--margin", "functional=0.3")[0] == 0  # smoke not asked


@pytest.mark.parametrize(("margin", "message"), [
    ("-0.02", "error: --margin: the margin of every type is -0.02, but a margin is an accuracy "
              "difference from 0 to 1 (e.g. 0.02: B may be at most 2 points below A)"),
    ("functional=1.5", "error: --margin: the margin of functional is 1.5, but a margin is an "
                       "accuracy difference from 0 to 1"),
    ("nan", "error: --margin: the margin of every type is nan, but a margin is"),
    ("functional=two", "error: --margin 'functional=two': must read MARGIN or TYPE=MARGIN, a "
                       "number from 0 to 1, e.g. --margin 0.02 or --margin functional=0.02"),
    ("smoke=0.02", "error: --margin names smoke, which A and B do not both have an accuracy "
                   "for; the types they share: functional"),
])
def test_a_bad_margin_is_refused_with_a_usage_error(store: Store, command: Any, margin: str,
                                                    message: str) -> None:
    a = ordinary(store, "a", {"x": True})
    b = ordinary(store, "b", {"x": True})
    code, out, err = command(a, b, f"--margin={margin}")
    assert (code, out) == (2, "")
    assert err.startswith(message) and "Traceback" not in err
