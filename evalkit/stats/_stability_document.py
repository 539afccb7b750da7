"""What a replicate series keeps of its statistics: ``stability/stability.json``, typed.

:class:`StabilitySummary` is one metric's :class:`ReplicateStability` as stored (the flip
partition by its counts and the items that changed, pass@k and pass^k);
:class:`StabilityDocument` is the whole file: the series' seeds and one summary per metric.
Each reads back what it writes (``from_json(to_json())`` is the identity), and reads the files
of earlier runs, which have the same shape (without pass@k and pass^k).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.stats._pass_k import PassK
from evalkit.stats._stability import (
    EffectiveInterval,
    PairDisagreement,
    ReplicateStability,
    VarianceComponents,
)

SEED_DERIVATION = ("int.from_bytes(sha256(f'{root_seed}:{pack_id}:{replicate}')"
                   ".digest()[:8], 'big') >> 11")
"""How each replicate's seed is derived (see :func:`replicate_seed`), as the files say it."""


@dataclass(frozen=True)
class FlipCounts:
    """The flip partition as stored: how many items in each class, and which changed."""

    always_right: int
    always_wrong: int
    changed: int
    seen_once: int
    changed_items: tuple[str, ...]


@dataclass(frozen=True)
class StabilitySummary:
    """One metric's run-to-run statistics as a series stores them."""

    metric: str
    rates: Mapping[int, tuple[int, int]]
    """replicate -> (successes, observations)."""
    mean: float
    sd: float | None
    spread: float
    unstable_items: int
    repeated_items: int
    components: VarianceComponents | None
    interval: EffectiveInterval | None
    noise_floor: float | None
    pairwise: tuple[PairDisagreement, ...]
    partition: FlipCounts
    reliability: PassK | None = None
    """pass@k and pass^k; ``None`` in the file of a series from before they were kept."""

    @classmethod
    def of(cls, stability: ReplicateStability) -> StabilitySummary:
        partition = stability.partition
        return cls(
            stability.metric, stability.rates, stability.mean, stability.sd, stability.spread,
            stability.unstable_items, stability.repeated_items, stability.components,
            stability.interval, stability.noise_floor, stability.pairwise,
            FlipCounts(len(partition.always_right), len(partition.always_wrong),
                       len(partition.changed), len(partition.seen_once), partition.changed),
            stability.reliability)

    def to_json(self) -> dict[str, Any]:
        """The shape of seeds/000's worked example, with the flip statistics and pass@k and
        pass^k (``reliability``) added."""
        i, p = self.interval, self.partition
        # absent, not null, in the file of an earlier series: it reads back as it was
        reliability = {} if self.reliability is None else {
            "reliability": self.reliability.to_json()}
        return {
            "metric": self.metric,
            "rates": {str(r): list(v) for r, v in self.rates.items()},
            "mean": self.mean, "sd": self.sd, "spread": self.spread,
            "unstable_items": self.unstable_items, "repeated_items": self.repeated_items,
            "components": self.components.to_json() if self.components else None,
            "interval": None if i is None else {
                "p": i.p, "n_eff": i.n_eff, "confidence": i.confidence, "low": i.low,
                "high": i.high},
            "noise_floor": self.noise_floor,
            "pairwise": [{"replicates": [q.first, q.second], "shared": q.shared,
                          "disagree": q.disagree, "rate": q.rate} for q in self.pairwise],
            "partition": {"always_right": p.always_right, "always_wrong": p.always_wrong,
                          "changed": p.changed, "seen_once": p.seen_once,
                          "changed_items": list(p.changed_items)},
            **reliability,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> StabilitySummary:
        interval, partition = doc["interval"], doc["partition"]
        return cls(
            metric=doc["metric"],
            rates={int(r): (int(v[0]), int(v[1])) for r, v in doc["rates"].items()},
            mean=doc["mean"], sd=doc["sd"], spread=doc["spread"],
            unstable_items=doc["unstable_items"], repeated_items=doc["repeated_items"],
            components=None if doc["components"] is None
            else VarianceComponents.from_json(doc["components"]),
            interval=None if interval is None else EffectiveInterval(**interval),
            noise_floor=doc["noise_floor"],
            pairwise=tuple(PairDisagreement(q["replicates"][0], q["replicates"][1],
                                            q["shared"], q["disagree"])
                           for q in doc["pairwise"]),
            partition=FlipCounts(partition["always_right"], partition["always_wrong"],
                                 partition["changed"], partition["seen_once"],
                                 tuple(partition["changed_items"])),
            reliability=PassK.from_json(doc["reliability"]) if "reliability" in doc else None)


@dataclass(frozen=True)
class StabilityDocument:
    """``stability/stability.json``: the seeds of a series and its statistics per metric."""

    pack_id: str
    root_seed: int
    seeds: tuple[int, ...]
    metrics: tuple[StabilitySummary, ...]
    derivation: str = SEED_DERIVATION

    def to_json(self) -> dict[str, Any]:
        return {"pack_id": self.pack_id, "root_seed": self.root_seed,
                "derivation": self.derivation, "seeds": list(self.seeds),
                "metrics": [m.to_json() for m in self.metrics]}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> StabilityDocument:
        return cls(doc["pack_id"], doc["root_seed"], tuple(doc["seeds"]),
                   tuple(StabilitySummary.from_json(m) for m in doc["metrics"]),
                   doc.get("derivation", SEED_DERIVATION))
