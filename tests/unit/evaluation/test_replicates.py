"""Replicate mode, the noise gate of `evalkit compare`, and `evalkit history`.

The series, its seeds, its stability and what compare and history make of it are evalkit's
own logic, tested in memory. The commands themselves on a real local store and on a tracking server
are tests/e2e/test_replicates_store.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, RunContext, RunInterrupted, Selection, Stop
from evalkit.evaluation import ReplicatesOutcome, evaluate, evaluate_replicates
from evalkit.evaluation._replicates import LOCK_FILE, SeedLock, seeds_for
from evalkit.records import Mode, names
from evalkit.reports import render_reports
from evalkit.review import compare, load_side
from evalkit.review._compare import ComparisonVerdict
from evalkit.stats import replicate_seed
from evalkit.tracking import Tracker, history, render_history
from evalkit.tracking._memory import MemoryBackend
from tests.support.builders import entry, write_dataset

ENTRIES = {f"q{i:02d}": entry("functional") for i in range(24)}


def coin(seed: int | None, entry_id: str, bias: float) -> bool:
    """A reproducible biased coin: the same seed and entry always give the same answer."""
    digest = hashlib.sha256(f"{seed}:{entry_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < bias


class SeededComponent:
    """Right on an entry with probability ``skill``, drawn from the replicate's seed."""

    def __init__(self, skill: float) -> None:
        self.skill = skill
        self.seen: list[tuple[str, int | None, int | None]] = []

    def __call__(self, entry: Entry, call: Call) -> Any:
        self.seen.append((entry.id, call.replicate, call.seed))
        return "a" if coin(call.seed, entry.id, self.skill) else "wrong"


