"""Lint speed: a generated dataset of 10,000 entries (each input a small nested object), linted
three times in process; prints the best wall time.

    .venv/bin/python benchmarks/lint.py [--entries 10000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalkit import lint_dataset  # noqa: E402
from tests.conftest import entry, write_dataset  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dataset = write_dataset(Path(scratch) / "ds", {
            f"{i // 1000:02d}/e{i:05d}": entry(
                "functional", input={"question": f"question {i}", "context": [1, {"a": "b"}]},
                expected=f"answer {i}")
            for i in range(args.entries)})
        times = []
        for _ in range(3):
            started = time.perf_counter()
            report = lint_dataset(dataset)
            times.append(time.perf_counter() - started)
        assert report.ok, report.render()
    print(f"lint of {args.entries:,} entries: best of 3 {min(times):.2f} s")


if __name__ == "__main__":
    main()
