"""The progress display: live and fitted to the terminal's width on a terminal, plain lines
every tenth of the calls otherwise, and a time left that ignores the first call's warm-up."""

from __future__ import annotations

import io
import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.run._progress import MIN_CALLS_FOR_ETA, Progress, estimate_seconds_left


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_eta_ignores_the_first_calls_warm_up() -> None:
    # 12 calls: the first takes 10 s (a model load), then one call a second. After 3 calls
    # the naive estimate, elapsed / done x left = 12/3 x 9 = 36 s, is three times too long;
    # from the calls after the first it is 2/2 x 9 = 9 s, the true time left.
    clock = FakeClock()
    progress = Progress({f"e{i}": 1 for i in range(12)}, stream=io.StringIO(),
                        interactive=False, clock=clock)
    clock.now += 10
    progress.call_done("e0", error=False)
    assert progress.seconds_left() is None  # nothing to go on yet
    for i in (1, 2):
        clock.now += 1
        progress.call_done(f"e{i}", error=False)
    assert progress.seconds_left() == pytest.approx(9.0)
    assert progress.line().endswith("elapsed 0:00:12, ETA 0:00:09")


def test_eta_by_hand() -> None:
    assert estimate_seconds_left(MIN_CALLS_FOR_ETA - 1, 10, 0.0, 5.0) is None
    assert estimate_seconds_left(5, 10, 2.0, 6.0) == pytest.approx(4 / 4 * 5)
    assert estimate_seconds_left(10, 10, 2.0, 6.0) == 0.0
    assert estimate_seconds_left(5, 10, 6.0, 6.0) is None  # no time passed since the first


@given(st.integers(1, 2000), st.integers(0, 2000))
def test_fitted_line_never_exceeds_the_width(width: int, total: int) -> None:
    progress = Progress({"a": max(total, 1)}, stream=io.StringIO(), interactive=False,
                        retries=lambda: 12345)
    for _ in range(min(total, 3)):
        progress.call_done("a", error=True)
    assert len(progress.fitted(width)) <= width


def test_live_display_fits_sixty_columns() -> None:
    # A rich Live display redraws in place; every drawn line fits the 60-column terminal,
    # so nothing wraps into a stale line.
    from rich.console import Console

    stream = io.StringIO()
    progress = Progress({f"e{i}": 5 for i in range(40)}, retries=lambda: 3, stream=stream,
                        interactive=True,
                        console=Console(file=stream, width=60, force_terminal=True))
    for i in range(40):
        for _ in range(5):
            progress.call_done(f"e{i}", error=i == 7)
    progress.finish()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    drawn = [line for chunk in text.split("\n") for line in chunk.split("\r") if line]
    assert drawn and all(len(line) <= 60 for line in drawn), max(drawn, key=len)
    assert "calls 200/200" in drawn[-1] and "errors 5" in drawn[-1]
    assert "ETA 0:00:00" in drawn[-1]


def test_wide_terminal_shows_everything_and_a_bar() -> None:
    progress = Progress({"a": 2, "b": 1}, retries=lambda: 3, stream=io.StringIO(),
                        interactive=False)
    progress.call_done("a", error=False)
    progress.call_done("a", error=True)
    line = progress.fitted(120)
    assert len(line) == 120
    assert "calls 2/3  entries 1/2  errors 1  retries 3" in line
    assert line.startswith("━" * 10)


def test_plain_progress_logs_every_tenth(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evalkit")
    progress = Progress({f"e{i}": 1 for i in range(40)}, stream=io.StringIO(),
                        interactive=False)
    for i in range(40):
        progress.call_done(f"e{i}", error=False)
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(",")[0] for line in lines] == [f"calls {n}/40" for n in range(4, 41, 4)]
    assert "elapsed" in lines[-1] and lines[-1].endswith("ETA 0:00:00")
