"""Wrong verdicts and calls saved by a sequential run, by seeded simulation: evalkit's
confidence sequences (:class:`evalkit.stats.MeanSequence`, :class:`evalkit.stats.PairedSequence`)
against the naive rule "stop at the first look where the ordinary 95% interval clears the
threshold".

Each simulated run draws a dataset of N entries, each right with the true accuracy p (so the
entries come in random order), and looks after every entry:

- (a) *would the whole dataset pass?* (``Scope.DATASET``): a verdict is wrong when it
  contradicts the whole dataset's own verdict (its accuracy >= the threshold);
- (b) *does the component pass on the population?* (``Scope.POPULATION``): wrong when it
  contradicts p >= threshold. At p = threshold either verdict is counted wrong (the data
  cannot tell p from the threshold); the naive rule's PASS alone is shown in brackets, the
  figure of issue 31 (16.5% at 500 entries, 22.4% at 2,000);
- the naive rule: the Wilson interval at every look from the 30th entry on, stopping at the
  first one whose lower bound is >= the threshold (PASS) or whose upper bound is below it
  (FAIL); a run it never stops gives no wrong verdict. Its errors are scored against (b)'s
  truth. (From the first entry on it would fare worse still: one wrong entry puts Wilson's
  upper bound at 0.79, and the z interval of one paired gap has width 0.)

The paired comparison draws per item a gap candidate - baseline in {-1, 0, 1} (20% of the
items discordant, mean gap Delta) and asks :class:`PairedSequence` (margin 0.05) for better /
worse by more than the margin / within the margin, on the pairs (a) and on the population
(b); the naive rule is the ordinary z interval of the mean gap at every look from the 30th on.

Each rate carries its simulation's binomial standard error sqrt(r (1 - r) / runs); a cell is
marked ``!`` when its rate exceeds the level alpha plus twice the standard error of a rate of
alpha at that many runs. Calls saved: the share of the N entries never called,
1 - (look at which the verdict settled) / N, median over the runs (0 for a run that never
settles).

    .venv/bin/python benchmarks/sequential.py [--runs 300] [--large-runs 60] [--seed 0]
        [--jobs 2]
"""

from __future__ import annotations

import argparse
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.stats import (  # noqa: E402
    MeanSequence,
    PairedSequence,
    Scope,
    SequentialVerdict,
    two_sided_z,
)

THRESHOLD = 0.80
ACCURACIES = (0.70, 0.75, 0.80, 0.82, 0.85, 0.90)
SIZES = (200, 500, 2000, 20000)
LARGE = 20000
"""Sizes from here on run ``--large-runs`` times: a run at the threshold reads every entry."""
MARGIN = 0.05
GAPS = (-0.10, -0.05, -0.02, 0.0, 0.05, 0.10)
DISCORDANT = 0.20
PAIRED_SIZES = (500, 2000)
CONFIDENCE = 0.95
LOOKS_PER_BATCH = 100
"""Values handed to a sequence at once; the look where it settled is exact all the same."""
NAIVE_FIRST_LOOK = 30
"""The naive rules look from here on, the textbook's "n >= 30" for a normal interval."""
PASS, FAIL = SequentialVerdict.PASS, SequentialVerdict.FAIL
BETTER, WORSE, WITHIN = (SequentialVerdict.BETTER, SequentialVerdict.WORSE,
                         SequentialVerdict.WITHIN_MARGIN)


@dataclass(frozen=True)
class Outcome:
    """One run: each question's verdict, the look it settled at, and the naive rule's."""

    dataset: SequentialVerdict
    dataset_look: int
    dataset_wrong: bool
    """Whether the dataset's verdict contradicts the whole dataset's own."""
    population: SequentialVerdict
    population_look: int
    naive: SequentialVerdict


