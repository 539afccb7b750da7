"""Non-inferiority margins per test type: how much worse than the baseline a candidate may be.

``evalkit compare --margin`` asks of two finished runs, and ``python eval.py --against RUN_ID
--margin`` of a sequential run against a recorded one, whether B is no worse than A by more
than each type's margin. Both read the same option text (:meth:`Margins.parse`), and a run
records its margins as that text (:meth:`Margins.text`), so ``--resume`` reads them back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from evalkit._errors import ConfigError


@dataclass(frozen=True)
class Margins:
    """The non-inferiority margin of each test type: how much worse than A (the baseline) B
    (the candidate) may be, as an accuracy difference from 0 to 1.

    >>> margins = Margins.parse(["0.05", "functional=0.02"])
    >>> margins.of("functional"), margins.of("bias"), margins.text()
    (0.02, 0.05, '0.05,functional=0.02')
    """

    default: float | None = None
    """The margin of every type not in ``per_type`` (``None``: those types are not asked)."""
    per_type: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        named = [("every type", self.default), *self.per_type.items()]
        for test_type, margin in named:
            if margin is not None and not 0 <= margin <= 1:
                raise ConfigError(
                    f"--margin: the margin of {test_type} is {margin}, but a margin is an "
                    "accuracy difference from 0 to 1 (e.g. 0.02: B may be at most 2 points "
                    "below A)")

    @classmethod
    def parse(cls, texts: Iterable[str], default: float | None = None) -> Margins:
        """``--margin`` as given, once or more: ``0.02`` for every type, ``TYPE=0.02`` for
        one, comma-separated; ``default``: every other type's margin when none is given."""
        per_type: dict[str, float] = {}
        for part in (p.strip() for text in texts for p in text.split(",")):
            test_type, _, amount = part.rpartition("=")
            try:
                margin = float(amount)
            except ValueError:
                raise ConfigError(
                    f"--margin {part!r}: must read MARGIN or TYPE=MARGIN, a number from 0 to "
                    "1, e.g. --margin 0.02 or --margin functional=0.02") from None
            if not test_type:
                default = margin
            else:
                per_type[test_type.strip()] = margin
        return cls(default, per_type)

    def of(self, test_type: str) -> float | None:
        return self.per_type.get(test_type, self.default)

    def text(self) -> str:
        """The margins as ``--margin`` takes them (what :meth:`parse` reads back)."""
        parts = [] if self.default is None else [f"{self.default:g}"]
        return ",".join(parts + [f"{t}={m:g}" for t, m in sorted(self.per_type.items())])
