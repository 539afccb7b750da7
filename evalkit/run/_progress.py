"""Progress of a run's calls: a live line on an interactive terminal, plain lines in CI."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TextIO

logger = logging.getLogger("evalkit")

_REFRESH_SECONDS = 0.2


class Progress:
    """Counts finished calls (entries done, errors, retries) and estimates the time left."""

    def __init__(self, calls_per_entry: Mapping[str, int], *,
                 retries: Callable[[], int] = lambda: 0, stream: TextIO | None = None,
                 interactive: bool | None = None) -> None:
        self._expected = dict(calls_per_entry)
        self._total = sum(self._expected.values())
        self._done: Counter[str] = Counter()
        self._calls = self._errors = self._entries = 0
        self._retries = retries
        self._stream = stream or sys.stderr
        self._interactive = (self._stream.isatty() and not os.environ.get("CI")
                             if interactive is None else interactive)
        self._started = time.monotonic()
        self._last_drawn = 0.0
        self._next_plain = max(1, self._total // 10)

    def call_done(self, entry_id: str, error: bool) -> None:
        self._calls += 1
        self._errors += error
        self._done[entry_id] += 1
        self._entries += self._done[entry_id] == self._expected[entry_id]
        now = time.monotonic()
        if self._interactive:
            if now - self._last_drawn >= _REFRESH_SECONDS or self._calls == self._total:
                self._stream.write("\r" + self.line() + "\x1b[K")
                self._stream.flush()
                self._last_drawn = now
        elif self._calls >= self._next_plain or self._calls == self._total:
            logger.info(self.line())
            self._next_plain = self._calls + max(1, self._total // 10)

    def finish(self) -> None:
        if self._interactive and self._calls:
            self._stream.write("\n")
            self._stream.flush()

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        left = elapsed / self._calls * (self._total - self._calls) if self._calls else 0.0
        return (f"calls {self._calls}/{self._total}, entries {self._entries}/"
                f"{len(self._expected)}, errors {self._errors}, retries {self._retries()}, "
                f"ETA {timedelta(seconds=round(left))}")
