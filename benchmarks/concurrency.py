"""Concurrency benchmark: how close a judged run gets to the ideal wall time.

A local OpenAI-compatible server (tests/openai_stub.py) answers every call after a fixed
latency. The evaluation has ENTRIES repeatability entries at REPEAT_COUNT, a component that
calls the server for every repeat, and the LLM judge (one call per entry), all at
MAX_CONCURRENCY calls in flight. The ideal wall time is calls x latency / concurrency; the
ratio of the measured wall time (the whole evaluate(): preflight, calls, judging, MLflow
logging and reports) to it is printed. Target: at most 1.15 at concurrency 16, 1.3 at 64,
with tracing on (the default; ``--no-trace`` sets TRACE_CALLS = False to measure its cost).

    .venv/bin/python benchmarks/concurrency.py [--entries 200] [--repeats 5]
                                                [--concurrency 16] [--latency 0.2] [--no-trace]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit import Call, ChatEndpoint, Entry, EvalConfig, Selection, evaluate  # noqa: E402
from evalkit.tracking import Tracker  # noqa: E402
from tests.conftest import entry, write_dataset  # noqa: E402
from tests.openai_stub import OpenAIStub, fixed_latency  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--no-trace", action="store_true",
                        help="TRACE_CALLS = False: no trace per entry")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch, \
            OpenAIStub(fixed_latency(args.latency, "1")) as stub:
        folder = Path(scratch)
        os.chdir(folder)  # MLflow's local artifacts land in ./mlruns
        os.environ.update(OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="sk-benchmark",
                          MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false")
        dataset = write_dataset(folder / "ds", {f"e{i:04d}": entry("repeatability")
                                                for i in range(args.entries)})
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "benchmark/concurrency", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(folder / "reports"), "REPEAT_COUNT": args.repeats,
            "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "SCORER": "llm_judge",
            "JUDGE_MODEL": "stub-judge", "MAX_CONCURRENCY": args.concurrency,
            "TRACE_CALLS": not args.no_trace}, "benchmark")
        component_llm = ChatEndpoint("stub-component")

        def component(item: Entry, call: Call) -> str:
            return component_llm.complete([{"role": "user", "content": str(item.input)}],
                                          temperature=1.0)

        tracker = Tracker(f"sqlite:///{folder / 'mlflow.db'}")
        started = time.perf_counter()
        outcome = evaluate(config, component, Selection("repeatability"), tracker=tracker,
                           runs_dir=folder / "runs")
        wall = time.perf_counter() - started

    component_calls = args.entries * args.repeats
    judge_calls = args.entries + 1  # one per entry, and the preflight
    calls = component_calls + judge_calls
    ideal = calls * args.latency / args.concurrency
    print(f"entries {args.entries}, REPEAT_COUNT {args.repeats}, concurrency "
          f"{args.concurrency}, latency {args.latency * 1000:.0f} ms")
    print(f"calls: {component_calls} component + {judge_calls} judge = {calls}")
    print("tracing", "off" if args.no_trace else "on", "; phases (s):", ", ".join(
        f"{phase} {seconds:.2f}" for phase, seconds in outcome.timings.items()))
    print(f"ideal {ideal:.2f} s (calls x latency / concurrency), measured {wall:.2f} s")
    print(f"ratio {wall / ideal:.3f} (target <= 1.15); run {outcome.run_id}")


if __name__ == "__main__":
    main()
