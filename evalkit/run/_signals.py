"""Stopping a run: SIGINT (Ctrl-C) and SIGTERM, the first and the second.

The first signal stops new calls and awaits those in flight; the second abandons them. Both
reach the loop as ``KeyboardInterrupt``; the run then closes (raw results put in order and
uploaded, the MLflow run marked KILLED) and the process exits 130. While it closes, further
signals are not allowed to tear the closing apart: they are noted, and only a third one ends
the process at once, without closing (the raw results on disk still allow ``--resume``).

SIGINT is installed explicitly rather than relying on Python's default: a shell that starts a
job in the background (``make eval &``) makes it ignore SIGINT, and a run must still stop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from evalkit._errors import ExitStatus

logger = logging.getLogger("evalkit")

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Counts stop signals; raises ``KeyboardInterrupt`` for the first two while the run is
    interruptible, and ends the process on the third."""

    def __init__(self) -> None:
        self.received = 0
        self.interruptible = True

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.received >= 3:
            # The closing itself hangs (a tracking server that stopped answering): the user
            # asked three times. Raw results are on disk; --resume continues from them.
            sys.stderr.write("evalkit: stopped without closing the run; its raw results "
                             "are kept on disk (--resume continues it)\n")
            sys.stderr.flush()
            os._exit(ExitStatus.INTERRUPTED)
        if self.interruptible:
            raise KeyboardInterrupt
        logger.warning("already stopping: closing the run (signal again to stop without "
                       "closing it)")

    def closing(self) -> None:
        """From here on the run is being closed: signals no longer interrupt it."""
        self.interruptible = False


@contextlib.contextmanager
def stop_signals() -> Iterator[StopSignals]:
    """Handle SIGINT and SIGTERM with one :class:`StopSignals` for the duration."""
    handler = StopSignals()
    previous = {}
    try:
        for number in _STOP_SIGNALS:
            previous[number] = signal.signal(number, handler)
    except ValueError:  # not the main thread: signals stay as they are
        pass
    try:
        yield handler
    finally:
        for number, action in previous.items():
            signal.signal(number, action)


class DeferredStops:
    """While the loop updates its books (a call handed to a worker and counted as in flight,
    a result kept), a stop signal waits: a ``KeyboardInterrupt`` raised between the two halves
    would leave a call counted that no worker has, and the stop would wait for it forever.
    Wraps the Python handlers of SIGINT and SIGTERM in place for the duration (main thread
    only); a signal that arrives inside :meth:`section` is handled as it ends."""

    def __init__(self) -> None:
        self._inner: dict[int, Any] = {}
        self._inside = False
        self._pending: list[tuple[int, FrameType | None]] = []

    def __enter__(self) -> DeferredStops:
        if threading.current_thread() is threading.main_thread():
            for number in _STOP_SIGNALS:
                handler = signal.getsignal(number)
                if callable(handler):
                    self._inner[number] = handler
                    signal.signal(number, self._receive)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._inner.items():
            signal.signal(number, handler)

    def _receive(self, signum: int, frame: FrameType | None) -> None:
        if self._inside:
            self._pending.append((signum, frame))
        else:
            self._inner[signum](signum, frame)

    @contextlib.contextmanager
    def section(self) -> Iterator[None]:
        self._inside = True
        try:
            yield
        finally:
            self._inside = False
            while self._pending:
                signum, frame = self._pending.pop(0)
                self._inner[signum](signum, frame)
