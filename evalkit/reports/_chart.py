"""The calibration chart: pass rate against repeat count, as a PNG."""

from __future__ import annotations

from pathlib import Path

from evalkit.stats import Calibration


def plot_calibration(calibration: Calibration, path: Path) -> None:
    """The pass rate against k as a PNG (matplotlib, imported only here). A bare Figure,
    never pyplot: choosing a backend would change the caller's (a notebook's plots)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(7, 4), dpi=100)
    axes = figure.subplots()
    ks = [p.k for p in calibration.points]
    axes.plot(ks, [p.rate for p in calibration.points], marker="o", label="pass rate")
    axes.axvline(calibration.recommended, color="grey", linestyle="--",
                 label=f"recommended k = {calibration.recommended}")
    axes.set(xlabel="repeat count k", ylabel="repeatability pass rate", ylim=(0, 1.02),
             title="Repeatability pass rate by repeat count")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(loc="lower left")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, metadata={"Software": None})
