"""Reference values for the confidence sequences of :mod:`evalkit.stats._sequences` from the
authors' own implementation, PyPI ``confseq`` (``confseq.betting.hedged_cs``), which
``tests/unit/stats/test_sequences.py`` holds as constants.

``confseq`` builds only in a virtualenv of its own (it needs numpy < 2 and Boost)::

    apt-get install -y libboost-dev
    python3 -m venv /work/wt/confseq-venv
    /work/wt/confseq-venv/bin/pip install pybind11 scikit-build cmake "numpy<2"
    /work/wt/confseq-venv/bin/pip install --no-build-isolation confseq
    /work/wt/confseq-venv/bin/pip install "numpy<2"     # confseq's install may lift it
    /work/wt/confseq-venv/bin/python tools/confseq_reference.py

Its settings are evalkit's: theta 1/2 (the maximum of the two half capitals), trunc_scale 1/2
on the candidate mean, the predictable plug-in bets ``lambda_predmix_eb``, a grid of 1000
steps, the running intersection, and without replacement the deterministic bounds.

The series are deterministic arithmetic (no random generator whose stream could change
between numpy versions), so the tests rebuild them from this module without ``confseq``.
"""

from __future__ import annotations

import math

LOOKS = (1, 2, 3, 5, 10, 20, 50, 100, 150, 200, 250, 299, 300)


def _fraction(t: int, step: float) -> float:
    return math.modf(t * step)[0]


GOLDEN = (math.sqrt(5) - 1) / 2


def series() -> dict[str, list[float]]:
    """Named series of values in [0, 1], 300 each: right or wrong 80% of the time, values
    spread over [0, 1], and a paired gap in {-1, 0, 1} mapped onto {0, 1/2, 1}."""
    ts = range(1, 301)
    return {
        "binary": [1.0 if _fraction(t, GOLDEN) < 0.8 else 0.0 for t in ts],
        "spread": [_fraction(t, math.sqrt(2)) for t in ts],
        "paired": [0.0 if _fraction(t, GOLDEN) < 0.1 else 1.0 if _fraction(t, GOLDEN) < 0.25
                   else 0.5 for t in ts],
    }


def main() -> None:
    import numpy as np
    from confseq.betting import hedged_cs

    print("CONFSEQ = {  # (series, N or None): ((look, low, high), ...)")
    for name, values in series().items():
        for total in (None, len(values)):
            low, high = hedged_cs(np.array(values), alpha=0.05, N=total, breaks=1000,
                                  running_intersection=True, theta=0.5, trunc_scale=0.5)
            print(f"    ({name!r}, {total}): (")
            for t in LOOKS:
                print(f"        ({t}, {low[t - 1]:.6f}, {high[t - 1]:.6f}),")
            print("    ),")
    print("}")


if __name__ == "__main__":
    main()
