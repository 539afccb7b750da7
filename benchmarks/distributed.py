"""Distributed benchmark: a run's calls on Ray against the same calls in-process, side by side.

Only the call phase is measured, through evalkit's own machinery: a :class:`CallWindow` over a
:class:`RunPlan` of synthetic entries, appending to a real :class:`RawResultsLog`, once with the
in-process executor (threads sharing the GIL) and once with a :class:`RayPool` on a local Ray
started for the benchmark. The whole evaluate() is left out on purpose: its MLflow logging,
scoring and reports are the same work whichever executor made the calls, and at these sizes
they would dilute the ratios this benchmark is about. Two pools, each opened once (start-up
printed, not counted) and warmed with a few calls of each kind: parts 1 and 2 on one asking
CALL_RESOURCES CPU=1 (the default: one worker slot per core, 2 on a 2-core machine, each
making one call at a time), part 3 on one asking CPU=0 (a component that mostly waits: one
worker making all its calls at once). The component is benchmarks/distributed_component.py,
which the workers load by path as they load a user's eval.py. Three parts:

1. CPU-bound: a pure-Python arithmetic loop calibrated at start to ``--cpu-ms`` of CPU per
   call (20), ``--cpu-calls`` calls (150) at ``--cpu-concurrency`` (4: two per slot, so a
   slot has its next call while a result travels back), ``--rounds`` times (3) on each
   side in turn: the speed of a virtual machine's CPU drifts by 10-20% within a minute, and
   taking turns lets the drift weigh on both sides alike. Throughput of each (all rounds
   added up) and a line ``speedup: X.XX`` (Ray / in-process). Target: at least 1.7 on 2
   cores.
2. Overhead: a component that does nothing, ``--noop-calls`` calls (300), at concurrency 1
   (a call's round trip) and at 16 (the cost per call when calls overlap): Ray's wall time
   minus in-process, per call, in ms. No target; the driver's CPU per call is printed too.
3. I/O-bound: ``time.sleep(--io-ms / 1000)`` (50), ``--io-calls`` calls (320) at
   MAX_CONCURRENCY 16: Ray's wall time over in-process. Target: at most 1.2.

Every call's output is checked against the in-process one, entry by entry. The exit status
is 1 when a target is missed (each miss is printed), or a call failed or differed. Where the
machine's CPU went during the CPU-bound part is printed (with psutil installed): this
process, the Ray workers, the bridge (the pool's Ray driver), the rest of the Ray started for
the run (raylet, GCS, agents), other processes, and steal (a virtual machine's CPU taken by
the host).
A part during which other processes and steal took more than a tenth of a core says so: a
busy machine, or a busy host, lowers the speedup, since Ray's workers then do not have a
core each.

    .venv/bin/python benchmarks/distributed.py [--cpu-calls 150] [--cpu-ms 20] [--rounds 3]
        [--cpu-concurrency 4] [--noop-calls 300] [--io-calls 320] [--io-ms 50]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:  # for where the CPU went during each part (Ray's own dependencies do not include it)
    import psutil
except ImportError:
    psutil = None

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the component script, evalkit

from distributed_component import invoke_component, spin  # noqa: E402

from evalkit import Entry, Selection  # noqa: E402
from evalkit._secrets import Redactor  # noqa: E402
from evalkit.calls import CallWindow, Executor, InProcess, RayPool, RaySettings, RunPlan  # noqa: E402
from evalkit.calls._selection import PlannedEntry  # noqa: E402
from evalkit.tracking import RawResultsLog  # noqa: E402

SPEEDUP_TARGET = 1.7
"""Ray's CPU-bound throughput over in-process, at least (issue 21)."""
IO_RATIO_TARGET = 1.2
"""Ray's I/O-bound wall time over in-process, at most (issue 21)."""
IO_CONCURRENCY = 16
CPU_BOUND: Mapping[str, float] = {"CPU": 1.0}
"""What a CPU-bound call asks of Ray (evalkit's default): a worker slot per core, one call at a
time."""
WAITING: Mapping[str, float] = {"CPU": 0.0}
"""What a call that mostly waits asks (nothing): one worker, many calls at once."""
WARM_CALLS = 4
"""Calls of each kind made on the pool before any is timed (workers' first-call costs)."""
CALL_TIMEOUT_S = 300.0
"""A call that hangs fails the benchmark (as a timeout error) instead of hanging it."""
THIS_PROCESS, WORKERS, BRIDGE = "this process", "Ray workers", "Ray bridge"
REST_OF_RAY = "rest of Ray"
OTHERS, STEAL = "other processes", "steal"
BUSY_SHARE, BUSY_MIN_S = 0.1, 0.2
"""Other processes (and the hypervisor's steal) taking more than this share of one core, and
more than this many seconds in all (the clock ticks of process CPU are 10 ms), during a timed
part make its figures suspect: the run says so."""


