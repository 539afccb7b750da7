"""Ray: a run's calls on a Ray cluster, through a driver process of its own (the bridge).

:class:`RayPool` is an :class:`~evalkit.calls.Executor`; :class:`RaySettings` say where the
cluster is and what each call needs; ``SETUP_HOOK`` names the eval script's function each
worker runs once.
"""

from evalkit.calls.ray._pool import RayPool
from evalkit.calls.ray._settings import RaySettings, require_ray
from evalkit.calls.ray._worker import SETUP_HOOK

__all__ = ["SETUP_HOOK", "RayPool", "RaySettings", "require_ray"]
