"""Ctrl-C and SIGTERM at the command line, which owns the process: each becomes a
:class:`~evalkit.calls.Stop` request for the run, never an exception inside it.

The first stops new calls and waits for those in flight; the second abandons them; the run is
then closed (raw results uploaded, the MLflow run marked KILLED) and the process exits 130.
A third ends the process at once, without closing (the closing itself hangs: a tracking
server that stopped answering); the raw results on disk still allow ``--resume``. Before a
run exists (the dataset being linted, the judge checked, a model loaded) nothing is paid for
yet, and a signal interrupts at once, as Python's own handler would.

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

from evalkit.calls import Stop
from evalkit.cli._exit import ExitStatus

logger = logging.getLogger("evalkit")

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stopping_on_signals(stop: Stop) -> Iterator[None]:
    """Handle SIGINT and SIGTERM with ``stop`` for the duration (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = 0

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        if not stop.run_open and not received:
            raise KeyboardInterrupt
        received += 1
        if received >= 3:
            sys.stderr.write("evalkit: stopped without closing the run; its raw results are "
                             "kept on disk (--resume continues it)\n")
            sys.stderr.flush()
            os._exit(ExitStatus.INTERRUPTED)
        if stop.request():
            return  # the call window heard it, and says what it does
        if received == 1:
            logger.warning("stopping: every call is made; the run stops after the step it is "
                           "on (signal twice more to stop without closing it)")
        else:
            logger.warning("already stopping: closing the run (signal again to stop without "
                           "closing it)")

    previous = {number: signal.signal(number, handle) for number in _STOP_SIGNALS}
    try:
        yield
    finally:
        for number, action in previous.items():
            signal.signal(number, action)


def end_now(status: int) -> None:
    """End the process at once, as an interrupt promises: the run is closed and its outputs
    are on disk, while a normal exit would first garbage-collect every module (seconds for
    MLflow's) and wait for nothing useful; a call thread that never returns is abandoned."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
