"""Which entries people label: a seeded draw stratified by the judge's verdict.

Labels only enter the corrected accuracy when the entries were drawn at random with known
inclusion probabilities; a draw within the judge's passes and within its failures gives the
rarer verdict labels a simple random sample would seldom reach.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DrawnEntry:
    """One entry drawn for a label: the judge's verdict (its stratum) and the probability that
    the draw included it, n_h / N_h."""

    entry_id: str
    verdict: bool
    inclusion_probability: float


@dataclass(frozen=True)
class LabelDraw:
    """A stratified draw: per verdict its entries N_h and the drawn ones, in draw order."""

    seed: int
    entries: Mapping[bool, int]
    drawn: tuple[DrawnEntry, ...]

    def of(self, verdict: bool) -> tuple[DrawnEntry, ...]:
        return tuple(d for d in self.drawn if d.verdict is verdict)


def draw_for_labels(verdicts: Mapping[str, bool], n: int, seed: int) -> LabelDraw:
    """Draw ``n`` entries (or all, if fewer): half among the judge's passes and half among its
    failures (an odd one to the more common verdict), the share one verdict cannot fill
    going to the other; within a verdict a
    simple random sample without replacement, so each of its N_h entries is included with
    probability n_h / N_h. The same verdicts, n and seed give the same draw: entries are
    sorted by id before a ``random.Random`` seeded with the SHA-256 of the seed shuffles
    them (Python's Mersenne Twister, stable across releases for ``sample``).

    Notes
    -----
    Stratum h (the judge's passes, its failures) has N_h entries; n_h of them are drawn by
    simple random sampling without replacement, so each is included with probability
    pi = n_h / N_h, the weight N_h / n_h an unbiased stratified estimate gives its label.

    References
    ----------
    W. G. Cochran, *Sampling Techniques*, 3rd ed. (1977), 5.1-5.3 (stratified random
    sampling); A. Fisch et al., "Stratified prediction-powered inference for hybrid language
    model evaluation", NeurIPS 2024 (strata by the judge's verdict).

    Examples
    --------
    >>> from evalkit.stats import draw_for_labels
    >>> verdicts = {f"e{i}": i % 5 != 0 for i in range(20)}
    >>> d = draw_for_labels(verdicts, 6, seed=7)
    >>> d.entries, len(d.of(True)), len(d.of(False))
    ({True: 16, False: 4}, 3, 3)
    >>> sorted({e.inclusion_probability for e in d.drawn})
    [0.1875, 0.75]
    """
    if n < 0:
        raise ValueError(f"cannot draw {n} entries")
    members = {h: sorted(e for e, v in verdicts.items() if v is h) for h in (True, False)}
    smaller = min(members, key=lambda h: (len(members[h]), h))
    counts = {smaller: min(len(members[smaller]), n // 2)}
    counts[not smaller] = min(len(members[not smaller]), n - counts[smaller])
    counts[smaller] = min(len(members[smaller]), n - counts[not smaller])
    digest = hashlib.sha256(f"evalkit-labels-{seed}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    drawn = tuple(
        DrawnEntry(entry_id, h, counts[h] / len(members[h]))
        for h in (True, False) for entry_id in rng.sample(members[h], counts[h]))
    return LabelDraw(seed, {h: len(m) for h, m in members.items()}, drawn)


DRAWS_FORMAT = "evalkit.label-draws/1"


@dataclass(frozen=True)
class LabelDraws:
    """The draws recorded on a run, by test type (a run's
    :attr:`~evalkit.records.RunRecord.label_draws`)."""

    by_type: Mapping[str, LabelDraw]

    def to_json(self) -> dict[str, Any]:
        return {"format": DRAWS_FORMAT, "types": {
            test_type: {"seed": d.seed,
                        "entries": {"pass": d.entries[True], "fail": d.entries[False]},
                        "drawn": [{"entry_id": e.entry_id, "verdict": e.verdict,
                                   "inclusion_probability": e.inclusion_probability}
                                  for e in d.drawn]}
            for test_type, d in sorted(self.by_type.items())}}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LabelDraws:
        if doc.get("format") != DRAWS_FORMAT:
            raise ValueError(f"unsupported label-draws format {doc.get('format')!r}")
        return cls({test_type: LabelDraw(
            d["seed"], {True: d["entries"]["pass"], False: d["entries"]["fail"]},
            tuple(DrawnEntry(e["entry_id"], e["verdict"], e["inclusion_probability"])
                  for e in d["drawn"]))
            for test_type, d in doc["types"].items()})
