"""Progress of a run's calls: a live display on an interactive terminal, plain lines in CI.

The live display is rich's (a maintained library already installed with MLflow): it is
redrawn in place, fitted to the terminal's width at every refresh, so a narrow or resized
terminal is never left with stale lines. In CI (the ``CI`` variable set) or when stderr is
not a terminal, a plain line is logged every tenth of the calls instead.

The time left is estimated from the calls after the first one: the first call pays for
warm-up (a model load, a connection), which would otherwise make the first estimate many
times too long. Until :data:`MIN_CALLS_FOR_ETA` calls are done no estimate is shown.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, TextIO

logger = logging.getLogger("evalkit")

MIN_CALLS_FOR_ETA = 3


def estimate_seconds_left(done: int, total: int, first_done_at: float | None,
                          now: float) -> float | None:
    """Seconds left at the rate of the calls finished after the first one:
    (now - first_done_at) / (done - 1) x (total - done); ``None`` before
    :data:`MIN_CALLS_FOR_ETA` calls, or when no time has passed since the first."""
    if done >= total:
        return 0.0
    if done < MIN_CALLS_FOR_ETA or first_done_at is None or now <= first_done_at:
        return None
    return (now - first_done_at) / (done - 1) * (total - done)


def _clock_text(seconds: float | None) -> str:
    return "-:--:--" if seconds is None else str(timedelta(seconds=round(seconds)))


class Progress:
    """Counts finished calls (entries done, errors, retries) and shows them with the elapsed
    time and the time left."""

    def __init__(self, calls_per_entry: Mapping[str, int], *,
                 retries: Callable[[], int] = lambda: 0, stream: TextIO | None = None,
                 interactive: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, console: Any = None) -> None:
        self._expected = dict(calls_per_entry)
        self._total = sum(self._expected.values())
        self._done: Counter[str] = Counter()
        self._calls = self._errors = self._entries = 0
        self._retries = retries
        self._stream = stream or sys.stderr
        self._interactive = (self._stream.isatty() and not os.environ.get("CI")
                             if interactive is None else interactive)
        self._clock = clock
        self._started = clock()
        self._first_done_at: float | None = None
        self._next_plain = max(1, self._total // 10)
        self._lock = threading.Lock()
        self._live: Any = None
        self._console = console
        """The rich console of the live display (by default one on ``stream``)."""

    def call_done(self, entry_id: str, error: bool) -> None:
        with self._lock:
            self._calls += 1
            self._errors += error
            self._done[entry_id] += 1
            self._entries += self._done[entry_id] == self._expected[entry_id]
            if self._first_done_at is None:
                self._first_done_at = self._clock()
            if self._interactive:
                self._draw()
            elif self._calls >= self._next_plain or self._calls == self._total:
                logger.info(self.line())
                self._next_plain = self._calls + max(1, self._total // 10)

    def finish(self) -> None:
        with self._lock:
            if self._live is not None:
                self._draw()
                self._live.stop()
                self._live = None

    def seconds_left(self) -> float | None:
        return estimate_seconds_left(self._calls, self._total, self._first_done_at,
                                     self._clock())

    def line(self) -> str:
        """The plain line: calls, entries, errors, retries, elapsed time and time left."""
        return (f"calls {self._calls}/{self._total}, entries {self._entries}/"
                f"{len(self._expected)}, errors {self._errors}, retries {self._retries()}, "
                f"elapsed {_clock_text(self._clock() - self._started)}, "
                f"ETA {_clock_text(self.seconds_left())}")

    def fitted(self, width: int) -> str:
        """The live line for a terminal ``width`` columns wide: the full text with a bar when
        it fits, else shorter forms, never wider than ``width``."""
        elapsed = _clock_text(self._clock() - self._started)
        eta = _clock_text(self.seconds_left())
        calls = f"{self._calls}/{self._total}"
        forms = [
            f"calls {calls}  entries {self._entries}/{len(self._expected)}  errors "
            f"{self._errors}  retries {self._retries()}  {elapsed}  ETA {eta}",
            f"calls {calls}  errors {self._errors}  {elapsed}  ETA {eta}",
            f"{calls}  ETA {eta}",
        ]
        text = next((f for f in forms if len(f) <= width), forms[-1][:width])
        room = width - len(text) - 1
        if room < _MIN_BAR:
            return text
        filled = round(room * self._calls / self._total) if self._total else room
        return "━" * filled + "╌" * (room - filled) + " " + text

    def _draw(self) -> None:
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            self._console = self._console or Console(file=self._stream)
            self._live = Live(_Fitted(self), console=self._console,
                              refresh_per_second=5, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        self._live.refresh()


_MIN_BAR = 10


class _Fitted:
    """A rich renderable that asks :meth:`Progress.fitted` for a line of the width rich has
    at each refresh (the terminal's current width)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        yield Text(self._progress.fitted(options.max_width), no_wrap=True, overflow="crop")
