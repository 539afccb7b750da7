"""The books of a run's calls: which calls the plan needs, which an earlier attempt already
made, which entries are complete, and every entry's calls in the plan's order at the end.

Entry-first: an entry is invoked exactly once, and that one output serves every in-scope test
type. The repeatability exception: an entry with repeatability in scope is invoked
``REPEAT_COUNT`` times; the first output serves its other types. Nothing caches or dedupes
calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from evalkit.calls._call import SpanCapture, no_capture
from evalkit.calls._selection import PlannedEntry, RunPlan
from evalkit.dataset import Entry
from evalkit.records import CallRecord

logger = logging.getLogger("evalkit")

Task = tuple[int, int]
"""A call: (entry position in the plan, repeat). A follow-up job is (-1, its number)."""


@dataclass(frozen=True)
class EntryOutputs:
    """Every call made for one planned entry, in call order."""

    planned: PlannedEntry
    calls: tuple[CallRecord, ...]

    @property
    def entry(self) -> Entry:
        return self.planned.entry

    @property
    def first(self) -> CallRecord:
        return self.calls[0]


FollowUps = Callable[[EntryOutputs], Sequence[Callable[[], None]]]
"""Jobs to run once an entry's calls are all in (the judge calls of its verdicts)."""


class Sampling(Protocol):
    """Which entries a sequential run calls, in which order, and when it has heard enough
    (:class:`evalkit.evaluation.SequentialGate`). Asked from the window's thread only."""

    def order(self) -> Sequence[int]:
        """Every entry's position in the plan, in the order they are called."""

    def take(self, index: int) -> bool:
        """Whether entry ``index`` is called now (once taken, all its calls are made)."""

    def entry_in(self, outputs: EntryOutputs, index: int) -> None:
        """Every call of entry ``index`` is in (made now, or by an earlier attempt)."""


def reused_calls(plan: RunPlan, recorded: Mapping[tuple[str, int], CallRecord]
                 ) -> tuple[dict[Task, CallRecord], list[Task]]:
    """The calls an earlier attempt recorded, by (entry index, repeat), and those to make."""
    records = {(index, repeat): recorded[(planned.entry.id, repeat)]
               for index, planned in enumerate(plan.items) for repeat in range(planned.calls)
               if (planned.entry.id, repeat) in recorded}
    pending = [(index, repeat) for index, planned in enumerate(plan.items)
               for repeat in range(planned.calls) if (index, repeat) not in records]
    return records, pending


class EntryCompletion:
    """Counts each entry's outstanding calls and hands out its follow-up jobs once the last
    one is in (an entry all of whose calls were reused has none: it is scored afterwards).
    A sequential run's ``sampling`` hears of each entry once all its calls are in, those of
    an earlier attempt first, in the order it calls them."""

    def __init__(self, plan: RunPlan, pending: Sequence[Task],
                 follow_ups: FollowUps | None, sampling: Sampling | None = None,
                 records: Mapping[Task, CallRecord] | None = None) -> None:
        self._plan = plan
        self._follow_ups = follow_ups
        self._sampling = sampling
        self._outstanding: dict[int, int] = {}
        for index, _ in pending:
            self._outstanding[index] = self._outstanding.get(index, 0) + 1
        if sampling is not None:
            for index in sampling.order():
                if index not in self._outstanding and records is not None:
                    sampling.entry_in(self._outputs(index, records), index)

    def call_in(self, index: int, records: Mapping[Task, CallRecord]
                ) -> Sequence[Callable[[], None]]:
        """The follow-up jobs due now that one more call of entry ``index`` is in."""
        self._outstanding[index] -= 1
        if self._outstanding[index]:
            return ()
        outputs = self._outputs(index, records)
        if self._sampling is not None:
            self._sampling.entry_in(outputs, index)
        return () if self._follow_ups is None else self._follow_ups(outputs)

    def _outputs(self, index: int, records: Mapping[Task, CallRecord]) -> EntryOutputs:
        planned = self._plan.items[index]
        return EntryOutputs(planned, tuple(records[(index, r)] for r in range(planned.calls)))


def entry_outputs(plan: RunPlan, records: Mapping[Task, CallRecord]) -> list[EntryOutputs]:
    """Every entry's calls, in plan order; a sequential run's entries never called left out."""
    return [EntryOutputs(planned, tuple(records[(index, r)] for r in range(planned.calls)))
            for index, planned in enumerate(plan.items)
            if all((index, r) in records for r in range(planned.calls))]


def run_follow_up(job: Callable[[], None], capture: SpanCapture = no_capture) -> None:
    """Run one follow-up job; one that fails costs nothing but time: its entry is scored after
    the calls, as it would have been without it. The spans it makes (an autologged judge
    request) are captured and let go: the judge's own span in the entry's trace says what
    was asked and answered, and they belong to no component call."""
    try:
        with capture():
            job()
    except KeyboardInterrupt:  # raised inside the job: a stop, as from a component
        raise
    except BaseException:  # noqa: BLE001 - SystemExit from a provider's SDK included
        logger.exception("a follow-up job failed; its entry is scored after the calls")
