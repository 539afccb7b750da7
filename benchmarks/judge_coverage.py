"""Coverage of the judge-corrected accuracy interval, by seeded simulation.

A judged run is simulated with a known true accuracy (the share of entries a person passes),
a judge of known true-positive and true-negative rate (equal here: the judge's accuracy on
either kind of entry), N entries and n labels drawn either as a simple random sample (PPI++,
``ppi_mean``) or half among the judge's passes and half among its failures (stratified PPI,
``stratified_ppi_mean``). Per cell, over ``--runs`` runs: how often the 95% corrected
interval covers the true accuracy, among the runs with enough labels, and how often the
judge-only Wilson interval does. Enough labels: for the stratified draw evalkit makes, its
own rule (``labels_missing``: ``MIN_LABELS_PER_CLASS`` labels among the judge's passes and
among its failures, or all of a verdict's entries; below that a run gives no corrected
figure); for PPI++ on a simple random sample (``ppi_mean``, which evalkit's runs do not
use), that many labels of each kind (a pass and a fail to the person): with fewer, its
variance estimate misses the rarer kind and the interval falls short. A cell where fewer
than half of the runs have enough labels is marked "few": the run would say how many more
labels it needs.

    .venv/bin/python benchmarks/judge_coverage.py [--runs 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.stats import (  # noqa: E402
    MIN_LABELS_PER_CLASS,
    CorrectedAccuracy,
    Stratum,
    draw_for_labels,
    labels_missing,
    ppi_mean,
    stratified_ppi_mean,
    wilson_interval,
)

ACCURACIES = (0.5, 0.8, 0.95)
JUDGE_RATES = (0.7, 0.85, 0.95)
ENTRIES = (1000, 5000)
LABELS = (30, 100, 300)
GOAL = 0.93


def simple(truth: np.ndarray, judge: np.ndarray, n: int,
           rng: np.random.Generator) -> tuple[CorrectedAccuracy | None, bool]:
    labelled = np.zeros(truth.size, dtype=bool)
    labelled[rng.choice(truth.size, n, replace=False)] = True
    kinds = truth[labelled]
    return (ppi_mean(truth[labelled], judge[labelled], judge[~labelled]),
            min(kinds.sum(), (~kinds).sum()) >= MIN_LABELS_PER_CLASS)


def stratified(truth: np.ndarray, judge: np.ndarray, n: int,
               rng: np.random.Generator) -> tuple[CorrectedAccuracy | None, bool]:
    """The draw ``evalkit label --sample`` makes: half the labels among the judge's passes,
    half among its failures."""
    draw = draw_for_labels({str(i): bool(v) for i, v in enumerate(judge)}, n,
                           seed=int(rng.integers(2**31)))
    picked = {h: np.array([int(d.entry_id) for d in draw.of(h)], dtype=int)
              for h in (True, False)}
    strata = {h: Stratum(draw.entries[h], [bool(x) for x in truth[picked[h]]])
              for h in picked}
    return stratified_ppi_mean(strata), not any(labels_missing(strata).values())


def cell(accuracy: float, rate: float, entries: int, labels: int, design: str, runs: int,
         rng: np.random.Generator) -> tuple[float | None, float, float]:
    """(corrected coverage among runs with enough labels, share of such runs, judge-only)."""
    draw = simple if design == "simple" else stratified
    covered = enough = judge_covered = 0
    for _ in range(runs):
        truth = rng.random(entries) < accuracy
        right = rng.random(entries) < rate
        judge = np.where(right, truth, ~truth)
        raw = wilson_interval(int(judge.sum()), entries)
        judge_covered += raw.low <= accuracy <= raw.high
        found, enough_labels = draw(truth, judge, labels, rng)
        if found is None or not enough_labels:
            continue
        enough += 1
        covered += found.low <= accuracy <= found.high
    return (covered / enough if enough else None), enough / runs, judge_covered / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.runs} runs per cell; corrected coverage among runs with enough labels "
          f"({MIN_LABELS_PER_CLASS} of each kind for simple, {MIN_LABELS_PER_CLASS} per "
          "judge verdict for stratified)\n")
    print("| design | accuracy | judge TPR = TNR | entries | labels | corrected | "
          "runs with enough labels | judge only |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    worst = 1.0
    for design, accuracy, rate, entries, labels in product(
            ("simple", "stratified"), ACCURACIES, JUDGE_RATES, ENTRIES, LABELS):
        coverage, share, judge_only = cell(accuracy, rate, entries, labels, design,
                                           args.runs, rng)
        if coverage is None or share < 0.5:
            shown = "few" if coverage is None else f"few ({coverage:.3f})"
        else:
            shown = f"{coverage:.3f}"
            worst = min(worst, coverage)
        print(f"| {design} | {accuracy} | {rate} | {entries} | {labels} | {shown} | "
              f"{share:.2f} | {judge_only:.3f} |", flush=True)
    print(f"\nworst corrected coverage in a cell with enough labels: {worst:.3f} "
          f"(goal {GOAL})")
    sys.exit(0 if worst >= GOAL else 1)


if __name__ == "__main__":
    main()
