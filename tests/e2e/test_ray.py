"""The Ray tier (``make test-ray``): runs on a real two-node Ray cluster on loopback.

A module fixture starts the cluster with ``ray start`` (the head on 127.0.0.2, a worker node on
127.0.0.3, one CPU each, a temp dir of its own) and kills every process it started by PID at
the end (those naming that temp dir in their command lines, and the processes under them):
never ``ray stop``, which stops every Ray process on the machine. Each test runs ``eval.py``
in a process of its own against it: the example evaluation equal to its in-process run entry
by entry; a traced component's spans back from the workers in its traces; a worker node
killed mid-run; Ctrl-C on the driver then ``--resume`` on the
cluster; a slot's calls one at a time (many at once when they ask for no CPU); a call past
its timeout, whose worker is ended so the calls behind it move on; the whole
cluster killed mid-run then ``--resume`` in-process (last, as it leaves no cluster).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.processes import REPO, free_port, run_eval, start_eval, wait_for

pytestmark = pytest.mark.ray

RAY = Path(sys.executable).with_name("ray")
HEAD, WORKER = "127.0.0.2", "127.0.0.3"
# The cluster's nodes and its drivers agree on no token authentication: left unset, Ray 2.60
# turns it on for a head when ~/.ray/auth_token exists (any ray.init() of a local Ray writes
# one), but a node joining with `ray start --address` does not, and fails to connect.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


@dataclass(frozen=True)
class Process:
    pid: int
    parent: int
    started: int
    """Clock ticks after boot: tells the process seen from a later one given its PID."""
    cmdline: str


def _processes() -> dict[int, Process]:
    """Every live process of the machine (zombies are dead)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while we looked
            continue
        if stat[0] != "Z":
            found[int(proc.name)] = Process(int(proc.name), int(stat[1]), int(stat[19]), cmdline)
    return found


class Cluster:
    """A two-node Ray cluster on this machine. Its processes are those naming its temp dir in
    their command line and every process under them (Ray renames its workers' command lines),
    remembered once seen: one whose parent was killed lives on under init."""

    def __init__(self) -> None:
        # Short and under /tmp: Ray's Unix sockets live in it (a path of at most 107 bytes).
        self.temp_dir = tempfile.mkdtemp(prefix="evalkit-ray-", dir="/tmp")
        self.port = free_port(HEAD)
        self.address = f"{HEAD}:{self.port}"
        self.env = {**os.environ, **RAY_ENV}
        self.env.pop("RAY_ADDRESS", None)
        self._seen: dict[int, Process] = {}
        self._worker_node: set[int] = set()

    def start(self) -> None:
        self._ray_start("--head", f"--node-ip-address={HEAD}", f"--port={self.port}",
                        "--include-dashboard=false", "--disable-usage-stats")
        self.start_worker()

    def start_worker(self) -> None:
        """A worker node; its processes are those it started (the head's excepted)."""
        before = set(self.processes())
        self._ray_start(f"--address={self.address}", f"--node-ip-address={WORKER}")
        now = self.processes()
        head = _under(self._raylet(HEAD, now), now)
        self._worker_node = set(now) - before - head

    def _ray_start(self, *args: str) -> None:
        done = subprocess.run([str(RAY), "start", *args, "--num-cpus=1",
                               f"--temp-dir={self.temp_dir}"], env=self.env,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    def processes(self) -> dict[int, Process]:
        """The cluster's live processes."""
        live = _processes()
        ours = {pid for pid, p in live.items() if self.temp_dir in p.cmdline}
        ours |= {pid for pid, p in self._seen.items() if pid in live and live[pid] == p}
        for pid in list(ours):
            ours |= _under(pid, live)
        self._seen.update((pid, live[pid]) for pid in ours)
        return {pid: live[pid] for pid in ours}

    def _raylet(self, ip: str, processes: dict[int, Process]) -> int:
        (pid,) = [pid for pid, p in processes.items()
                  if p.cmdline.split()[0].endswith("/raylet") and f"={ip} " in p.cmdline + " "]
        return pid

    def kill_worker_raylet(self) -> None:
        """SIGKILL to the worker node's raylet alone, as if its machine died."""
        now = self.processes()
        raylet = self._raylet(WORKER, now)
        self._worker_node |= _under(raylet, now)
        self.kill({raylet})

    def restart_worker(self) -> None:
        """A fresh worker node in place of one killed (what lived on of it killed first)."""
        self.kill(self._worker_node)
        self.start_worker()

    def kill(self, pids: set[int]) -> None:
        """SIGKILL to each of ``pids`` still a process of the cluster; back once all ended."""
        targets = set(self.processes()) & pids
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not targets & set(self.processes()), "the killed processes to end", 30)

    def stop(self) -> None:
        self.kill(set(self.processes()))
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _under(root: int, processes: dict[int, Process]) -> set[int]:
    """``root`` and every process under it."""
    found = {root}
    while True:
        children = {pid for pid, p in processes.items() if p.parent in found} - found
        if not children:
            return found
        found |= children


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _run_id(output: str) -> str:
    (run_id,) = re.findall(r"mlflow: run (\w+)", output)
    return run_id


