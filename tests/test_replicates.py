"""Replicate mode, the noise gate of `evalkit compare`, and `evalkit history`, against real
MLflow stores (a local one, and a server on loopback)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit import Call, Entry, EvalConfig, Selection
from evalkit.reports import render_reports
from evalkit.run import compare, evaluate, evaluate_replicates, load_side
from evalkit.run._replicates import LOCK_FILE, SeedLock, seeds_for
from evalkit.stats import replicate_seed
from evalkit.tracking import Tracker
from tests.conftest import entry, run_script, script_env, write_dataset, write_eval_script

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


def replicates(tmp_path: Path, tracking_uri: str, cfg: EvalConfig, component: Any) -> Any:
    return evaluate_replicates(cfg, component, Selection("all"), tracker=Tracker(tracking_uri),
                               runs_dir=tmp_path / ".evalkit" / "runs")


def test_replicates_make_a_parent_with_nested_children(tmp_path: Path,
                                                       tracking_uri: str) -> None:
    cfg = config(tmp_path, "replicates/nested", REPLICATES=3, ROOT_SEED=7)
    component = SeededComponent(0.7)
    series = replicates(tmp_path, tracking_uri, cfg, component)

    seeds = [replicate_seed(7, "replicates/nested", r) for r in range(3)]
    assert sorted({(r, s) for _, r, s in component.seen}) == list(enumerate(seeds))
    assert len(component.seen) == 3 * 24  # the whole pack, every replicate
    client = mlflow.MlflowClient(tracking_uri)
    parent = client.get_run(series.parent_run_id)
    assert parent.data.tags["mode"] == "replicates" and parent.info.status == "FINISHED"
    assert parent.data.params["seed_2"] == str(seeds[2])
    children = [client.get_run(c.run_id) for c in series.replicates]
    for index, child in enumerate(children):
        assert child.data.tags["mlflow.parentRunId"] == series.parent_run_id
        assert child.data.tags["replicate"] == str(index)
        assert child.data.tags["seed"] == str(seeds[index])
        assert "functional_accuracy" in child.data.metrics
        assert [a.path for a in client.list_artifacts(child.info.run_id, "reports")] == [
            "reports/report-functional.md", "reports/summary.md"]
    accuracies = [c.data.metrics["functional_accuracy"] for c in children]
    assert parent.data.metrics["functional_accuracy"] == pytest.approx(sum(accuracies) / 3)
    assert parent.data.metrics["functional_accuracy_spread"] == pytest.approx(
        max(accuracies) - min(accuracies))

    (functional,) = series.stability
    expected_unstable = sum(len({coin(s, i, 0.7) for s in seeds}) > 1 for i in ENTRIES)
    assert functional.unstable_items == expected_unstable > 0
    assert parent.data.metrics["functional_noise_floor"] == functional.noise_floor

    # Locally: only the stability report, its JSON and the lock; per-replicate reports stay
    # in MLflow.
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "replicates.lock.json", "report-stability.md", "stability.json"]
    document = json.loads(series.stability_path.read_text())
    (metric,) = document["metrics"]
    assert {"metric", "rates", "mean", "sd", "spread", "unstable_items", "repeated_items",
            "components"} <= set(metric)
    assert metric["components"]["estimator"] == "anova_moment"
    assert document["seeds"] == seeds


def test_stability_report_lists_unstable_items_and_rerenders_from_mlflow(
        tmp_path: Path, tracking_uri: str) -> None:
    cfg = config(tmp_path, "replicates/report", REPLICATES=2)
    series = replicates(tmp_path, tracking_uri, cfg, SeededComponent(0.6))
    report = (tmp_path / "reports" / "report-stability.md").read_text()
    unstable = [i for i in ENTRIES if len({coin(replicate_seed(0, "replicates/report", r), i,
                                                0.6) for r in range(2)}) > 1]
    assert unstable
    for item_id in unstable:
        assert f"| {item_id} | " in report
    assert "- **Replicates:** 2 (seeds: 0: " in report
    assert "doubling the replicates would shrink the interval by about" in report
    assert render_reports(Tracker(tracking_uri).fetch(series.parent_run_id)) == {
        "report-stability.md": report}


def test_a_rerun_reads_its_seeds_from_the_lock(tmp_path: Path, tracking_uri: str) -> None:
    cfg = config(tmp_path, "replicates/lock", REPLICATES=2)
    first = replicates(tmp_path, tracking_uri, cfg, SeededComponent(0.6))
    again = replicates(tmp_path, tracking_uri, cfg, SeededComponent(0.6))
    def outputs(series: Any) -> list[list[tuple[str, Any]]]:
        return [[(r["entry_id"], r["output"]) for r in map(json.loads, c.raw_results.open())]
                for c in series.replicates]

    assert outputs(first) == outputs(again)  # same seeds, same outputs: the rerun matches
    assert outputs(first)[0] != outputs(first)[1]  # while the replicates differ

    lock = tmp_path / "reports" / LOCK_FILE
    doc = json.loads(lock.read_text())
    doc["replicates"][0]["seed"] = 12345  # a recorded seed wins over re-derivation
    lock.write_text(json.dumps(doc))
    component = SeededComponent(0.6)
    replicates(tmp_path, tracking_uri, cfg, component)
    assert {s for _, r, s in component.seen if r == 0} == {12345}
    assert SeedLock.load(lock).seeds[0] == 12345

    # A new ROOT_SEED is a new series: the lock's seeds (of ROOT_SEED 0) are not reused.
    component = SeededComponent(0.6)
    replicates(tmp_path, tracking_uri, config(tmp_path, "replicates/lock", REPLICATES=2,
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
        tmp_path: Path, tracking_uri: str) -> None:
    # Four replicates; each item is right in the first `k` of them.
    right_in = {"always": 4, "mostly": 3, "tie": 2, "rarely": 1, "never": 0}
    dataset = write_dataset(tmp_path / "ds", {i: entry("functional") for i in right_in})
    tracker = Tracker(tracking_uri)

    def run(experiment: str, component: Any, **extra: Any) -> None:
        cfg = EvalConfig.from_constants({
            "EXPERIMENT_NAME": experiment, "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / experiment), "EVAL_MIN_ACCURACY": 0.0, **extra},
            "test_eval.py")
        run_with = evaluate_replicates if "REPLICATES" in extra else evaluate
        run_with(cfg, component, Selection("all"), tracker=tracker,
                 runs_dir=tmp_path / ".evalkit" / "runs")

    run("tie/a", lambda e, call: "a" if call.replicate < right_in[e.id] else "wrong",
        REPLICATES=4)
    run("tie/all-right", lambda e, call: "a")
    run("tie/all-wrong", lambda e, call: "wrong")
    a = load_side(tracker, "tie/a")
    assert a.items["functional"] == {"always": True, "mostly": True, "tie": None,
                                     "rarely": False, "never": False}
    (against_right,) = compare(a, load_side(tracker, "tie/all-right"))
    (against_wrong,) = compare(a, load_side(tracker, "tie/all-wrong"))
    # The tie is undecided: neither right nor wrong, so it is in no flip list and not shared.
    assert against_right.shared_items == against_wrong.shared_items == 4
    assert (against_right.right_in_a_only, against_right.right_in_b_only) == (
        (), ("never", "rarely"))
    assert (against_wrong.right_in_a_only, against_wrong.right_in_b_only) == (
        ("always", "mostly"), ())
    assert against_right.a == pytest.approx((4 + 3 + 2 + 1) / 20)  # accuracy counts every vote


COMPARE_SCRIPT = """
import hashlib

