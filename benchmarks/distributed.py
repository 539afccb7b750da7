"""Distributed benchmark: a run's calls on Ray against the same calls in-process, side by side.

Only the call phase is measured, through evalkit's own machinery: a :class:`CallWindow` over a
:class:`RunPlan` of synthetic entries, appending to a real :class:`RawResultsLog`, once with the
in-process executor (threads sharing the GIL) and once with a :class:`RayPool` on a local Ray
started for the benchmark (CALL_RESOURCES CPU=1, so one worker slot per core: 2 on a 2-core
machine). The whole evaluate() is left out on purpose: its MLflow logging, scoring and reports
are the same work whichever executor made the calls, and at these sizes they would dilute the
ratios this benchmark is about. The pool is opened once (its start-up is printed, not counted)
and warmed with a few calls of each kind; the component is benchmarks/distributed_component.py,
which the workers load by path as they load a user's eval.py. Three parts:

1. CPU-bound: a pure-Python arithmetic loop calibrated at start to ``--cpu-ms`` of CPU per
   call (20), ``--cpu-calls`` calls (300) at ``--cpu-concurrency`` (4: two per worker, so a
   worker has its next call while a result travels back). Throughput of each and a line
   ``speedup: X.XX`` (Ray / in-process). Target: at least 1.7 on 2 cores.
2. Overhead: a component that does nothing, ``--noop-calls`` calls (300), at concurrency 1
   (a call's round trip) and at 16 (the cost per call when calls overlap): Ray's wall time
   minus in-process, per call, in ms. No target; the driver's CPU per call is printed too.
3. I/O-bound: ``time.sleep(--io-ms / 1000)`` (50), ``--io-calls`` calls (320) at
   MAX_CONCURRENCY 16: Ray's wall time over in-process. Target: at most 1.2.

Every call's output is checked against the in-process one, entry by entry. The exit status
is 1 when a target is missed (each miss is printed), or a call failed or differed. The load
average is printed at the start and the end: a busy machine (another Ray, a test run) lowers
the speedup, since Ray's workers then do not have a core each.

    .venv/bin/python benchmarks/distributed.py [--cpu-calls 300] [--cpu-ms 20]
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

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the component script, evalkit

from distributed_component import invoke_component, spin  # noqa: E402

from evalkit import Entry, Selection  # noqa: E402
from evalkit._secrets import Redactor  # noqa: E402
from evalkit.run import (  # noqa: E402
    CallWindow,
    Executor,
    InProcess,
    PlannedEntry,
    RayPool,
    RaySettings,
    RunPlan,
)
from evalkit.tracking import RawResultsLog  # noqa: E402

SPEEDUP_TARGET = 1.7
"""Ray's CPU-bound throughput over in-process, at least (issue 21)."""
IO_RATIO_TARGET = 1.2
"""Ray's I/O-bound wall time over in-process, at most (issue 21)."""
IO_CONCURRENCY = 16
WARM_CALLS = 4
"""Calls of each kind made on the pool before any is timed (workers' first-call costs)."""
CALL_TIMEOUT_S = 300.0
"""A call that hangs fails the benchmark (as a timeout error) instead of hanging it."""