def _records(folder: Path, run_id: str) -> list[dict[str, Any]]:
    raw = folder / ".evalkit" / "runs" / run_id / "raw-results.jsonl"
    return [json.loads(line) for line in raw.read_text(encoding="utf-8").splitlines()]


def _by_call(records: list[dict[str, Any]]) -> dict[tuple[str, int], Any]:
    """Each call's output by (entry id, repeat); fails on a call recorded twice."""
    calls = [(r["entry_id"], r["repeat"]) for r in records]
    assert len(calls) == len(set(calls)), "a call recorded twice"
    return {(r["entry_id"], r["repeat"]): r["output"] for r in records}


# --- the example evaluation, in-process and on the cluster ---------------------------------------

SETUP_LOG = """
def setup_component():
    # once per worker (once in-process): its process and, on Ray, the node it runs on
    import os, sys
    ray = sys.modules.get("ray")
    node = ray.util.get_node_ip_address() if ray and ray.is_initialized() else "driver"
    with open({path!r}, "a") as log:
        log.write(f"{{os.getpid()}} {{node}}\\n")
"""


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project, its router near zero temperature (it always takes the likeliest
    route, so two runs agree), its eval.py noting each setup_component() call in a file."""
    folder = tmp_path_factory.mktemp("ray-example")
    script = (REPO / "eval.py").read_text(encoding="utf-8")
    script, cooled = re.subn(r"^COMPONENT_TEMPERATURE = .*$", "COMPONENT_TEMPERATURE = 0.0001",
                             script, flags=re.MULTILINE)
    assert cooled == 1, "eval.py no longer sets COMPONENT_TEMPERATURE"
    main = 'if __name__ == "__main__":'
    assert main in script
    setup = SETUP_LOG.format(path=str(folder.parent / f"{folder.name}-setups.log"))
    (folder / "eval.py").write_text(script.replace(main, setup + "\n\n" + main),
                                    encoding="utf-8")
    for name in ("examples", "datasets"):
        shutil.copytree(REPO / name, folder / name)
    return folder


def test_the_example_on_the_cluster_equals_its_in_process_run_entry_by_entry(
        cluster: Cluster, example: Path) -> None:
    setups = example.parent / f"{example.name}-setups.log"
    selection = ("--type=all", "--groups=billing")
    local = run_eval(example, *selection, "--json", "../local.json", timeout=600)
    assert local.returncode in (0, 1), local.stderr[-3000:]
    assert setups.read_text().split()[1::2] == ["driver"]  # once in-process
    setups.unlink()
    ray = run_eval(example, *selection, "--json", "../ray.json", "--executor=ray",
                   f"--ray-address={cluster.address}", env=RAY_ENV, timeout=600)
    assert ray.returncode == local.returncode, ray.stderr[-3000:]
    assert "2 worker slot(s) on 2 node(s)" in ray.stderr

    local_calls = _by_call(_records(example, _run_id(local.stdout)))
    ray_calls = _by_call(_records(example, _run_id(ray.stdout)))
    assert len(local_calls) > 20
    assert ray_calls == local_calls

    def accuracies(name: str) -> dict[str, tuple[Any, ...]]:
        summary = json.loads((example.parent / name).read_text(encoding="utf-8"))
        return {t["test_type"]: (t["verdict"], t["accuracy"], t["samples"])
                for t in summary["types"]}

    assert accuracies("ray.json") == accuracies("local.json")
    assert len(accuracies("ray.json")) >= 4
    # Two workers, one per node, each set up once for all its calls.
    nodes = sorted(setups.read_text().split()[1::2])
    assert nodes == [HEAD, WORKER]


TRACED_AGENT = """
import mlflow

