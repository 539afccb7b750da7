"""Concurrency benchmark: how close a judged run gets to the ideal wall time.

A local OpenAI-compatible server (tests/support/openai_stub.py, in a process of its own) answers
every call after a fixed latency. The evaluation has ENTRIES repeatability entries at
REPEAT_COUNT, a component that calls the server for every repeat, and the LLM judge (one
call per entry), all at MAX_CONCURRENCY calls in flight. The ideal wall time is
calls x latency / concurrency; the ratio of the measured wall time (the whole evaluate():
preflight, calls, judging, MLflow logging and reports) to it is printed. Target: at most
1.15 for a plain component (threads) at concurrency 16 and 1.3 at 64, with tracing
on (the default; ``--no-trace`` sets TRACE_CALLS = False to measure its cost).

--mode=async makes the component an ``async def`` that calls the server with the async OpenAI
client (openai.AsyncOpenAI; --http=aiohttp gives it openai's aiohttp transport, which costs
far less CPU per call than httpx's at hundreds of connections), run by evalkit on one event
loop. Target: at most 1.3 at concurrency 256.

    .venv/bin/python benchmarks/concurrency.py [--entries 200] [--repeats 5]
                                                [--concurrency 16] [--latency 0.2]
                                                [--mode sync|async] [--no-trace]
    .venv/bin/python benchmarks/concurrency.py --mode=async --http=aiohttp \
        --concurrency=256 --entries=400 --latency=2
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGETS = {("sync", 16): 1.15, ("sync", 64): 1.3, ("async", 256): 1.3}
"""The goals of issues 3, 11 and 12 (mode, concurrency) -> at most this ratio."""
sys.path.insert(0, str(REPO))

from evalkit import (  # noqa: E402
    Call,
    ChatEndpoint,
    Component,
    Entry,
    EvalConfig,
    RunContext,
    Selection,
    evaluate,
)
from evalkit.tracking import Tracker  # noqa: E402
from tests.support.builders import entry, write_dataset  # noqa: E402
from tests.support.openai_stub import OpenAIStub, fixed_latency  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--mode", choices=["sync", "async"], default="sync",
                        help="a plain component on threads, or an async def one (AsyncOpenAI)")
    parser.add_argument("--http", choices=["httpx", "aiohttp"], default="httpx",
                        help="the async client's transport: openai's default (httpx) or "
                             "openai.DefaultAioHttpClient (aiohttp)")
    parser.add_argument("--no-trace", action="store_true",
                        help="TRACE_CALLS = False: no trace per entry")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch, stub_process(args.latency) as base_url:
        folder = Path(scratch)
        os.chdir(folder)  # MLflow's local artifacts land in ./mlruns
        os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-benchmark",
                          MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false")
        dataset = write_dataset(folder / "ds", {f"e{i:04d}": entry("repeatability")
                                                for i in range(args.entries)})
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "benchmark/concurrency", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(folder / "reports"), "REPEAT_COUNT": args.repeats,
            "EVAL_MIN_ACCURACY_REPEATABILITY": 0.0, "SCORER": "llm_judge",
            "JUDGE_MODEL": "stub-judge", "MAX_CONCURRENCY": args.concurrency,
            "TRACE_CALLS": not args.no_trace}, "benchmark")
        component: Component = (sync_component() if args.mode == "sync"
                                else async_component(args.http))

        tracker = Tracker(f"sqlite:///{folder / 'mlflow.db'}")
        started, cpu = time.perf_counter(), time.process_time()
        outcome = evaluate(config, component, Selection("repeatability"),
                           RunContext(tracker=tracker, runs_dir=folder / "runs"))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu

    component_calls = args.entries * args.repeats
    judge_calls = args.entries + 1  # one per entry, and the preflight
    calls = component_calls + judge_calls
    ideal = calls * args.latency / args.concurrency
    client = args.http if args.mode == "async" else "threads"
    print(f"{args.mode} component ({client}): entries {args.entries}, REPEAT_COUNT {args.repeats}, "
          f"concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms")
    print(f"calls: {component_calls} component + {judge_calls} judge = {calls}")
    print("tracing", "off" if args.no_trace else "on", "; phases (s):", ", ".join(
        f"{phase} {seconds:.2f}" for phase, seconds in outcome.timings.items()))
    print(f"ideal {ideal:.2f} s (calls x latency / concurrency), measured {wall:.2f} s; "
          f"CPU of this process {cpu:.2f} s")
    print(f"component errors: {outcome.scored.component_errors}")
    target = TARGETS.get((args.mode, args.concurrency))
    print(f"ratio {wall / ideal:.3f}" + (f" (target <= {target})" if target else "")
          + f"; run {outcome.run_id}")


@contextlib.contextmanager
def stub_process(latency: float) -> Iterator[str]:
    """The server in a process of its own, so that its threads do not take the measured
    process's CPU (and GIL) on a small machine; yields its base URL."""
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=_serve, args=(latency, child), daemon=True)
    server.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        server.join(timeout=10)


def _serve(latency: float, connection: Any) -> None:
    with OpenAIStub(fixed_latency(latency, "1")) as stub:
        connection.send(stub.base_url)
        connection.recv()


def sync_component() -> Component:
    component_llm = ChatEndpoint("stub-component")

    def component(item: Entry, call: Call) -> str:
        return component_llm.complete([{"role": "user", "content": str(item.input)}],
                                      temperature=1.0)
    return component


def async_component(http: str) -> Component:
    import openai

    # Its session lives on the evaluation's event loop, closed with it: aiohttp's "unclosed
    # session" notice at exit is that, not a leak of the measured code.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    # OPENAI_BASE_URL and OPENAI_API_KEY name the stub.
    client = openai.AsyncOpenAI(max_retries=0, **(
        {"http_client": openai.DefaultAioHttpClient()} if http == "aiohttp" else {}))

    async def component(item: Entry, call: Call) -> str:
        reply = await client.chat.completions.create(
            model="stub-component", temperature=1.0,
            messages=[{"role": "user", "content": str(item.input)}])
        return reply.choices[0].message.content or ""
    return component


if __name__ == "__main__":
    main()