@dataclass(frozen=True)
class Timed:
    """One window's calls: how long they took, where the machine's CPU went meanwhile (see
    :func:`cpu_use`), and their outputs."""

    wall_s: float
    cpu: Mapping[str, float]
    outputs: tuple[Any, ...]
    errors: tuple[str, ...]

    @property
    def cpu_s(self) -> float:
        """This process's CPU: the window, its executor's driver side, the raw results."""
        return self.cpu[THIS_PROCESS]

    def plus(self, other: Timed) -> Timed:
        """Two windows' calls as one: wall times and CPU added up."""
        return Timed(self.wall_s + other.wall_s,
                     {k: self.cpu.get(k, 0.0) + other.cpu.get(k, 0.0)
                      for k in {**self.cpu, **other.cpu}},
                     self.outputs + other.outputs, self.errors + other.errors)

    def failures(self, part: str) -> list[str]:
        return [f"{part}: {len(self.errors)} call(s) failed, e.g. {self.errors[0]}"] \
            if self.errors else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-calls", type=int, default=150, help="per round")
    parser.add_argument("--cpu-ms", type=float, default=20.0, help="CPU per CPU-bound call")
    parser.add_argument("--cpu-concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3,
                        help="CPU-bound rounds of each side, in turn")
    parser.add_argument("--noop-calls", type=int, default=300)
    parser.add_argument("--io-calls", type=int, default=320)
    parser.add_argument("--io-ms", type=float, default=50.0, help="sleep per I/O-bound call")
    args = parser.parse_args()

    print(f"load average at start: {_load()}; {os.cpu_count()} CPUs")
    loops = calibrated_loops(args.cpu_ms / 1000)
    spin_plan = plan_of([{"work": "spin", "loops": loops}] * args.cpu_calls)
    noop_plan = plan_of([{"work": "nothing"}] * args.noop_calls)
    io_plan = plan_of([{"work": "sleep", "seconds": args.io_ms / 1000}] * args.io_calls)
    warm_plan = plan_of([{"work": "spin", "loops": loops}, {"work": "nothing"},
                         {"work": "sleep", "seconds": args.io_ms / 1000}] * WARM_CALLS)
    misses: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        with ray_pool(folder, CPU_BOUND) as pool:
            sides = Sides(InProcess(), pool, folder)
            misses += sides.timed(warm_plan, pool, IO_CONCURRENCY).failures("warm-up")
            print(f"CPU-bound: {args.cpu_calls} calls of {loops} loops (~{args.cpu_ms:g} ms "
                  f"CPU each), concurrency {args.cpu_concurrency}, {args.rounds} round(s) "
                  "each side in turn, added up")
            misses += cpu_bound(sides, spin_plan, args.cpu_concurrency, args.rounds)
            print(f"overhead: {args.noop_calls} calls of a component that does nothing")
            for concurrency in (1, IO_CONCURRENCY):
                misses += overhead(sides, noop_plan, concurrency)
        with ray_pool(folder, WAITING) as pool:
            sides = Sides(InProcess(), pool, folder)
            misses += sides.timed(warm_plan, pool, IO_CONCURRENCY).failures("warm-up")
            ideal = args.io_calls * args.io_ms / 1000 / IO_CONCURRENCY
            print(f"I/O-bound: {args.io_calls} calls sleeping {args.io_ms:g} ms, concurrency "
                  f"{IO_CONCURRENCY} (ideal {ideal:.2f} s)")
            misses += io_bound(sides, io_plan)
    print(f"load average at end: {_load()}")
    for miss in misses:
        print(f"MISSED: {miss}")
    sys.exit(1 if misses else 0)


