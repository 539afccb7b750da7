"""Stale labels: how long the refusal of a label file whose entry ids all went stale takes
(``LABELS_PATH`` before a run's first call, ``evalkit label RUN --from FILE``: both read the
file with ``read_label_file``). A generated dataset of 2,000 functional entries and a label
file of 5,000 rows naming ids no entry has (the entries were renamed); the file is read three
times in process against the dataset's ids, and the whole check before a run (the dataset
loaded and linted, then ``LABELS_PATH`` read) once; prints the best time of the first and the
time of the second, each as wall time and as this process's CPU time (the machine's load
inflates the first, not the second).

    .venv/bin/python benchmarks/stale_labels.py [--entries 2000] [--rows 5000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit import EvalConfig, LabelFileInvalid, Selection  # noqa: E402
from evalkit.dataset import load_dataset, read_label_file  # noqa: E402
from evalkit.evaluation._prepare import prepare  # noqa: E402
from evalkit.review._labelling import known_entries  # noqa: E402
from tests.support.builders import entry, write_dataset  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=2_000)
    parser.add_argument("--rows", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dataset = write_dataset(folder / "ds", {
            f"{('billing', 'shipping', 'account')[i % 3]}/ticket-{i:05d}": entry(
                "functional", input=f"question {i}", expected=f"answer {i}")
            for i in range(args.entries)})
        labels = folder / "labels.jsonl"
        labels.write_text("".join(json.dumps({
            "entry_id": f"{('billing', 'shipping', 'account')[i % 3]}/old-ticket-{i:05d}",
            "type": "functional", "verdict": "pass"}) + "\n" for i in range(args.rows)),
            encoding="utf-8")
        known = known_entries(load_dataset(dataset))
        times = []
        for _ in range(3):
            started = _clocks()
            problems = _refusal(lambda: read_label_file(labels, known, "bench"))
            times.append(_since(started))
        config = EvalConfig.from_constants({
            "EXPERIMENT_NAME": "bench/stale-labels", "DATASET_PATH": str(dataset),
            "EVAL_MIN_ACCURACY": 0.5, "LABELS_PATH": str(labels)}, "eval.py")
        started = _clocks()
        _refusal(lambda: prepare(config, Selection("all")))
        before_run = _since(started)
    best = min(times)
    print(f"{args.rows:,} stale label rows against {args.entries:,} entries: refused with "
          f"{problems:,} problems; the label file read: best of 3 {best[0]:.2f} s wall, "
          f"{best[1]:.2f} s CPU; the whole check before a run (dataset loaded and linted, "
          f"LABELS_PATH read): {before_run[0]:.2f} s wall, {before_run[1]:.2f} s CPU")


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(started: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clocks()
    return wall - started[0], cpu - started[1]


def _refusal(check: object) -> int:
    """Run ``check``, which must refuse the file; the number of problems it named."""
    try:
        check()  # type: ignore[operator]
    except LabelFileInvalid as refused:
        return len(refused.problems)
    raise AssertionError("the stale label file was not refused")


if __name__ == "__main__":
    main()
