"""Showing a run's progress: :class:`ProgressDisplay`, the progress callback the command line
hands to a run, and the one a notebook passes to show progress in its cell.

The live display is rich's (a maintained library already installed with MLflow): on a
terminal it is redrawn in place, fitted to the terminal's width at every refresh, so a narrow
or resized terminal is never left with stale lines; in a Jupyter notebook rich renders it as
the cell's output. In CI (the ``CI`` variable set) or when stderr is not a terminal, a plain
line is logged every tenth of the calls instead.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from datetime import timedelta
from typing import Any, TextIO

from evalkit.run import Progress

logger = logging.getLogger("evalkit")

_MIN_BAR = 10


def clock_text(seconds: float | None) -> str:
    return "-:--:--" if seconds is None else str(timedelta(seconds=round(seconds)))


def plain_line(progress: Progress) -> str:
    """Calls, entries, errors, retries, elapsed time and time left."""
    p = progress
    return (f"calls {p.calls_done}/{p.calls_total}, entries {p.entries_done}/"
            f"{p.entries_total}, errors {p.errors}, retries {p.retries}, "
            f"elapsed {clock_text(p.elapsed_s)}, ETA {clock_text(p.seconds_left)}")


def fitted_line(progress: Progress, width: int) -> str:
    """The live line for a display ``width`` columns wide: the full text with a bar when it
    fits, else shorter forms, never wider than ``width``."""
    p = progress
    elapsed, eta = clock_text(p.elapsed_s), clock_text(p.seconds_left)
    calls = f"{p.calls_done}/{p.calls_total}"
    forms = [
        f"calls {calls}  entries {p.entries_done}/{p.entries_total}  errors {p.errors}  "
        f"retries {p.retries}  {elapsed}  ETA {eta}",
        f"calls {calls}  errors {p.errors}  {elapsed}  ETA {eta}",
        f"{calls}  ETA {eta}",
    ]
    text = next((f for f in forms if len(f) <= width), forms[-1][:width])
    room = width - len(text) - 1
    if room < _MIN_BAR:
        return text
    filled = round(room * p.calls_done / p.calls_total) if p.calls_total else room
    return "━" * filled + "╌" * (room - filled) + " " + text


class ProgressDisplay:
    """A progress callback that shows each :class:`~evalkit.run.Progress` (see the module
    docstring). ``live`` forces the live display on or off (default: on a terminal outside
    CI, or in a notebook)."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None,
                 console: Any = None) -> None:
        self._stream = stream or sys.stderr
        self._console = console
        self._live_wanted = _wants_live(self._stream) if live is None else live
        self._live: Any = None
        self._last: Progress | None = None
        self._next_plain: int | None = None
        """The call count at which the next plain line is logged."""
        self._lock = threading.Lock()

    def __call__(self, progress: Progress) -> None:
        with self._lock:
            self._last = progress
            step = max(1, progress.calls_total // 10)
            if self._next_plain is None:
                self._next_plain = step
            if self._live_wanted:
                self._draw(progress.finished)
            elif not progress.finished and (progress.calls_done >= self._next_plain
                                            or progress.calls_done == progress.calls_total):
                logger.info(plain_line(progress))
                self._next_plain = progress.calls_done + step

    def _draw(self, finished: bool) -> None:
        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            self._console = self._console or Console(file=self._stream)
            self._live = Live(_Fitted(self), console=self._console, refresh_per_second=5,
                              transient=False, redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        self._live.refresh()
        if finished:
            self._live.stop()
            self._live = None

    def line(self, width: int) -> str:
        return "" if self._last is None else fitted_line(self._last, width)


class _Fitted:
    """A rich renderable that asks the display for a line of the width rich has at each
    refresh (the terminal's current width)."""

    def __init__(self, display: ProgressDisplay) -> None:
        self._display = display

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        yield Text(self._display.line(options.max_width), no_wrap=True, overflow="crop")


def _wants_live(stream: TextIO) -> bool:
    """A live display on a terminal outside CI, or in a Jupyter notebook."""
    if "ipykernel" in sys.modules:
        from rich.console import Console

        return bool(Console().is_jupyter)
    return stream.isatty() and not os.environ.get("CI")