def cpu_bound(sides: Sides, plan: RunPlan, concurrency: int, rounds: int) -> list[str]:
    here, there, misses = sides.both("CPU-bound", plan, concurrency, rounds)
    calls = plan.total_calls * rounds
    speedup = here.wall_s / there.wall_s
    for side, run in (("in-process", here), ("Ray       ", there)):
        print(f"  {side} {run.wall_s:6.2f} s, {calls / run.wall_s:6.1f} calls/s")
        print(f"    CPU (s): {cpu_line(run)}")
    print(f"speedup: {speedup:.2f}")
    if speedup < SPEEDUP_TARGET:
        misses.append(f"speedup {speedup:.2f} < target {SPEEDUP_TARGET}")
    return misses


def overhead(sides: Sides, plan: RunPlan, concurrency: int) -> list[str]:
    here, there, misses = sides.both(f"no-op at concurrency {concurrency}", plan, concurrency)
    calls = plan.total_calls
    print(f"  concurrency {concurrency:>2}: in-process {here.wall_s:.3f} s, Ray "
          f"{there.wall_s:.3f} s; overhead per call {overhead_ms(here, there, calls):.2f} ms; "
          f"this process's CPU per call {there.cpu_s / calls * 1000:.2f} ms on Ray, "
          f"{here.cpu_s / calls * 1000:.2f} ms in-process")
    return misses


def io_bound(sides: Sides, plan: RunPlan) -> list[str]:
    here, there, misses = sides.both("I/O-bound", plan, IO_CONCURRENCY)
    ratio = there.wall_s / here.wall_s
    print(f"  in-process {here.wall_s:.3f} s, Ray {there.wall_s:.3f} s")
    print(f"io ratio: {ratio:.2f} (Ray / in-process, target <= {IO_RATIO_TARGET})")
    if ratio > IO_RATIO_TARGET:
        misses.append(f"I/O-bound ratio {ratio:.2f} > target {IO_RATIO_TARGET}")
    return misses


def calibrated_loops(cpu_s: float) -> int:
    """How many loops of :func:`spin` take ``cpu_s`` of this thread's CPU (the fastest of a few
    tries, so a busy machine does not inflate it)."""
    probe = 50_000
    fastest = min(_cpu_of(probe) for _ in range(5))
    return max(1, round(probe * cpu_s / fastest))


def _cpu_of(loops: int) -> float:
    started = time.thread_time()
    spin(loops)
    return time.thread_time() - started


def plan_of(inputs: list[Mapping[str, Any]]) -> RunPlan:
    """A plan of one functional call per input, entries ``e0000``, ``e0001``, ..."""
    entries = (Entry(f"e{i:04d}", HERE / "distributed_component.py", ("functional",),
                     dict(given), None) for i, given in enumerate(inputs))
    return RunPlan(Selection("functional"), tuple(
        PlannedEntry(entry, ("functional",), 1, False) for entry in entries))


@contextlib.contextmanager
def ray_pool(folder: Path, resources: Mapping[str, float]) -> Iterator[RayPool]:
    """A local Ray started for the benchmark, its workers (each call asking ``resources``)
    loading the component script: the benchmarks folder is their working directory."""
    settings = RaySettings(None, str(HERE), "distributed_component.py", invoke_component.__name__,
                           resources, IO_CONCURRENCY)
    started = time.perf_counter()
    with RayPool(settings, log_dir=folder / "ray") as pool:
        print(f"Ray pool start-up: {time.perf_counter() - started:.1f} s ({pool.where})")
        yield pool


