"""What capturing a component's own spans costs: CPU per call with no span, and per span.

One call window, in-process, over ENTRIES entries of a component that returns at once after
making SPANS spans with ``@mlflow.trace`` (one tool called SPANS times), with and without
evalkit's span capture (:class:`evalkit.tracking.MlflowSpanCapture`); rounds alternate the
settings, and the medians of the process's CPU time per call are printed. The difference
between the capture and no capture at 0 spans is what every call of a run pays; the slope
between 0 and SPANS spans with the capture is the cost of one span (most of it MLflow's own
span creation; without the capture MLflow would export those spans instead).

    .venv/bin/python benchmarks/component_spans.py [--entries 2000] [--spans 5] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import mlflow  # noqa: E402

from evalkit import Call, Entry  # noqa: E402
from evalkit._secrets import Redactor  # noqa: E402
from evalkit.calls import CallWindow, SpanCapture, no_capture  # noqa: E402
from evalkit.tracking import MlflowSpanCapture, RawResultsLog  # noqa: E402
from tests.support.builders import entry, plan_of  # noqa: E402


@mlflow.trace(span_type="TOOL")
def tool(number: int) -> int:
    return number


def component_making(spans: int) -> Any:
    def component(item: Entry, call: Call) -> str:
        for number in range(spans):
            tool(number)
        return "a"

    return component


def cpu_per_call_ms(plan: Any, folder: Path, spans: int, capture: SpanCapture) -> float:
    window = CallWindow.of(component_making(spans), {}, Redactor(), capture=capture,
                           concurrency=1)
    with RawResultsLog(folder / f"raw-{time.monotonic_ns()}.jsonl") as log:
        started = time.process_time()
        outputs = window.run(plan, log)
        used = time.process_time() - started
    calls = sum(len(o.calls) for o in outputs)
    assert all(len(c.spans) == (spans if capture is not no_capture else 0)
               for o in outputs for c in o.calls)
    return used / calls * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--spans", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        plan = plan_of(folder, {f"e{i}": entry("functional") for i in range(args.entries)},
                       repeats=2)
        settings = {"no capture, 0 spans": (0, False), "capture, 0 spans": (0, True),
                    f"capture, {args.spans} spans": (args.spans, True)}
        measured: dict[str, list[float]] = {name: [] for name in settings}
        with MlflowSpanCapture() as capture:
            for _ in range(args.rounds):
                for name, (spans, captured) in settings.items():
                    measured[name].append(cpu_per_call_ms(
                        plan, folder, spans, capture if captured else no_capture))
    medians = {name: statistics.median(values) for name, values in measured.items()}
    for name, values in measured.items():
        print(f"{name:>22}: {medians[name]:.3f} ms CPU per call "
              f"(rounds: {', '.join(f'{v:.3f}' for v in values)})")
    base, idle, busy = medians.values()
    print(f"capture, per call with no span: {idle - base:+.3f} ms CPU")
    print(f"one component span, captured: {(busy - idle) / args.spans:.3f} ms CPU")


if __name__ == "__main__":
    main()
