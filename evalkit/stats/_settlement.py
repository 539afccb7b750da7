"""What a sequential run found (:class:`SequentialOutcome`): each gated type's sequence at the
stop (:class:`TypeSettlement`), the entries and calls made and saved.

Here, beside the sequences, rather than with the run that makes it: the reports, the job
summary and the JUnit XML read it back from the run's ``sequential.json``
(:meth:`SequentialOutcome.from_json`), and each says a type's settlement in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalkit.stats._sequences import Look


@dataclass(frozen=True)
class TypeSettlement:
    """One gated type of a sequential run at its stop."""

    test_type: str
    units: int
    """Its units in the plan (entries, or bias groups)."""
    look: Look
    """Its sequence at the stop: the last look it took (of the paired gap candidate -
    baseline, against a baseline)."""
    not_called: tuple[str, ...] = ()
    """Its units never called, named as its results name them (an entry's id; a bias
    group's), in the drawn order."""
    margin: float | None = None
    """Against a baseline (``--against``): how much worse than it the type may be."""

    @property
    def verdict(self) -> str:
        """PASS or FAIL (against a baseline: better, within the margin or worse by more than
        it) once settled, else INCONCLUSIVE."""
        verdict = self.look.verdict
        return str(verdict) if verdict.settled else "INCONCLUSIVE"

    @property
    def gate(self) -> str:
        """PASS, FAIL or INCONCLUSIVE: better and within the margin pass, worse fails."""
        return self.look.verdict.gate

    def point(self) -> str:
        """Where it stopped: ``PASS at 412 of 2000`` (the look that settled it), or
        ``INCONCLUSIVE after 2000 of 2000``."""
        look = self.look
        if look.settled_at is not None:
            return f"{self.verdict} at {look.settled_at} of {self.units}"
        return f"{self.verdict} after {look.n} of {self.units}"

    def interval(self) -> str:
        """The sequence's interval at the stop: ``[0.812, 0.871]`` (a gap: ``[-0.050,
        +0.050]``)."""
        if self.margin is not None:
            return f"[{self.look.low:+.3f}, {self.look.high:+.3f}]"
        return f"[{self.look.low:.3f}, {self.look.high:.3f}]"

    def failure(self, min_accuracy: float) -> str:
        """Why the type did not pass, in one line (for a type that did not)."""
        look = self.look
        against = (f"against min_accuracy {min_accuracy}" if self.margin is None else
                   f"of the gap candidate - baseline, margin {self.margin:g}")
        return (f"{self.test_type}: {look.verdict} at look {look.n} of {look.total}, interval "
                f"{self.interval()} {against}")

    def to_json(self) -> dict[str, Any]:
        return {"test_type": self.test_type, "units": self.units, "margin": self.margin,
                **self.look.to_json(), "not_called": list(self.not_called)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TypeSettlement:
        # a run recorded before the units not called were listed lists none
        return cls(doc["test_type"], doc["units"], Look.from_json(doc),
                   tuple(doc.get("not_called", ())), doc.get("margin"))


@dataclass(frozen=True)
class SequentialOutcome:
    """What a sequential run found: each type's settlement, the calls made and saved."""

    question: str
    """The question's name (``dataset``, ``population``)."""
    asks: str
    """The question in words, as the run asked it."""
    confidence: float
    seed: int
    order: tuple[str, ...]
    """Every entry's id, in the order the run calls them."""
    types: tuple[TypeSettlement, ...]
    entries: int
    """The entries of the plan."""
    entries_called: int
    calls_planned: int
    """The component calls of every entry of the plan."""
    calls_made: int
    against: str | None = None
    """The baseline's run id, for a run against one (``--against``)."""

    @property
    def calls_saved(self) -> int:
        return self.calls_planned - self.calls_made

    @property
    def verdict(self) -> str:
        """FAIL when a type failed (or is worse than the baseline by more than its margin),
        else INCONCLUSIVE when one is, else PASS."""
        gates = {t.gate for t in self.types}
        return "FAIL" if "FAIL" in gates else "PASS" if gates <= {"PASS"} else "INCONCLUSIVE"

    def settlement(self, test_type: str) -> TypeSettlement | None:
        """The type's settlement (``None`` for a type the sequences did not gate)."""
        return next((t for t in self.types if t.test_type == test_type), None)

    def text(self) -> str:
        """``settled after n of N entries (k calls saved)`` (or ``not settled``)."""
        how = "settled" if self.verdict != "INCONCLUSIVE" else "not settled"
        saved = f"{self.calls_saved} call{'' if self.calls_saved == 1 else 's'} saved"
        return f"{how} after {self.entries_called} of {self.entries} entries ({saved})"

    def line(self) -> str:
        """The question, the level and :meth:`text`: ``sequential (dataset: would the whole
        dataset pass?) at 95%: settled after 412 of 2000 entries (2210 calls saved)``."""
        return (f"sequential{self.against_text()} ({self.question}: {self.asked()}) at "
                f"{self.confidence:.0%}: {self.text()}")

    def against_text(self) -> str:
        """`` against run <id>`` for a run against a baseline, else nothing."""
        return "" if self.against is None else f" against run {self.against}"

    def asked(self) -> str:
        """The question in words: against a baseline, of the gap to it."""
        if self.against is None:
            return self.asks
        among = ("the baseline's items" if self.question == "dataset"
                 else "the population the items sample")
        return f"is the candidate no worse than the baseline by more than the margin, on {among}?"

    def to_json(self) -> dict[str, Any]:
        return {"question": self.question, "asks": self.asks,
                "confidence": self.confidence, "seed": self.seed, "verdict": self.verdict,
                "summary": self.text(), "entries": self.entries,
                "entries_called": self.entries_called, "calls_planned": self.calls_planned,
                "calls_made": self.calls_made, "calls_saved": self.calls_saved,
                "against": self.against, "types": [t.to_json() for t in self.types],
                "order": list(self.order)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SequentialOutcome:
        """The outcome :meth:`to_json` wrote (``sequential.json``); the verdict, summary and
        calls saved follow from the rest."""
        return cls(doc["question"], doc["asks"], doc["confidence"], doc["seed"],
                   tuple(doc["order"]), tuple(TypeSettlement.from_json(t) for t in doc["types"]),
                   doc["entries"], doc["entries_called"], doc["calls_planned"],
                   doc["calls_made"], doc.get("against"))
