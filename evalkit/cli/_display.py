"""Showing a run's progress: :class:`ProgressDisplay`, the progress callback the command line
hands to a run, and the one a notebook passes to show progress in its cell.

On a terminal the live line is rich's (a maintained library already installed with MLflow):
redrawn in place, fitted to the terminal's width at every refresh, so a narrow or resized
terminal is never left with stale lines. In a Jupyter notebook the line is one display of the
cell, updated in place through IPython's own display (rich's live display there needs
ipywidgets, and warns without it). In CI (the ``CI`` variable set) or when stderr is not a
terminal, a plain line is logged every tenth of the calls instead.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from datetime import timedelta
from typing import Any, TextIO

from evalkit.calls import Progress

logger = logging.getLogger("evalkit")

_MIN_BAR = 10
_CELL_REFRESH_S = 0.2
"""At most five redraws a second in a notebook cell (each is a message to the notebook)."""


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
    """A progress callback that shows each :class:`~evalkit.calls.Progress` (see the module
    docstring). ``live`` forces the terminal's live display on or off (default: on a terminal
    outside CI); in a notebook the line is the cell's."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None,
                 console: Any = None) -> None:
        self._stream = stream or sys.stderr
        self._console = console
        self._notebook = live is None and _in_notebook()
        self._live_wanted = (self._stream.isatty() and not os.environ.get("CI")
                             if live is None else live)
        self._live: Any = None
        self._cell: Any = None
        """The notebook display that holds the line (one per run of a series)."""
        self._cell_drawn_at = -math.inf
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
            if self._notebook:
                self._show_in_cell(progress)
            elif self._live_wanted:
                self._draw(progress.finished)
            elif not progress.finished and (progress.calls_done >= self._next_plain
                                            or progress.calls_done == progress.calls_total):
                logger.info(plain_line(progress))
                self._next_plain = progress.calls_done + step
            if progress.finished:  # the next run of a series (a replicate) starts afresh
                self._next_plain = self._cell = None

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

    def _show_in_cell(self, progress: Progress) -> None:
        from IPython.display import display

        now = time.monotonic()
        if self._cell is None:
            self._cell = display({"text/plain": plain_line(progress)}, raw=True,
                                 display_id=True)
        elif progress.finished or now - self._cell_drawn_at >= _CELL_REFRESH_S:
            self._cell.update({"text/plain": plain_line(progress)}, raw=True)
        else:
            return
        self._cell_drawn_at = now

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


def _in_notebook() -> bool:
    """Whether this process is a Jupyter kernel running a cell."""
    if "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
