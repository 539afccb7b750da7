"""Every item's result in every replicate of a series: ``stability/items.json``, typed.

A series' report lists the items that changed with their answer in each replicate, compare
counts an item by its majority over the replicates, and plan measures p from the verdicts;
all three read these cells (``None`` where a replicate did not score the item).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.records._results import ScoredRun


@dataclass(frozen=True)
class ItemCell:
    """One item in one replicate: whether its verdict was right, and what it answered."""

    correct: bool
    passed: bool
    outputs: tuple[Any, ...]
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {"correct": self.correct, "passed": self.passed, "outputs": list(self.outputs),
                "error": self.error}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ItemCell:
        return cls(doc["correct"], doc["passed"], tuple(doc["outputs"]), doc["error"])


Row = tuple[ItemCell | None, ...]
"""One cell per replicate, in replicate order."""


@dataclass(frozen=True)
class SeriesItems:
    """test type -> item id -> its row of cells."""

    types: Mapping[str, Mapping[str, Row]]

    @classmethod
    def of(cls, replicates: Sequence[ScoredRun]) -> SeriesItems:
        rows: dict[str, dict[str, list[ItemCell | None]]] = {}
        for index, scored in enumerate(replicates):
            for result in scored.types:
                cells = rows.setdefault(result.test_type, {})
                for item in result.items:
                    row = cells.setdefault(item.id, [None] * len(replicates))
                    row[index] = ItemCell(item.correct, item.passed, item.outputs, item.error)
        return cls({t: {i: tuple(row) for i, row in items.items()} for t, items in rows.items()})

    def to_json(self) -> dict[str, Any]:
        return {t: {i: [None if c is None else c.to_json() for c in row]
                    for i, row in items.items()} for t, items in self.types.items()}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SeriesItems:
        return cls({t: {i: tuple(None if c is None else ItemCell.from_json(c) for c in row)
                        for i, row in items.items()} for t, items in doc.items()})