def unit(text):
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") / 2**32

def invoke_component(entry, call):
    # Like a real system: most items always right or always wrong, a few flip with the seed.
    item = unit(entry.id)
    if item < FLAKY:
        return "a" if unit(f"{call.seed}:{entry.id}") < 0.5 else "wrong"
    return "a" if item < FLAKY + SKILL else "wrong"
"""


def run_pack(folder: Path, skill: float, experiment: str, *args: str,
             root_seed: int = 0) -> subprocess.CompletedProcess[str]:
    """60 items, 15% of them flaky; ``skill`` is the share of items always right."""
    write_dataset(folder / "ds", {f"q{i:03d}": entry("functional") for i in range(60)})
    write_eval_script(folder, {"EXPERIMENT_NAME": experiment, "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.0, "REPLICATES": 3,
                               "ROOT_SEED": root_seed, "SKILL": skill, "FLAKY": 0.15},
                      COMPARE_SCRIPT)
    done = run_script(folder, "--type=all", *args)
    assert done.returncode == 0, done.stderr
    return done


def evalkit_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evalkit", *args], cwd=folder,
                          capture_output=True, text=True, env=script_env(folder), timeout=120)


@pytest.mark.slow
def test_compare_refuses_inside_the_noise_and_without_a_floor(tmp_path: Path) -> None:
    run_pack(tmp_path, 0.7, "cmp/a", "--replicates")
    run_pack(tmp_path, 0.7, "cmp/b", "--replicates", root_seed=1)  # same system, other seeds
    inside = evalkit_cli(tmp_path, "compare", "cmp/a", "cmp/b")
    assert inside.returncode == 5, inside.stdout + inside.stderr
    assert "verdict: inside the noise" in inside.stdout
    document = json.loads(evalkit_cli(tmp_path, "compare", "cmp/a", "cmp/b", "--json").stdout)
    (metric,) = document["metrics"]
    assert metric["noise_floor"] > 0
    assert abs(metric["gap"]) <= 2 * metric["noise_floor"]
    assert metric["right_in_a_only"] or metric["right_in_b_only"]  # items flipped

    run_pack(tmp_path, 0.8, "cmp/single-a")
    run_pack(tmp_path, 0.2, "cmp/single-b")  # a large gap, and still no floor to judge it
    no_floor = evalkit_cli(tmp_path, "compare", "cmp/single-a", "cmp/single-b")
    assert no_floor.returncode == 5
    assert "verdict: no noise floor measured: run replicates first" in no_floor.stdout


@pytest.mark.slow
def test_compare_accepts_a_gap_beyond_the_floor(tmp_path: Path) -> None:
    run_pack(tmp_path, 0.8, "cmp/good", "--replicates")
    run_pack(tmp_path, 0.4, "cmp/bad", "--replicates")
    better = evalkit_cli(tmp_path, "compare", "cmp/good", "cmp/bad")
    assert better.returncode == 0, better.stdout + better.stderr
    assert "verdict: A better" in better.stdout
    worse = json.loads(evalkit_cli(tmp_path, "compare", "cmp/bad", "cmp/good", "--json").stdout)
    (metric,) = worse["metrics"]
    assert metric["verdict"] == "A worse"
    assert metric["gap"] < -2 * metric["noise_floor"]
    # A replicate child run compares with its parent's floor.
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("cmp/good")
    child = next(r for r in client.search_runs([experiment.experiment_id])
                 if "mlflow.parentRunId" in r.data.tags)
    from_child = evalkit_cli(tmp_path, "compare", child.info.run_id, "cmp/bad")
    assert "verdict: A better" in from_child.stdout


@pytest.mark.slow
def test_history_lists_runs_newest_first_from_the_local_store(tmp_path: Path) -> None:
    run_pack(tmp_path, 0.7, "hist/local")
    run_pack(tmp_path, 0.7, "hist/local", "--replicates")
    listed = evalkit_cli(tmp_path, "history", "hist/local")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    # The header (two lines), then the replicate parent (children folded) and the single
    # run, each a line with its accuracies on the line below.
    assert len(lines) == 6
    assert [line.split()[3] for line in lines[2::2]] == ["replicates", "evaluation"]
    rows = json.loads(evalkit_cli(tmp_path, "history", "hist/local", "--json").stdout)
    assert [r["replicates"] for r in rows] == [3, None]
    assert rows[0]["started"] >= rows[1]["started"]
    assert all(r["verdict"] == "PASS" and r["test_types"] == ["functional"] for r in rows)
    figure = rows[1]["accuracy"]["functional"]
    assert figure["ci_lower"] < figure["accuracy"] < figure["ci_upper"]
    assert rows[0]["dataset_digest"] == rows[1]["dataset_digest"] != ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Any:
    """A real MLflow tracking server on loopback, stopped by its process group at the end."""
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1", "--backend-store-uri", f"sqlite:///{tmp_path / 'server.db'}",
         "--artifacts-destination", str(tmp_path / "server-artifacts")],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the MLflow server did not start")
        yield uri
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


@pytest.mark.slow
def test_history_lists_runs_from_a_tracking_server(tmp_path: Path, mlflow_server: str) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    write_dataset(folder / "ds", {f"q{i}": entry("functional") for i in range(5)})
    write_eval_script(folder, {"EXPERIMENT_NAME": "hist/server", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.5},
                      "def invoke_component(entry, call):\n    return 'a'")
    env = {"MLFLOW_TRACKING_URI": mlflow_server}
    for _ in range(2):
        done = run_script(folder, "--type=all", env=env)
        assert done.returncode == 0, done.stderr
    listed = subprocess.run([sys.executable, "-m", "evalkit", "history", "hist/server",
                             "--json"], cwd=folder, capture_output=True, text=True,
                            env=script_env(folder, env), timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert len(rows) == 2 and all(r["verdict"] == "PASS" for r in rows)
    assert rows[0]["accuracy"]["functional"]["accuracy"] == 1.0
    assert not (folder / "mlflow.db").exists()  # everything went to the server