@mlflow.trace(span_type="TOOL")
def lookup(city):
    return city.upper()

@mlflow.trace(span_type="AGENT", name="agent")
def invoke_component(entry, call):
    with mlflow.start_span("plan"):
        pass
    return lookup(entry.input)
"""


def test_a_components_spans_come_back_from_the_workers_into_its_entrys_trace(
        cluster: Cluster, tmp_path: Path) -> None:
    import mlflow

    write_dataset(tmp_path / "ds", {f"e{i}": entry("functional", input=f"city{i}",
                                                   expected=f"CITY{i}") for i in range(6)})
    write_eval_script(tmp_path, {"EXPERIMENT_NAME": "ray/spans", "DATASET_PATH": "ds",
                                 "EVAL_MIN_ACCURACY": 1.0}, TRACED_AGENT)
    done = run_eval(tmp_path, "--type=functional", "--executor=ray",
                    f"--ray-address={cluster.address}", env=RAY_ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    run_id = _run_id(done.stdout)
    for record in _records(tmp_path, run_id):
        assert [(s["name"], s["span_type"], s["parent"]) for s in record["spans"]] == [
            ("agent", "AGENT", None), ("plan", "UNKNOWN", 0), ("lookup", "TOOL", 0)]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    traces = {e.name: client.search_traces(locations=[e.experiment_id])
              for e in client.search_experiments()}
    assert {name: len(found) for name, found in traces.items() if found} == {"ray/spans": 6}
    for trace in traces["ray/spans"]:
        (call,) = [s for s in trace.data.spans if s.name == "call 0"]
        (agent,) = [s for s in trace.data.spans if s.parent_id == call.span_id]
        assert sorted(s.name for s in trace.data.spans if s.parent_id == agent.span_id) == [
            "lookup", "plan"]


# --- a CPU-bound component: killed nodes, Ctrl-C, a lost cluster ------------------------------

ENTRIES = 48
CPU_BOUND = """
import os, sys

def invoke_component(entry, call):
    # noted as it starts: where each call is made, and how many times
    ray = sys.modules.get("ray")
    node = ray.util.get_node_ip_address() if ray and ray.is_initialized() else "driver"
    with open(CALLS_LOG, "a") as log:
        log.write(f"{node} {entry.id}\\n")
    # about 0.25 s of pure-Python work: a call is still running when a node dies
    total = 0
    for number in range(2_000_000):
        total += number % 7
    return entry.expected_output
