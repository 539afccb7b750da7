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
    one is in (an entry all of whose calls were reused has none: it is scored afterwards)."""

    def __init__(self, plan: RunPlan, pending: Sequence[Task],
                 follow_ups: FollowUps | None) -> None:
        self._plan = plan
        self._follow_ups = follow_ups
        self._outstanding: dict[int, int] = {}
        for index, _ in pending:
            self._outstanding[index] = self._outstanding.get(index, 0) + 1

    def call_in(self, index: int, records: Mapping[Task, CallRecord]
                ) -> Sequence[Callable[[], None]]:
        """The follow-up jobs due now that one more call of entry ``index`` is in."""
        self._outstanding[index] -= 1
        if self._outstanding[index] or self._follow_ups is None:
            return ()
        planned = self._plan.items[index]
        return self._follow_ups(EntryOutputs(planned, tuple(
            records[(index, r)] for r in range(planned.calls))))


def entry_outputs(plan: RunPlan, records: Mapping[Task, CallRecord]) -> list[EntryOutputs]:
    return [EntryOutputs(planned, tuple(records[(index, r)] for r in range(planned.calls)))
            for index, planned in enumerate(plan.items)]


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
