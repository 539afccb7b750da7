"""The component benchmarks/distributed.py measures, in a script of its own: Ray's workers load
this file by path (runpy, as they load a user's eval.py) and call ``invoke_component`` by name,
so it must hold nothing that runs on import. The benchmark calls the same function in-process.

Each entry's input says what its call does, so one pool of workers serves every part of the
benchmark: ``{"work": "spin", "loops": N}`` (pure-Python arithmetic, CPU-bound; N is
calibrated by the benchmark), ``{"work": "nothing"}``, ``{"work": "sleep", "seconds": S}``
(I/O-bound: the thread waits and releases the GIL).
"""

from __future__ import annotations

import time
from typing import Any


def spin(loops: int) -> int:
    """``loops`` rounds of integer arithmetic: CPU time that holds the GIL throughout."""
    total = 0
    for i in range(loops):
        total = (total + i * i) % 1_000_003
    return total


def invoke_component(entry: Any, call: Any) -> Any:
    work = entry.input["work"]
    if work == "spin":
        return spin(int(entry.input["loops"]))
    if work == "sleep":
        time.sleep(float(entry.input["seconds"]))
        return "slept"
    if work == "nothing":
        return "nothing"
    raise ValueError(f"unknown work {work!r}")