def config(tmp_path: Path, experiment: str, **extra: Any) -> EvalConfig:
    dataset = write_dataset(tmp_path / "ds", ENTRIES)
    return EvalConfig.from_constants({
        "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.5, **extra},
        "test_eval.py")


def replicates(tmp_path: Path, tracker: Tracker, cfg: EvalConfig,
               component: Any) -> ReplicatesOutcome:
    return evaluate_replicates(cfg, component, Selection("all"),
                               RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def test_replicates_make_a_parent_with_nested_children(tmp_path: Path, tracker: Tracker) -> None:
    cfg = config(tmp_path, "replicates/nested", REPLICATES=3, ROOT_SEED=7)
    component = SeededComponent(0.7)
    series = replicates(tmp_path, tracker, cfg, component)

    seeds = [replicate_seed(7, "replicates/nested", r) for r in range(3)]
    assert sorted({(r, s) for _, r, s in component.seen}) == list(enumerate(seeds))
    assert len(component.seen) == 3 * 24  # the whole pack, every replicate
    parent = tracker.reader.stored(series.parent_run_id)
    assert parent.tags["mode"] == "replicates" and parent.status == "FINISHED"
    assert parent.params["seed_2"] == str(seeds[2])
    children = [tracker.reader.stored(c.run_id) for c in series.replicates]
    for index, child in enumerate(children):
        assert child.tags["mlflow.parentRunId"] == series.parent_run_id
        assert child.tags["replicate"] == str(index)
        assert child.tags["seed"] == str(seeds[index])
        assert child.status == "FINISHED"
        assert "functional_accuracy" in child.metrics
        reports = [p for p in tracker.backend.journals[child.run_id].artifacts
                   if p.startswith("reports/")]
        assert sorted(reports) == ["reports/convergence-functional.svg",
                                   "reports/report-functional.md", "reports/summary.md"]
    accuracies = [c.metrics["functional_accuracy"] for c in children]
    assert parent.metrics["functional_accuracy"] == pytest.approx(sum(accuracies) / 3)
    assert parent.metrics["functional_accuracy_spread"] == pytest.approx(
        max(accuracies) - min(accuracies))

    (functional,) = series.stability
    expected_unstable = sum(len({coin(s, i, 0.7) for s in seeds}) > 1 for i in ENTRIES)
    assert functional.unstable_items == expected_unstable > 0
    assert parent.metrics["functional_noise_floor"] == functional.noise_floor

    # Locally: only the stability report, its JSON and the lock; per-replicate reports stay
    # in the store.
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "replicates.lock.json", "report-stability.md", "stability.json"]
    document = json.loads(series.stability_path.read_text())
    (metric,) = document["metrics"]
    assert {"metric", "rates", "mean", "sd", "spread", "unstable_items", "repeated_items",
            "components"} <= set(metric)
    assert metric["components"]["estimator"] == "anova_moment"
    assert document["seeds"] == seeds


class StopAfterReplicate0(MemoryBackend):
    """Requests a stop as soon as replicate 0 has finished: between two replicates."""

    def __init__(self, stop: Stop) -> None:
        super().__init__()
        self.stop = stop

    def set_status(self, run_id: str, status: str) -> None:
        super().set_status(run_id, status)
        if status == "FINISHED" and self.journals[run_id].tags.get("replicate") == "0":
            self.stop.request()


@pytest.mark.parametrize("between", [False, True])
def test_a_stopped_series_says_to_run_it_again_not_to_resume_it(
        tmp_path: Path, between: bool) -> None:
    stop = Stop()
    tracker = Tracker(backend=StopAfterReplicate0(stop) if between else MemoryBackend())

    def component(item: Entry, call: Call) -> str:
        if not between and item.id == "q05":  # inside replicate 0
            stop.request()
        return "a"

    cfg = config(tmp_path, "rep/stopped", REPLICATES=3, MAX_CONCURRENCY=1)
    with pytest.raises(RunInterrupted) as stopped:
        evaluate_replicates(cfg, component, Selection("functional"),
                            RunContext(tracker=tracker, runs_dir=tmp_path / "runs", stop=stop))
    message = str(stopped.value)
    assert "--resume" not in message
    assert message.endswith("a replicate series is not resumed: run --replicates again (the "
                            "same ROOT_SEED gives the same seeds)")
    runs = {r.tags.get("replicate", "parent"): r for r in tracker.reader.runs("rep/stopped")}
    assert set(runs) == {"parent", "0"}
    # a stopped run keeps its name (no verdict heads it); a finished replicate gets its verdict
    assert runs["parent"].status == "KILLED"
    assert runs["parent"].run_name.startswith("×3 functional ")
    assert (runs["0"].run_name, runs["0"].status) == (
        ("PASS r0", "FINISHED") if between else ("r0", "KILLED"))


def test_stability_report_lists_unstable_items_and_rerenders_from_the_store(
        tmp_path: Path, tracker: Tracker) -> None:
    cfg = config(tmp_path, "replicates/report", REPLICATES=2)
    series = replicates(tmp_path, tracker, cfg, SeededComponent(0.6))
    report = (tmp_path / "reports" / "report-stability.md").read_text()
    unstable = [i for i in ENTRIES if len({coin(replicate_seed(0, "replicates/report", r), i,
                                                0.6) for r in range(2)}) > 1]
    assert unstable
    for item_id in unstable:
        assert f"| {item_id} | " in report
    assert "- **Replicates:** 2 (seeds: 0: " in report
    assert "doubling the replicates would shrink the interval by about" in report
    assert render_reports(tracker.reader.fetch(series.parent_run_id)) == {
        "report-stability.md": report}


def test_a_rerun_reads_its_seeds_from_the_lock(tmp_path: Path, tracker: Tracker) -> None:
    cfg = config(tmp_path, "replicates/lock", REPLICATES=2)
    first = replicates(tmp_path, tracker, cfg, SeededComponent(0.6))
    again = replicates(tmp_path, tracker, cfg, SeededComponent(0.6))

    def outputs(series: ReplicatesOutcome) -> list[list[tuple[str, Any]]]:
        return [[(r["entry_id"], r["output"]) for r in map(json.loads, c.raw_results.open())]
                for c in series.replicates]

    assert outputs(first) == outputs(again)  # same seeds, same outputs: the rerun matches
    assert outputs(first)[0] != outputs(first)[1]  # while the replicates differ

    lock = tmp_path / "reports" / LOCK_FILE
    doc = json.loads(lock.read_text())
    doc["replicates"][0]["seed"] = 12345  # a recorded seed wins over re-derivation
    lock.write_text(json.dumps(doc))
    component = SeededComponent(0.6)
    replicates(tmp_path, tracker, cfg, component)
    assert {s for _, r, s in component.seen if r == 0} == {12345}
    assert SeedLock.load(lock).seeds[0] == 12345

    # A new ROOT_SEED is a new series: the lock's seeds (of ROOT_SEED 0) are not reused.
    component = SeededComponent(0.6)
    replicates(tmp_path, tracker, config(tmp_path, "replicates/lock", REPLICATES=2,
                                         ROOT_SEED=1), component)
    fresh = [replicate_seed(1, "replicates/lock", r) for r in range(2)]
    assert sorted({(r, s) for _, r, s in component.seen}) == list(enumerate(fresh))
    assert SeedLock.load(lock) == SeedLock("replicates/lock", 1, tuple(fresh))


def test_seeds_come_from_the_lock_only_for_its_own_pack_and_root_seed() -> None:
    lock = SeedLock("pack", 0, (11, 12))
    assert seeds_for("pack", 0, 3, lock).seeds == (11, 12, replicate_seed(0, "pack", 2))
    assert seeds_for("pack", 0, 1, lock).seeds == (11,)
    for pack, root in (("pack", 1), ("other", 0)):
        assert seeds_for(pack, root, 2, lock) == SeedLock(
            pack, root, (replicate_seed(root, pack, 0), replicate_seed(root, pack, 1)))
    assert seeds_for("pack", 0, 2).seeds == (replicate_seed(0, "pack", 0),
                                              replicate_seed(0, "pack", 1))


def test_compare_leaves_out_an_item_split_evenly_across_an_even_number_of_replicates(
        tmp_path: Path, tracker: Tracker) -> None:
    # Four replicates; each item is right in the first `k` of them.
    right_in = {"always": 4, "mostly": 3, "tie": 2, "rarely": 1, "never": 0}
    dataset = write_dataset(tmp_path / "ds", {i: entry("functional") for i in right_in})

    def run(experiment: str, component: Any, **extra: Any) -> None:
        cfg = EvalConfig.from_constants({
            "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / experiment), "EVAL_MIN_ACCURACY": 0.0, **extra},
            "test_eval.py")
        run_with = evaluate_replicates if "REPLICATES" in extra else evaluate
        run_with(cfg, component, Selection("all"),
                 RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))

    run("tie/a", lambda e, call: "a" if call.replicate < right_in[e.id] else "wrong",
        REPLICATES=4)
    run("tie/all-right", lambda e, call: "a")
    run("tie/all-wrong", lambda e, call: "wrong")
    a = load_side(tracker.reader, "tie/a")
    assert a.items["functional"] == {"always": True, "mostly": True, "tie": None,
                                     "rarely": False, "never": False}
    (against_right,) = compare(a, load_side(tracker.reader, "tie/all-right"))
    (against_wrong,) = compare(a, load_side(tracker.reader, "tie/all-wrong"))
    # The tie is undecided: neither right nor wrong, so it is in no flip list and not shared.
    assert against_right.shared_items == against_wrong.shared_items == 4
    assert (against_right.right_in_a_only, against_right.right_in_b_only) == (
        (), ("never", "rarely"))
    assert (against_wrong.right_in_a_only, against_wrong.right_in_b_only) == (
        ("always", "mostly"), ())
    assert against_right.a == pytest.approx((4 + 3 + 2 + 1) / 20)  # accuracy counts every vote


# --- packs: 60 items, 15% of them flaky, the rest always right or always wrong ---------------

PACK = {f"q{i:03d}": entry("functional") for i in range(60)}
FLAKY = 0.15


def unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") / 2**32


def system(skill: float) -> Any:
    """Like a real system: most items always right or always wrong, a few flip with the seed;
    ``skill`` is the share of items always right."""
    def answer(item: Entry, call: Call) -> str:
        share = unit(item.id)
        if share < FLAKY:
            return "a" if unit(f"{call.seed}:{item.id}") < 0.5 else "wrong"
        return "a" if share < FLAKY + skill else "wrong"
    return answer


def run_pack(tmp_path: Path, tracker: Tracker, skill: float, experiment: str, *,
             replicated: bool = True, root_seed: int = 0, **extra: Any) -> str:
    """A run of the pack (a series of three replicates, or a single run); its run id."""
    dataset = tmp_path / "pack"
    if not dataset.exists():
        write_dataset(dataset, PACK)
    cfg = EvalConfig.from_constants({
        "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(dataset),
        "REPORTS_DIR": str(tmp_path / "reports" / experiment), "EVAL_MIN_ACCURACY": 0.0,
        "REPLICATES": 3, "ROOT_SEED": root_seed, **extra}, "eval.py")
    runs_dir = tmp_path / ".evalkit" / "runs"
    if replicated:
        return evaluate_replicates(cfg, system(skill), Selection("all"),
                                   RunContext(tracker=tracker, runs_dir=runs_dir)).parent_run_id
    return evaluate(cfg, system(skill), Selection("all"),
                    RunContext(tracker=tracker, runs_dir=runs_dir)).run_id


def test_compare_refuses_inside_the_noise_and_without_a_floor(tmp_path: Path,
                                                             tracker: Tracker) -> None:
    run_pack(tmp_path, tracker, 0.7, "cmp/a")
    run_pack(tmp_path, tracker, 0.7, "cmp/b", root_seed=1)  # same system, other seeds
    (inside,) = compare(load_side(tracker.reader, "cmp/a"), load_side(tracker.reader, "cmp/b"))
    assert inside.verdict == ComparisonVerdict.INSIDE_NOISE and not inside.verdict.decided
    assert inside.floor is not None and inside.floor > 0
    assert abs(inside.gap) <= 2 * inside.floor
    assert inside.right_in_a_only or inside.right_in_b_only  # items flipped

    run_pack(tmp_path, tracker, 0.8, "cmp/single-a", replicated=False)
    run_pack(tmp_path, tracker, 0.2, "cmp/single-b", replicated=False)
    (unfloored,) = compare(load_side(tracker.reader, "cmp/single-a"),
                           load_side(tracker.reader, "cmp/single-b"))
    assert unfloored.gap > 0.5  # a large gap, and still no floor to judge it
    assert unfloored.verdict == ComparisonVerdict.NO_FLOOR and unfloored.floor is None


def test_compare_accepts_a_gap_beyond_the_floor(tmp_path: Path, tracker: Tracker) -> None:
    good = run_pack(tmp_path, tracker, 0.8, "cmp/good")
    run_pack(tmp_path, tracker, 0.4, "cmp/bad")
    (better,) = compare(load_side(tracker.reader, "cmp/good"),
                        load_side(tracker.reader, "cmp/bad"))
    assert better.verdict == ComparisonVerdict.BETTER
    (worse,) = compare(load_side(tracker.reader, "cmp/bad"),
                       load_side(tracker.reader, "cmp/good"))
    assert worse.verdict == ComparisonVerdict.WORSE
    assert worse.floor is not None and worse.gap < -2 * worse.floor
    # A replicate child run compares with its parent's floor.
    child = next(r for r in tracker.reader.runs("cmp/good")
                 if r.tags.get(names.PARENT_RUN_TAG) == good)
    from_child = load_side(tracker.reader, child.run_id)
    assert from_child.noise_floor == load_side(tracker.reader, good).noise_floor
    (child_better,) = compare(from_child, load_side(tracker.reader, "cmp/bad"))
    assert child_better.verdict == ComparisonVerdict.BETTER


def test_history_folds_a_series_into_its_parent_newest_first(tmp_path: Path,
                                                             tracker: Tracker) -> None:
    single = run_pack(tmp_path, tracker, 0.7, "hist/local", replicated=False)
    parent = run_pack(tmp_path, tracker, 0.7, "hist/local")
    rows = history(tracker.reader, "hist/local")
    assert [(r.run_id, r.mode, r.replicates) for r in rows] == [
        (parent, Mode.REPLICATES, 3), (single, Mode.EVALUATION, None)]
    assert rows[0].started >= rows[1].started
    assert all(r.verdict == "PASS" and r.test_types == ("functional",) for r in rows)
    figure = rows[1].accuracy["functional"]
    assert figure.low is not None and figure.high is not None
    assert figure.low < figure.accuracy < figure.high
    assert rows[0].dataset_digest == rows[1].dataset_digest != ""
    lines = render_history(rows).splitlines()
    # The header (two lines), then the parent (its children folded) and the single run, each
    # a line with its accuracies on the line below.
    assert len(lines) == 6
    assert [line.split()[3] for line in lines[2::2]] == ["replicates", "evaluation"]