@dataclass(frozen=True)
class Sides:
    """The two executors compared, and where their raw results go."""

    local: Executor
    pool: Executor
    folder: Path

    def both(self, part: str, plan: RunPlan, concurrency: int,
             rounds: int = 1) -> tuple[Timed, Timed, list[str]]:
        """The plan's calls in-process, then on Ray, ``rounds`` times in turn (a drift in the
        machine's speed then weighs on both sides alike), added up; and what went wrong:
        failed calls on either side, outputs that differ."""
        misses: list[str] = []
        here = there = None
        for _ in range(rounds):
            local, remote = self.timed(plan, self.local, concurrency), self.timed(
                plan, self.pool, concurrency)
            misses += local.failures(f"{part} in-process") + remote.failures(f"{part} on Ray")
            differing = sum(a != b for a, b in zip(local.outputs, remote.outputs, strict=True))
            if differing:
                misses.append(f"{part}: {differing} call(s) gave another output on Ray than "
                              "in-process")
            here = local if here is None else here.plus(local)
            there = remote if there is None else there.plus(remote)
        assert here is not None and there is not None, "at least one round"
        for side, run in (("in-process", here), ("Ray", there)):
            if busy_elsewhere(run):
                print(f"  (busy machine: while {part} ran {side}, other processes and steal "
                      f"took {run.cpu[OTHERS] + run.cpu[STEAL]:.2f} s of CPU in "
                      f"{run.wall_s:.2f} s)")
        return here, there, misses

    def timed(self, plan: RunPlan, executor: Executor, concurrency: int) -> Timed:
        """The plan's calls through a call window on ``executor``, into a fresh raw-results
        log."""
        window = CallWindow.of(invoke_component, {}, Redactor(), executor,
                               concurrency=concurrency, call_timeout=CALL_TIMEOUT_S)
        with RawResultsLog(self.folder / f"raw-{time.monotonic_ns()}.jsonl") as raw:
            started, before = time.perf_counter(), cpu_snapshot()
            outputs = window.run(plan, raw)
            wall, cpu = time.perf_counter() - started, cpu_use(before, cpu_snapshot())
        records = [record for entry in outputs for record in entry.calls]
        return Timed(wall, cpu, tuple(r.output for r in records),
                     tuple(f"{r.entry_id}: {r.error}" for r in records if r.error is not None))


CpuSnapshot = tuple[float, float, float, dict[int, tuple[str, float]]]
"""The machine's busy and steal CPU seconds, this process's, and each descendant's (role, CPU
seconds), by process id."""


def cpu_snapshot() -> CpuSnapshot:
    if psutil is None:
        return 0.0, 0.0, time.process_time(), {}
    machine = psutil.cpu_times()
    busy = sum(getattr(machine, name, 0.0) for name in ("user", "nice", "system", "irq",
                                                        "softirq"))
    children: dict[int, tuple[str, float]] = {}
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):  # ended meanwhile: counted with the others
            times = process.cpu_times()
            children[process.pid] = (_role(" ".join(process.cmdline())),
                                     times.user + times.system)
    return busy, getattr(machine, "steal", 0.0), time.process_time(), children


def _role(command: str) -> str:
    """Which part of the Ray started for the benchmark a process is, by its command line."""
    if "CallWorker" in command:
        return WORKERS
    return BRIDGE if "evalkit.calls.ray._bridge" in command else REST_OF_RAY


def cpu_use(before: CpuSnapshot, after: CpuSnapshot) -> dict[str, float]:
    """CPU seconds between two snapshots: this process, the Ray workers, the bridge (the
    pool's Ray driver: task submissions and completions), the rest of the Ray it started
    (raylet, GCS, agents), other processes of the machine, and steal
    (a virtual machine's CPUs given to other machines). Without psutil, this process only."""
    use = {THIS_PROCESS: after[2] - before[2]}
    if psutil is None:
        return use
    for pid, (role, seconds) in after[3].items():
        use[role] = use.get(role, 0.0) + seconds - before[3].get(pid, (role, 0.0))[1]
    use[OTHERS] = max(0.0, after[0] - before[0] - sum(use.values()))
    use[STEAL] = after[1] - before[1]
    return use


def cpu_line(run: Timed) -> str:
    return ", ".join(f"{where} {seconds:.2f}" for where, seconds in run.cpu.items())


def busy_elsewhere(run: Timed) -> bool:
    """Whether other processes took more than :data:`BUSY_SHARE` of a core meanwhile."""
    elsewhere = run.cpu.get(OTHERS, 0.0) + run.cpu.get(STEAL, 0.0)
    return elsewhere > max(BUSY_SHARE * run.wall_s, BUSY_MIN_S)


def overhead_ms(here: Timed, there: Timed, calls: int) -> float:
    """What Ray adds to each call: the difference in wall time, per call."""
    return (there.wall_s - here.wall_s) / calls * 1000


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