@dataclass(frozen=True)
class Timed:
    """One window's calls: how long they took, this process's CPU, and their outputs."""

    wall_s: float
    cpu_s: float
    outputs: tuple[Any, ...]
    errors: tuple[str, ...]

    def failures(self, part: str) -> list[str]:
        return [f"{part}: {len(self.errors)} call(s) failed, e.g. {self.errors[0]}"] \
            if self.errors else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-calls", type=int, default=300)
    parser.add_argument("--cpu-ms", type=float, default=20.0, help="CPU per CPU-bound call")
    parser.add_argument("--cpu-concurrency", type=int, default=4)
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
        started = time.perf_counter()
        with ray_pool(folder) as pool:
            print(f"Ray pool start-up: {time.perf_counter() - started:.1f} s ({pool.where})")
            sides = Sides(InProcess(), pool, folder)
            misses += sides.timed(warm_plan, pool, IO_CONCURRENCY).failures("warm-up")
            print(f"CPU-bound: {args.cpu_calls} calls of {loops} loops (~{args.cpu_ms:g} ms "
                  f"CPU each), concurrency {args.cpu_concurrency}")
            misses += cpu_bound(sides, spin_plan, args.cpu_concurrency)
            print(f"overhead: {args.noop_calls} calls of a component that does nothing")
            for concurrency in (1, IO_CONCURRENCY):
                misses += overhead(sides, noop_plan, concurrency)
            ideal = args.io_calls * args.io_ms / 1000 / IO_CONCURRENCY
            print(f"I/O-bound: {args.io_calls} calls sleeping {args.io_ms:g} ms, concurrency "
                  f"{IO_CONCURRENCY} (ideal {ideal:.2f} s)")
            misses += io_bound(sides, io_plan)
    print(f"load average at end: {_load()}")
    for miss in misses:
        print(f"MISSED: {miss}")
    sys.exit(1 if misses else 0)


def cpu_bound(sides: Sides, plan: RunPlan, concurrency: int) -> list[str]:
    here, there, misses = sides.both("CPU-bound", plan, concurrency)
    calls = plan.total_calls
    speedup = here.wall_s / there.wall_s
    print(f"  in-process {rate_line(here, calls)}")
    print(f"  Ray        {rate_line(there, calls)}")
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
def ray_pool(folder: Path) -> Iterator[RayPool]:
    """A local Ray started for the benchmark, its workers loading the component script: the
    benchmarks folder is their working directory."""
    settings = RaySettings(None, str(HERE), "distributed_component.py", invoke_component.__name__,
                           {"CPU": 1.0}, IO_CONCURRENCY)
    with RayPool(settings, log_dir=folder / "ray") as pool:
        yield pool


@dataclass(frozen=True)
class Sides:
    """The two executors compared, and where their raw results go."""

    local: Executor
    pool: Executor
    folder: Path

    def both(self, part: str, plan: RunPlan, concurrency: int) -> tuple[Timed, Timed, list[str]]:
        """The plan's calls in-process, then on Ray, and what went wrong: failed calls on
        either side, outputs that differ."""
        here = self.timed(plan, self.local, concurrency)
        there = self.timed(plan, self.pool, concurrency)
        misses = here.failures(f"{part} in-process") + there.failures(f"{part} on Ray")
        differing = sum(a != b for a, b in zip(here.outputs, there.outputs, strict=True))
        if differing:
            misses.append(f"{part}: {differing} call(s) gave another output on Ray than "
                          "in-process")
        return here, there, misses

    def timed(self, plan: RunPlan, executor: Executor, concurrency: int) -> Timed:
        """The plan's calls through a call window on ``executor``, into a fresh raw-results
        log."""
        window = CallWindow.of(invoke_component, {}, Redactor(), executor,
                               concurrency=concurrency, call_timeout=CALL_TIMEOUT_S)
        with RawResultsLog(self.folder / f"raw-{time.monotonic_ns()}.jsonl") as raw:
            started, cpu = time.perf_counter(), time.process_time()
            outputs = window.run(plan, raw)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        records = [record for entry in outputs for record in entry.calls]
        return Timed(wall, cpu, tuple(r.output for r in records),
                     tuple(f"{r.entry_id}: {r.error}" for r in records if r.error is not None))


def rate_line(run: Timed, calls: int) -> str:
    return (f"{run.wall_s:7.2f} s, {calls / run.wall_s:6.1f} calls/s; this process's CPU "
            f"{run.cpu_s:.2f} s ({run.cpu_s / calls * 1000:.2f} ms per call)")


def overhead_ms(here: Timed, there: Timed, calls: int) -> float:
    """What Ray adds to each call: the difference in wall time, per call."""
    return (there.wall_s - here.wall_s) / calls * 1000


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    main()
