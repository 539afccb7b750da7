"""Run journals and bundles: a run that MLflow could not take, kept whole on local disk.

A tracked run journals everything it writes. When the tracking server becomes
unreachable mid-run, the run goes on against the journal; at the end the journal is written
as a *bundle* (``bundle.json`` with the run's identity, params, tags and every metric point,
and ``artifacts/`` laid out as in MLflow), and reports are rendered from it exactly as they
would have been from the server. ``evalkit sync BUNDLE`` later uploads it into the same
MLflow run (or a new one, when the server lost the original), after which the server holds
what an uninterrupted run would have held.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from evalkit._errors import TrackingError

BUNDLE_FILE = "bundle.json"
SYNCED_FILE = "synced.json"
BUNDLES_DIR = Path(".evalkit") / "bundles"
BUNDLE_FORMAT = "evalkit.bundle/1"


class LoggedPoint(NamedTuple):
    """A metric point as a store keeps it: with the time it was logged."""

    key: str
    value: float
    step: int
    timestamp_ms: int


@dataclass
class RunJournal:
    """What evalkit has written to one run, in the order written."""

    run_id: str
    run_name: str
    experiment_id: str
    experiment_name: str
    start_time_ms: int
    tracking_uri: str
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: list[LoggedPoint] = field(default_factory=list)
    artifacts: dict[str, bytes | Path] = field(default_factory=dict)
    """Artifact path -> content, or the local file it was uploaded from."""
    status: str = "RUNNING"
    assessments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Entry id -> assessments added to its trace after the run's own (the stability of a
    replicate series, on its last replicate), as :class:`Assessment` fields."""

    def artifact_bytes(self, path: str) -> bytes:
        content = self.artifacts.get(path)
        if content is None:
            raise TrackingError(f"run {self.run_id} has no {path}")
        return content.read_bytes() if isinstance(content, Path) else content

    def latest_metrics(self) -> dict[str, float]:
        """Each key's latest value: the point with the highest (step, timestamp, value), as
        MLflow's stores pick it."""
        latest: dict[str, tuple[int, int, float]] = {}
        for key, value, step, timestamp in self.metrics:
            latest[key] = max(latest.get(key, (step, timestamp, value)), (step, timestamp, value))
        return {key: value for key, (_, _, value) in latest.items()}

    def history(self, key: str) -> tuple[float, ...]:
        return tuple(value for _, value, _ in sorted(
            (step, value, timestamp) for k, value, step, timestamp in self.metrics if k == key))

    def write(self, root: Path = BUNDLES_DIR) -> Path:
        """Write the bundle to ``root/<run_id>`` and return that folder."""
        folder = root / self.run_id
        artifacts = folder / "artifacts"
        artifacts.mkdir(parents=True, exist_ok=True)
        for path, content in self.artifacts.items():
            target = artifacts / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, Path):
                shutil.copyfile(content, target)
            else:
                target.write_bytes(content)
        document = {
            "format": BUNDLE_FORMAT, "run_id": self.run_id, "run_name": self.run_name,
            "experiment_id": self.experiment_id, "experiment_name": self.experiment_name,
            "start_time_ms": self.start_time_ms, "tracking_uri": self.tracking_uri,
            "status": self.status, "params": self.params, "tags": self.tags,
            "metrics": [list(point) for point in self.metrics],
            "artifacts": sorted(self.artifacts), "assessments": self.assessments,
        }
        (folder / BUNDLE_FILE).write_text(json.dumps(document, indent=1) + "\n",
                                          encoding="utf-8")
        (folder / SYNCED_FILE).unlink(missing_ok=True)  # a resumed run's new bundle waits again
        return folder

    @classmethod
    def load(cls, folder: Path) -> RunJournal:
        """A bundle written by :meth:`write`."""
        try:
            document = json.loads((folder / BUNDLE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise TrackingError(f"{folder} is not an evalkit bundle ({err}): pass the folder "
                                f"that holds {BUNDLE_FILE}") from None
        if document.get("format") != BUNDLE_FORMAT:
            raise TrackingError(f"{folder}: unsupported bundle format {document.get('format')}")
        return cls(
            run_id=document["run_id"], run_name=document["run_name"],
            experiment_id=document["experiment_id"],
            experiment_name=document["experiment_name"],
            start_time_ms=document["start_time_ms"], tracking_uri=document["tracking_uri"],
            params=document["params"], tags=document["tags"],
            metrics=[LoggedPoint(k, float(v), int(s), int(t))
                     for k, v, s, t in document["metrics"]],
            artifacts={path: folder / "artifacts" / path for path in document["artifacts"]},
            status=document["status"], assessments=document.get("assessments", {}))


def unsynced_bundles(root: Path = BUNDLES_DIR) -> list[Path]:
    """Bundle folders under ``root`` not yet uploaded by ``evalkit sync``."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir()
                  if (p / BUNDLE_FILE).is_file() and not (p / SYNCED_FILE).exists())


def mark_synced(folder: Path, run_id: str, tracking_uri: str, *,
                superseded: bool = False) -> None:
    """Mark the bundle in ``folder`` as done with: uploaded into ``run_id``, or ``superseded``
    by a resume of its run (which holds every call the bundle does, and more)."""
    (folder / SYNCED_FILE).write_text(json.dumps({"run_id": run_id,
                                                  "tracking_uri": tracking_uri,
                                                  "superseded": superseded}) + "\n",
                                      encoding="utf-8")


@dataclass
class Series:
    """What the runs of one series (a parent and its children) share about an outage."""

    bundles_dir: Path
    bundles: list[Path] = field(default_factory=list)
    server_down: bool = False

    def supersede_bundle(self, run_id: str, tracking_uri: str) -> None:
        """A resume of ``run_id`` ends with all the bundle an outage left of it holds (its
        calls read back, or made again), so that bundle no longer waits to be uploaded."""
        folder = self.bundles_dir / run_id
        if (folder / BUNDLE_FILE).is_file() and not (folder / SYNCED_FILE).exists():
            mark_synced(folder, run_id, tracking_uri, superseded=True)
