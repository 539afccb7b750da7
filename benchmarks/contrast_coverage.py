"""Coverage of the contrast intervals of ``evalkit plan --against``, by seeded simulation.

Two questions, each over ``--runs`` simulated series (default 10,000):

1. How often does the 95% whole-replicate percentile bootstrap of the replicate means A_r
   cover the true mean, at n = 2..10 replicates (normal A_r)? The t interval is shown beside
   it. These are the figures of ``WHOLE_REPLICATE_BOOTSTRAP_COVERAGE``.
2. With item effects, how often does each interval cover the *population* difference (the
   mean over the population the items were drawn from), rather than the difference on the
   evaluated items? Model: D_ri = delta + a_i + u_r + e_ri, a_i ~ N(0, item_sd^2) item effects,
   u_r ~ N(0, replicate_sd^2) shared per-replicate noise (a shift every item of a replicate
   shares: a provider change, the time of day), e_ri ~ N(0, call_sd^2) call noise.

    .venv/bin/python benchmarks/contrast_coverage.py [--runs 10000] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit.stats import (  # noqa: E402
    items_and_replicates_t_interval,
    replicate_mean_t_interval,
    whole_replicate_bootstrap,
)


def bootstrap_coverage(n: int, runs: int, rng: np.random.Generator,
                       draws: int = 2000) -> tuple[float, float]:
    """(bootstrap, t) coverage of the true mean 0 by intervals on n normal A_r."""
    boot = t = 0
    for run in range(runs):
        a = rng.standard_normal(n)
        interval = whole_replicate_bootstrap(a, draws=draws, seed=run)
        boot += interval.low <= 0 <= interval.high
        t_interval = replicate_mean_t_interval(a)
        t += t_interval.low <= 0 <= t_interval.high
    return boot / runs, t / runs


def population_coverage(n: int, m: int, item_sd: float, replicate_sd: float, call_sd: float,
                        runs: int, rng: np.random.Generator) -> tuple[float, float]:
    """(replicate-mean t, items-and-replicates t) coverage of the population difference 0."""
    replicate_t = both = 0
    for _ in range(runs):
        d = (rng.normal(0, item_sd, m)[None, :] + rng.normal(0, replicate_sd, n)[:, None]
             + rng.normal(0, call_sd, (n, m)))
        t_interval = replicate_mean_t_interval(d.mean(axis=1))
        replicate_t += t_interval.low <= 0 <= t_interval.high
        wide = items_and_replicates_t_interval(d)
        both += wide.low <= 0 <= wide.high
    return replicate_t / runs, both / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"1. coverage of the true mean at nominal 0.95 ({args.runs} series each)")
    print(f"{'n':>3}  {'bootstrap':>9}  {'t':>6}")
    for n in (2, 3, 4, 5, 6, 8, 10):
        boot, t = bootstrap_coverage(n, args.runs, rng)
        print(f"{n:>3}  {boot:>9.3f}  {t:>6.3f}")
    print(f"\n2. coverage of the population difference ({args.runs} series each; m items, "
          "sd of item effects / shared replicate noise / call noise)")
    print(f"{'n':>3} {'m':>4} {'item':>5} {'repl':>5} {'call':>5}  {'replicate-mean t':>16}  "
          f"{'items-and-replicates t':>22}")
    for n, m, item_sd, replicate_sd, call_sd in ((5, 50, 1.0, 0.0, 1.0), (3, 50, 1.0, 0.0, 1.0),
                                                 (5, 50, 0.0, 0.0, 1.0), (5, 50, 1.0, 0.2, 1.0),
                                                 (10, 20, 0.5, 0.1, 1.0),
                                                 # a shift every replicate shares
                                                 (2, 100, 1.0, 0.3, 1.0), (3, 100, 1.0, 0.3, 1.0),
                                                 (2, 100, 1.0, 0.1, 1.0), (3, 100, 1.0, 0.1, 1.0)):
        replicate_t, both = population_coverage(n, m, item_sd, replicate_sd, call_sd,
                                                args.runs, rng)
        print(f"{n:>3} {m:>4} {item_sd:>5g} {replicate_sd:>5g} {call_sd:>5g}  "
              f"{replicate_t:>16.3f}  {both:>22.3f}")


if __name__ == "__main__":
    main()
