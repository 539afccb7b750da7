"""benchmarks/distributed.py's helpers, in-process (no Ray): its component script loads the way
a Ray worker loads it and does each kind of work, and its side-by-side check catches a side
whose calls fail or answer differently. Its timings are the benchmark's to print, not tested."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evalkit._secrets import Redactor
from evalkit.calls import InProcess, SpanCapture
from evalkit.calls._executors import CallExecutor, ThreadWorkers
from tests.support.builders import REPO

BENCHMARKS = REPO / "benchmarks"


def benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("distributed_benchmark",
                                                  BENCHMARKS / "distributed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class Answering:
    """An executor that runs ``component`` in-process in place of the one it is given."""

    def __init__(self, component: Callable[[Any, Any], Any]) -> None:
        self._component = component

    def calls(self, component: Any, adapters: Mapping[str, Callable[[Any], Any]],
              redactor: Redactor, workers: ThreadWorkers, capture: SpanCapture) -> CallExecutor:
        return InProcess().calls(self._component, adapters, redactor, workers, capture)


def test_the_component_script_loads_as_a_worker_loads_it_and_does_each_kind_of_work() -> None:
    namespace = runpy.run_path(str(BENCHMARKS / "distributed_component.py"),
                               run_name="__evalkit_worker__")
    bench = benchmark()
    plan = bench.plan_of([{"work": "spin", "loops": 1000}, {"work": "nothing"},
                          {"work": "sleep", "seconds": 0.001}])
    invoke = namespace["invoke_component"]
    assert [invoke(p.entry, None) for p in plan.items] == \
        [namespace["spin"](1000), "nothing", "slept"]
    assert [p.entry.id for p in plan.items] == ["e0000", "e0001", "e0002"]
    assert plan.total_calls == 3


def test_both_sides_agreeing_is_no_miss_and_their_outputs_are_the_components(
        tmp_path: Path) -> None:
    bench = benchmark()
    sides = bench.Sides(InProcess(), InProcess(), tmp_path)
    plan = bench.plan_of([{"work": "spin", "loops": n} for n in (10, 20, 30)])
    here, there, misses = sides.both("spin", plan, 2, rounds=2)
    assert misses == []
    assert here.outputs == there.outputs == tuple(bench.spin(n) for n in (10, 20, 30)) * 2


def test_the_cpu_of_a_part_is_split_between_this_process_ray_and_the_rest_of_the_machine(
        ) -> None:
    pytest.importorskip("psutil")
    bench = benchmark()
    before = (10.0, 1.0, 2.0, {1: (bench.WORKERS, 5.0), 3: (bench.REST_OF_RAY, 9.0),
                               4: (bench.BRIDGE, 1.0)})
    after = (14.5, 1.5, 2.5, {1: (bench.WORKERS, 7.0), 2: (bench.REST_OF_RAY, 0.5),
                              4: (bench.BRIDGE, 1.5)})
    # the machine was busy 4.5 s: 0.5 this process, 2 a worker, 0.5 the bridge, 0.5 a process
    # of Ray that started meanwhile (one that ended is the rest of the machine's), 1 others
    assert bench.cpu_use(before, after) == {
        "this process": 0.5, "Ray workers": 2.0, "Ray bridge": 0.5, "rest of Ray": 0.5,
        "other processes": 1.0, "steal": 0.5}


def test_a_process_of_the_ray_started_for_the_benchmark_is_known_by_its_command_line(
        ) -> None:
    bench = benchmark()
    assert bench._role("ray::CallWorker.call") == "Ray workers"
    assert bench._role("python -c import sys; from evalkit.calls.ray._bridge import main; "
                       "sys.exit(main(int(sys.argv[1]))) 7") == "Ray bridge"
    assert bench._role("/ray/core/src/ray/raylet/raylet --raylet_socket_name=x") == \
        "rest of Ray"


def test_a_side_that_answers_otherwise_or_fails_is_a_miss(tmp_path: Path) -> None:
    bench = benchmark()
    plan = bench.plan_of([{"work": "nothing"}] * 3)

    def broken(entry: Any, call: Any) -> str:
        raise RuntimeError("no worker")

    _, _, differing = bench.Sides(InProcess(), Answering(lambda e, c: "other"),
                                  tmp_path).both("no-op", plan, 3)
    assert differing == ["no-op: 3 call(s) gave another output on Ray than in-process"]
    _, _, failing = bench.Sides(InProcess(), Answering(broken), tmp_path).both("no-op", plan, 3)
    assert failing == ["no-op on Ray: 3 call(s) failed, e.g. e0000: RuntimeError: no worker",
                       "no-op: 3 call(s) gave another output on Ray than in-process"]