def _run(sequence: MeanSequence | PairedSequence, values: np.ndarray) -> tuple[
        SequentialVerdict, int]:
    """Feed ``values`` until the verdict settles; the verdict and the look it settled at
    (every entry when it never did)."""
    batch = max(10, len(values) // LOOKS_PER_BATCH)
    for start in range(0, len(values), batch):
        look = sequence.update(values[start:start + batch])
        if look.verdict.settled:
            return look.verdict, look.settled_at or look.n
    return look.verdict, len(values)


def _naive_mean(values: np.ndarray) -> SequentialVerdict:
    """The first Wilson interval, over the looks, that clears the threshold."""
    n = np.arange(1, len(values) + 1)
    p = np.cumsum(values) / n
    z = two_sided_z(CONFIDENCE)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return _first_settled({PASS: centre - half >= THRESHOLD, FAIL: centre + half < THRESHOLD})


def _naive_gap(gaps: np.ndarray) -> SequentialVerdict:
    """The first ordinary z interval of the mean gap that settles a verdict."""
    n = np.arange(1, len(gaps) + 1)
    mean = np.cumsum(gaps) / n
    variance = np.maximum(np.cumsum(gaps * gaps) / n - mean * mean, 0.0)
    half = two_sided_z(CONFIDENCE) * np.sqrt(variance / np.maximum(n - 1, 1))
    low, high = mean - half, mean + half
    return _first_settled({WORSE: high < -MARGIN, BETTER: low > 0,
                           WITHIN: (low >= -MARGIN) & (high <= MARGIN)})


def _first_settled(settles: dict[SequentialVerdict, np.ndarray]) -> SequentialVerdict:
    """The verdict whose condition holds first over the looks from :data:`NAIVE_FIRST_LOOK`
    on (at one look, the first listed), unsettled when none ever holds."""
    looks = {verdict: int(np.argmax(hits[NAIVE_FIRST_LOOK - 1:]))
             if hits[NAIVE_FIRST_LOOK - 1:].any() else math.inf
             for verdict, hits in settles.items()}
    verdict = min(looks, key=looks.__getitem__)
    return verdict if looks[verdict] < math.inf else SequentialVerdict.UNSETTLED


def accuracy_run(p: float, n: int, rng: np.random.Generator) -> Outcome:
    values = (rng.random(n) < p).astype(float)
    dataset = _run(MeanSequence(n, THRESHOLD, scope=Scope.DATASET), values)
    population = _run(MeanSequence(n, THRESHOLD, scope=Scope.POPULATION), values)
    own = PASS if values.sum() / n >= THRESHOLD else FAIL
    return Outcome(*dataset, dataset[0].settled and dataset[0] is not own, *population,
                   _naive_mean(values))


def paired_run(gap: float, n: int, rng: np.random.Generator) -> Outcome:
    gaps = rng.choice([1.0, -1.0, 0.0], size=n,
                      p=[(DISCORDANT + gap) / 2, (DISCORDANT - gap) / 2, 1 - DISCORDANT])
    dataset = _run(PairedSequence(n, MARGIN, scope=Scope.DATASET), gaps)
    population = _run(PairedSequence(n, MARGIN, scope=Scope.POPULATION), gaps)
    # the pairs' own gap, whole counts over n: compares exactly with the margin
    own = int(gaps.sum()) / n
    return Outcome(*dataset, gap_wrong(dataset[0], own), *population, _naive_gap(gaps))


def accuracy_wrong(verdict: SequentialVerdict, accuracy: float) -> bool:
    """Whether ``verdict`` contradicts a true accuracy (at the threshold, any verdict does)."""
    if accuracy == THRESHOLD:
        return verdict.settled
    return verdict is (FAIL if accuracy > THRESHOLD else PASS)


def gap_wrong(verdict: SequentialVerdict, gap: float) -> bool:
    """Whether ``verdict`` contradicts a mean gap."""
    holds = {BETTER: gap > 0, WORSE: gap < -MARGIN, WITHIN: -MARGIN <= gap <= MARGIN}
    return verdict in holds and not holds[verdict]


@dataclass(frozen=True)
class Cell:
    kind: str
    """"accuracy" or "paired"."""
    truth: float
    n: int
    runs: int
    seed: int


def simulate(cell: Cell) -> list[float]:
    """The cell's rates: wrong (a), wrong (b), wrong naive, naive PASS; then the median
    share saved by (a) and by (b)."""
    rng = np.random.default_rng(cell.seed)
    wrong = np.zeros(4)
    saved: tuple[list[float], list[float]] = ([], [])
    run, score = ((accuracy_run, accuracy_wrong) if cell.kind == "accuracy"
                  else (paired_run, gap_wrong))
    for _ in range(cell.runs):
        outcome = run(cell.truth, cell.n, rng)
        wrong += (outcome.dataset_wrong, score(outcome.population, cell.truth),
                  score(outcome.naive, cell.truth), outcome.naive is PASS)
        saved[0].append(1 - outcome.dataset_look / cell.n)
        saved[1].append(1 - outcome.population_look / cell.n)
    return [*(wrong / cell.runs), float(np.median(saved[0])), float(np.median(saved[1]))]


def _rate(rate: float, runs: int) -> str:
    """A rate with its binomial standard error, ``!`` past alpha + 2 se(alpha)."""
    alpha = 1 - CONFIDENCE
    flag = " !" if rate > alpha + 2 * math.sqrt(alpha * (1 - alpha) / runs) else ""
    return f"{100 * rate:.1f}% ± {100 * math.sqrt(rate * (1 - rate) / runs):.1f}{flag}"


def cells(runs: int, large_runs: int, seed: int) -> list[Cell]:
    grid = [("accuracy", p, n) for n in SIZES for p in ACCURACIES]
    grid += [("paired", gap, n) for n in PAIRED_SIZES for gap in GAPS]
    seeds = np.random.SeedSequence(seed).spawn(len(grid))
    return [Cell(kind, truth, n, large_runs if n >= LARGE else runs,
                 int(s.generate_state(1)[0])) for (kind, truth, n), s in zip(grid, seeds,
                                                                              strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="runs per cell below 20,000")
    parser.add_argument("--large-runs", type=int, default=60, help="runs per 20,000 cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = parser.parse_args()
    todo = cells(args.runs, args.large_runs, args.seed)
    alpha = 1 - CONFIDENCE
    at_alpha = ", ".join(f"{100 * math.sqrt(alpha * (1 - alpha) / runs):.1f}% at {runs} runs"
                         for runs in sorted({args.runs, args.large_runs}, reverse=True))
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(simulate, todo))
    print(f"Threshold {THRESHOLD}, level {CONFIDENCE} (alpha {1 - CONFIDENCE:.2f}); "
          f"seed {args.seed}; rates ± their binomial standard error; "
          f"! = above alpha + 2 se(alpha) (se(alpha): {at_alpha}); the naive rules look from "
          f"entry {NAIVE_FIRST_LOOK}\n")
    print("| true accuracy | entries | runs | wrong (a) dataset | wrong (b) population "
          "| naive Wilson wrong [its PASS] | saved (a) | saved (b) |\n"
          "|---:|---:|---:|---:|---:|---:|---:|---:|")
    _rows([(c, r) for c, r in zip(todo, results, strict=True) if c.kind == "accuracy"])
    print(f"\nPaired gap candidate - baseline, margin {MARGIN}, {DISCORDANT:.0%} of the items "
          "discordant; naive: the ordinary z interval of the mean gap at every look from the "
          f"{NAIVE_FIRST_LOOK}th\n")
    print("| true gap | items | runs | wrong (a) pairs | wrong (b) population "
          "| naive z wrong | saved (a) | saved (b) |\n|---:|---:|---:|---:|---:|---:|---:|---:|")
    _rows([(c, r) for c, r in zip(todo, results, strict=True) if c.kind == "paired"])


def _rows(rows: list[tuple[Cell, list[float]]]) -> None:
    for cell, (a, b, naive, naive_pass, saved_a, saved_b) in rows:
        bracket = f" [{100 * naive_pass:.1f}%]" if cell.kind == "accuracy" else ""
        truth = f"{cell.truth:.2f}" if cell.kind == "accuracy" else f"{cell.truth:+.2f}"
        print(f"| {truth} | {cell.n:,} | {cell.runs} | {_rate(a, cell.runs)} "
              f"| {_rate(b, cell.runs)} | {_rate(naive, cell.runs)}{bracket} "
              f"| {saved_a:.0%} | {saved_b:.0%} |")


if __name__ == "__main__":
    main()
