"""What a run asks of Ray (:class:`RaySettings`): where, what is shipped, what one call needs,
and so how many worker slots a cluster holds and how many calls each makes at once."""

from __future__ import annotations

import importlib.util
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalkit._distribution import RAY_EXTRA_COMMAND
from evalkit._errors import ConfigError
from evalkit.config import DEFAULT_CALL_RESOURCES

EXCLUDED = [".git", ".venv", "venv", ".cache", ".evalkit", "mlruns", "mlartifacts", "mlflow.db",
            "reports", "__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache", ".ruff_cache"]
"""Left out of the working directory shipped to the workers (Ray also skips .gitignore'd
files): environments, caches, the local MLflow store and evalkit's own run files."""


@dataclass(frozen=True)
class RaySettings:
    """Where and how a run's calls run on Ray."""

    address: str | None
    """The cluster (``host:port``, ``ray://...``); ``None``: a local Ray for this run."""
    working_dir: str
    """The eval script's folder, shipped to every worker."""
    script: str
    """The script's path inside ``working_dir``."""
    component_name: str
    resources: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_CALL_RESOURCES))
    """What one worker slot asks of Ray (``CPU``, ``GPU``, custom resources)."""
    max_concurrency: int = 8
    """The run's ``MAX_CONCURRENCY``: never more calls in flight, nor more worker slots."""

    @property
    def calls_per_slot(self) -> int:
        """Calls one slot makes at once: one when calls ask for resources (a call holds them,
        as a Ray task its CPUs; two CPU-bound calls would take turns on the GIL and end
        together, the slot idle while both results travel back), else ``max_concurrency``."""
        return 1 if any(v > 0 for v in self.resources.values()) else self.max_concurrency

    @property
    def pace(self) -> str:
        """:attr:`calls_per_slot` in words, for the run's start message."""
        n = self.calls_per_slot
        return "one call at a time each" if n == 1 else f"up to {n} calls at once each"

    def slots(self, total: Mapping[str, float]) -> int:
        """How many worker slots a cluster with ``total`` resources holds: as many as fit what
        one call asks, at most ``max_concurrency``, at least one (calls that ask for nothing);
        :class:`ConfigError` when one call asks more than the cluster has."""
        asked = {k: v for k, v in self.resources.items() if v > 0}
        for name, amount in asked.items():
            if total.get(name, 0) < amount:
                raise ConfigError(f"each call asks {amount:g} {name} and the cluster has "
                                  f"{total.get(name, 0):g}: lower CALL_RESOURCES (or "
                                  "--call-resources), or add nodes that have it")
        fits = min((math.floor(total[k] / v) for k, v in asked.items()), default=1)
        return max(1, min(fits, self.max_concurrency))


def require_ray() -> None:
    """Raise :class:`ConfigError` naming the install command when Ray is not installed."""
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(f"--executor=ray needs Ray, which is not installed in "
                          f"{sys.executable}: install evalkit's ray extra ({RAY_EXTRA_COMMAND}), "
                          "or run in-process (no --executor)")
