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
from collections.abc import Iterator
from types import FrameType

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
