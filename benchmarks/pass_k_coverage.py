"""Coverage of the pass@k and pass^k intervals of a replicate series, by seeded simulation.

Each simulated series draws ``m`` items from a pool whose per-item success probabilities p
follow a Beta(a, b) distribution, runs every item ``--replicates`` times (each right with its
own p), and computes :func:`evalkit.stats.pass_k` on the table. An interval covers when it
holds the pool's true value, the mean over items of 1 - (1 - p)^k (pass@k) or p^k (pass^k),
known exactly for a Beta pool::

    E[p^k]       = B(a + k, b) / B(a, b)
    E[(1 - p)^k] = B(a, b + k) / B(a, b)

The items are a sample of the pool, so the target is the pool's mean, not the mean over the
items drawn: an interval that ignored item sampling would miss it. Beside evalkit's interval
(Wilson at the effective number of items, two pseudo-items in the variance: ``PASS_K_INTERVAL``)
the t interval over the same item-level values is measured, the textbook choice it was
preferred to.

    .venv/bin/python benchmarks/pass_k_coverage.py [--series 2000] [--replicates 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.special import betaln
from scipy.stats import t as student_t

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.stats import ItemMean, pass_at_k, pass_hat_k, pass_k  # noqa: E402

POOLS = {
    # name: (a, b) of the Beta distribution of per-item success probabilities
    "solid (mean 0.85)": (5.0, 0.9),
    "mixed (mean 0.6)": (1.2, 0.8),
    "split (U-shaped, mean 0.5)": (0.3, 0.3),
    "hard (mean 0.25)": (1.0, 3.0),
}
ITEMS = (20, 50, 200)
CONFIDENCE = 0.95


def truth(a: float, b: float, k: int) -> tuple[float, float]:
    """The pool's pass@k and pass^k."""
    return (1 - float(np.exp(betaln(a, b + k) - betaln(a, b))),
            float(np.exp(betaln(a + k, b) - betaln(a, b))))


def t_bounds(values: np.ndarray) -> tuple[float, float]:
    """The t interval of the mean of ``values``."""
    m = len(values)
    half = student_t.ppf(0.5 + CONFIDENCE / 2, m - 1) * values.std(ddof=1) / np.sqrt(m)
    return values.mean() - half, values.mean() + half


def coverage(a: float, b: float, m: int, replicates: int, series: int,
             rng: np.random.Generator) -> dict[int, tuple[float, float, float, float]]:
    """k -> coverage of (pass@k Wilson, pass@k t, pass^k Wilson, pass^k t)."""
    covered = np.zeros((replicates, 4))
    targets = [truth(a, b, k) for k in range(1, replicates + 1)]
    estimates = {name: np.array([[f(replicates, c, k) for k in range(1, replicates + 1)]
                                 for c in range(replicates + 1)])
                 for name, f in (("at", pass_at_k), ("hat", pass_hat_k))}
    for _ in range(series):
        right = rng.random((m, replicates)) < rng.beta(a, b, m)[:, None]
        table = {f"i{i}": dict(enumerate(row.tolist())) for i, row in enumerate(right)}
        result = pass_k(table, CONFIDENCE)
        counts = right.sum(axis=1)
        for k in range(1, replicates + 1):
            row = result.at(k)
            for column, (mean, name, target) in enumerate(
                    ((row.pass_at, "at", targets[k - 1][0]),
                     (row.pass_hat, "hat", targets[k - 1][1]))):
                low, high = t_bounds(estimates[name][counts, k - 1])
                covered[k - 1, 2 * column] += _holds(mean, target)
                covered[k - 1, 2 * column + 1] += low <= target <= high
    return {k: tuple(covered[k - 1] / series) for k in range(1, replicates + 1)}


def _holds(mean: ItemMean, target: float) -> bool:
    return mean.low <= target <= mean.high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=2000)
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"coverage at nominal {CONFIDENCE} ({args.series} series each, "
          f"{args.replicates} replicates); Wilson at n_eff (evalkit) | t over items")
    print("| pool | items | k | pass@k true | pass@k Wilson | pass@k t | pass^k true "
          "| pass^k Wilson | pass^k t |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for pool, (a, b) in POOLS.items():
        for m in ITEMS:
            for k, (at_w, at_t, hat_w, hat_t) in coverage(a, b, m, args.replicates,
                                                          args.series, rng).items():
                if k not in (1, 2, 3, args.replicates):
                    continue
                at_true, hat_true = truth(a, b, k)
                print(f"| {pool} | {m} | {k} | {at_true:.3f} | {at_w:.3f} | {at_t:.3f} "
                      f"| {hat_true:.3f} | {hat_w:.3f} | {hat_t:.3f} |")


if __name__ == "__main__":
    main()