"""


def _project(folder: Path, entries: int, component: str, **constants: Any) -> Path:
    """A project of ``entries`` functional entries (``e00``, ``e01``, ...) whose eval.py makes
    its calls with ``component``, a pass needing half of them right."""
    write_dataset(folder / "ds", {f"e{i:02d}": entry("functional") for i in range(entries)})
    write_eval_script(folder, {"EXPERIMENT_NAME": "ray/tests", "DATASET_PATH": "ds",
                               "EVAL_MIN_ACCURACY": 0.5, **constants}, component)
    return folder


def _on_cluster(folder: Path, cluster: Cluster, *options: str) -> str:
    """The project's functional run on the cluster, which must pass; its standard output."""
    done = run_eval(folder, "--type=functional", "--executor=ray", *options,
                    f"--ray-address={cluster.address}", env=RAY_ENV, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _cpu_project(folder: Path) -> tuple[Path, Path]:
    """The project, and the file its component notes each call it starts in."""
    calls = folder.parent / "calls.log"
    # One call per worker at a time: both nodes' single CPUs busy, none queued behind another.
    return _project(folder, ENTRIES, CPU_BOUND, MAX_CONCURRENCY=2, CALLS_LOG=str(calls)), calls


def _started(calls: Path) -> list[tuple[str, str]]:
    """Each call started so far: (where, entry id)."""
    if not calls.exists():
        return []
    return [(line.split()[0], line.split()[1]) for line in calls.read_text().splitlines()]


def _kept(folder: Path) -> list[str]:
    """The entry ids of the calls kept so far (a line being written is not yet kept)."""
    kept = []
    for raw in (folder / ".evalkit" / "runs").glob("*/raw-results.jsonl"):
        for line in raw.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                kept.append(json.loads(line)["entry_id"])
    return kept


def _assert_complete(records: list[dict[str, Any]]) -> None:
    """Every entry's one call recorded once, none with an error."""
    calls = _by_call(records)
    assert sorted(calls) == [(f"e{i:02d}", 0) for i in range(ENTRIES)]
    assert [r["error"] for r in records] == [None] * ENTRIES


def test_a_worker_node_killed_mid_run_loses_no_call_and_records_none_twice(
        cluster: Cluster, tmp_path: Path) -> None:
    folder, calls = _cpu_project(tmp_path / "project")
    process = start_eval(folder, "--type=functional", "--executor=ray",
                         f"--ray-address={cluster.address}", env=RAY_ENV,
                         log=tmp_path / "run.log")

    def worker_node_mid_call() -> bool:
        on_worker = [e for node, e in _started(calls) if node == WORKER]
        return len(_kept(folder)) >= 4 and bool(on_worker) and on_worker[-1] not in _kept(folder)

    try:
        wait_for(worker_node_mid_call, "a call on the worker node after four kept", 300)
        cluster.kill_worker_raylet()
        kept_at_kill = len(_kept(folder))
        assert process.wait(timeout=600) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        process.kill()
        cluster.restart_worker()
    assert kept_at_kill < ENTRIES - 4  # the kill came well before the end
    (run_dir,) = (folder / ".evalkit" / "runs").iterdir()
    _assert_complete(_records(folder, run_dir.name))
    # The one call the worker node was making was made again on the head's worker, unless
    # its result was already on its way back when the node died (the kill cannot be timed
    # closer than the check before it): never any other call twice, never on the worker.
    started = _started(calls)
    made_twice = [e for e in sorted({e for _, e in started})
                  if [node for node, made in started if made == e] == [WORKER, HEAD]]
    assert len(started) - ENTRIES == len(made_twice) <= 1


def test_ctrl_c_on_the_driver_then_resume_on_the_cluster_reuses_the_calls_made(
        cluster: Cluster, tmp_path: Path) -> None:
    folder, calls = _cpu_project(tmp_path / "project")
    log = tmp_path / "run.log"
    # its own process group, which Ctrl-C in a terminal signals as a whole
    process = start_eval(folder, "--type=functional", "--executor=ray",
                         f"--ray-address={cluster.address}", env=RAY_ENV, log=log,
                         start_new_session=True)
    try:
        wait_for(lambda: len(_kept(folder)) >= 4, "four calls kept", 300)
        os.killpg(process.pid, signal.SIGINT)
        assert process.wait(timeout=300) == 130, log.read_text()[-3000:]
    finally:
        process.kill()
    (run_dir,) = (folder / ".evalkit" / "runs").iterdir()
    run_id = run_dir.name
    text = log.read_text()
    assert f"python eval.py --resume {run_id}" in text and "Traceback" not in text
    before = _records(folder, run_id)
    assert 4 <= len(before) < ENTRIES
    assert [r["error"] for r in before] == [None] * len(before)
    # no call started after the stop, and those in flight were awaited and kept
    assert len(_started(calls)) == len(before)
    assert {node for node, _ in _started(calls)} == {HEAD, WORKER}

    resumed = run_eval(folder, "--resume", run_id, "--executor=ray",
                       f"--ray-address={cluster.address}", env=RAY_ENV, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert (f"resuming run {run_id}: {len(before)} of {ENTRIES} calls recorded, "
            f"{ENTRIES - len(before)} to make") in resumed.stderr
    after = _records(folder, run_id)
    assert after[:len(before)] == before  # the calls made before the interrupt, reused
    _assert_complete(after)
    assert len(_started(calls)) == ENTRIES  # none of them made again


SPANS = """
import os, time

def invoke_component(entry, call):
    # each call's worker process and when it ran there
    started = time.time()
    time.sleep(0.2)
    with open(SPANS_LOG, "a") as log:
        log.write(f"{os.getpid()} {started} {time.time()}\\n")
    return entry.expected_output
"""


def _spans(folder: Path, *options: str, cluster: Cluster) -> dict[int, list[tuple[float, float]]]:
    """Eight sleeping calls at MAX_CONCURRENCY 4 on the cluster: each worker's calls' spans."""
    spans = folder.parent / f"{folder.name}-spans.log"
    _on_cluster(_project(folder, 8, SPANS, MAX_CONCURRENCY=4, SPANS_LOG=str(spans)), cluster,
                *options)
    by_worker: dict[int, list[tuple[float, float]]] = {}
    for line in spans.read_text().splitlines():
        pid, start, end = line.split()
        by_worker.setdefault(int(pid), []).append((float(start), float(end)))
    assert sum(map(len, by_worker.values())) == 8
    return by_worker


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def test_a_slot_makes_one_call_at_a_time_unless_calls_ask_for_nothing(
        cluster: Cluster, tmp_path: Path) -> None:
    # The default, CPU=1: a slot per node's CPU, each making its calls one after the other.
    slots = _spans(tmp_path / "cpu", cluster=cluster)
    assert len(slots) == 2
    assert [_most_at_once(spans) for spans in slots.values()] == [1, 1]
    assert _most_at_once([s for spans in slots.values() for s in spans]) == 2
    # CPU=0, a component that mostly waits: one worker makes the run's calls together.
    (shared,) = _spans(tmp_path / "waiting", "--call-resources=CPU=0", cluster=cluster).values()
    assert _most_at_once(shared) == 4


HANGING = """
import os, time

def invoke_component(entry, call):
    with open(CALLS_LOG, "a") as log:
        log.write(f"{os.getpid()} {entry.id}\\n")
    time.sleep(3600 if entry.id == "e00" else 0.3)  # e00 never returns
    return entry.expected_output
"""
HUNG_ENTRIES = 30


def test_a_call_past_its_timeout_ends_its_worker_and_the_calls_behind_it_move_on(
        cluster: Cluster, tmp_path: Path) -> None:
    calls = tmp_path / "calls.log"
    folder = _project(tmp_path / "project", HUNG_ENTRIES, HANGING, MAX_CONCURRENCY=8,
                      CALL_TIMEOUT=5, CALLS_LOG=str(calls))
    errors = {r["entry_id"]: r["error"]
              for r in _records(folder, _run_id(_on_cluster(folder, cluster)))}
    assert sorted(errors) == [f"e{i:02d}" for i in range(HUNG_ENTRIES)]
    assert errors.pop("e00").startswith("CallTimeout: no result within CALL_TIMEOUT = 5 s")
    # 8 calls in flight on 2 slots: one running and one waiting on each, the rest held in the
    # bridge, first come first served. The one waiting behind e00 may time out with it; the
    # others (the other slot alone needs 9 s for them all) went to live workers, none to the
    # hung one, and each was made once.
    late = [e for e, error in errors.items() if error is not None]
    assert len(late) <= 1 and all(errors[e].startswith("CallTimeout") for e in late)
    started = Counter(line.split()[1] for line in calls.read_text().splitlines())
    assert {e: started[e] for e in errors if e not in late} == {
        e: 1 for e in errors if e not in late}
    assert started["e00"] == 1 and all(started[e] <= 1 for e in late)


def test_the_cluster_killed_mid_run_stops_it_cleanly_and_a_local_resume_finishes_it(
        cluster: Cluster, tmp_path: Path) -> None:
    folder, calls = _cpu_project(tmp_path / "project")
    log = tmp_path / "run.log"
    process = start_eval(folder, "--type=functional", "--executor=ray",
                         f"--ray-address={cluster.address}", env=RAY_ENV, log=log)
    try:
        wait_for(lambda: len(_kept(folder)) >= 4, "four calls kept", 300)
        cluster.kill(set(cluster.processes()))
        killed = time.monotonic()
        assert process.wait(timeout=180) == 130, log.read_text()[-3000:]
        assert time.monotonic() - killed < 150
    finally:
        process.kill()
    (run_dir,) = (folder / ".evalkit" / "runs").iterdir()
    run_id = run_dir.name
    text = log.read_text()
    assert "the Ray cluster was lost" in text and f"python eval.py --resume {run_id}" in text
    assert "Traceback" not in text
    before = _records(folder, run_id)
    assert len(before) < ENTRIES
    assert [r["error"] for r in before] == [None] * len(before)  # the calls lost: not kept
    on_cluster = len(_started(calls))

    resumed = run_eval(folder, "--resume", run_id, timeout=600)  # no executor: in-process
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"{len(before)} of {ENTRIES} calls recorded" in resumed.stderr
    after = _records(folder, run_id)
    assert after[:len(before)] == before
    _assert_complete(after)
    # the missing calls, and only they, were made here
    assert sorted(_started(calls)[on_cluster:]) == sorted(
        ("driver", r["entry_id"]) for r in after[len(before):])
