"""Scale check: a generated 10,000-entry dataset, an instantaneous component, the whole
pipeline (lint, calls, scoring, MLflow logging, reports) on a local store.

Prints the wall time of each phase and the peak resident memory. Tracing (one MLflow trace
per entry, with its assessments) is on unless ``--no-trace``; its cost is the difference in
the logging phase between the two:

    .venv/bin/python benchmarks/scale.py [--entries 10000] [--no-trace]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit import Call, Entry, EvalConfig, RunContext, Selection  # noqa: E402
from evalkit.evaluation._evaluation import Evaluation  # noqa: E402
from evalkit.evaluation._prepare import prepare  # noqa: E402
from evalkit.tracking import Tracker  # noqa: E402
from tests.support.builders import entry, write_dataset  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--no-trace", action="store_true",
                        help="TRACE_CALLS = False: no trace per entry")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        os.chdir(folder)  # MLflow's local artifacts land in ./mlruns
        os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
        started = time.perf_counter()
        dataset = write_dataset(folder / "ds", {
            f"{i // 1000:02d}/e{i:05d}": entry("functional", input=f"question {i}",
                                               expected=f"answer {i}")
            for i in range(args.entries)})
        generated = time.perf_counter() - started
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "benchmark/scale", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(folder / "reports"), "EVAL_MIN_ACCURACY": 0.9,
            "MAX_CONCURRENCY": 8, "TRACE_CALLS": not args.no_trace}, "benchmark")

        def component(item: Entry, call: Call) -> str:  # instantaneous; 3% wrong answers
            number = int(item.id.rsplit("e", 1)[1])
            return f"answer {number}" if number % 33 else "something else"

        clock = time.perf_counter()
        prepared = prepare(config, Selection("all"))  # lint and plan
        lint = time.perf_counter() - clock
        tracker = Tracker(f"sqlite:///{folder / 'mlflow.db'}")
        clock = time.perf_counter()
        with tracker.run(config.experiment_name, prepared.run_name(), prepared.params(),
                         prepared.tags(), raw_dir=folder / "runs",
                         traced=config.trace_calls) as run:
            outcome = Evaluation(run, prepared, component, RunContext()).complete()
        total = time.perf_counter() - clock
        report = (folder / "reports" / "report-functional.md").read_text()

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (metrics,) = outcome.metrics
    print(f"{args.entries} entries ({generated:.1f} s to generate), accuracy "
          f"{metrics.accuracy:.3f}, report {len(report.splitlines())} lines, tracing "
          f"{'off' if args.no_trace else 'on'}")
    print(f"{'lint + plan':<14}{lint:8.2f} s")
    for phase, seconds in outcome.timings.items():
        print(f"{phase:<14}{seconds:8.2f} s")
    print(f"{'run total':<14}{total:8.2f} s (run start and closing included)")
    print(f"peak RSS {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
