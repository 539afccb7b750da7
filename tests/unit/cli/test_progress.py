"""The progress of a run's calls: the figures the library counts (:class:`ProgressCounter`,
with a time left that ignores the first call's warm-up) and how the command line shows them
(:class:`ProgressDisplay`: live and fitted to the terminal's width on a terminal, a plain line
every tenth of the calls otherwise)."""

from __future__ import annotations

import io
import logging
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.calls._progress import (
    MIN_CALLS_FOR_ETA,
    Progress,
    ProgressCounter,
    estimate_seconds_left,
)
from evalkit.cli._display import ProgressDisplay, fitted_line, plain_line
from tests.support.clock import FakeClock


def test_eta_ignores_the_first_calls_warm_up() -> None:
    # 12 calls: the first takes 10 s (a model load), then one call a second. After 3 calls
    # the naive estimate, elapsed / done x left = 12/3 x 9 = 36 s, is three times too long;
    # from the calls after the first it is 2/2 x 9 = 9 s, the true time left.
    clock = FakeClock(100.0)
    seen: list[Progress] = []
    counter = ProgressCounter({f"e{i}": 1 for i in range(12)}, seen.append, clock=clock)
    clock.now += 10
    counter.call_done("e0", error=False)
    assert seen[-1].seconds_left is None  # nothing to go on yet
    for i in (1, 2):
        clock.now += 1
        counter.call_done(f"e{i}", error=False)
    assert len(seen) == 3
    assert seen[-1].seconds_left == pytest.approx(9.0)
    assert (seen[-1].elapsed_s, seen[-1].calls_done, seen[-1].entries_done) == (12.0, 3, 3)
    assert plain_line(seen[-1]).endswith("elapsed 0:00:12, ETA 0:00:09")


def test_the_counter_counts_entries_errors_and_retries_and_reports_the_end() -> None:
    seen: list[Progress] = []
    counter = ProgressCounter({"a": 2, "b": 1}, seen.append, retries=lambda: 7)
    counter.call_done("a", error=True)
    assert (seen[-1].calls_done, seen[-1].entries_done, seen[-1].errors) == (1, 0, 1)
    counter.call_done("a", error=False)
    assert (seen[-1].calls_done, seen[-1].entries_done, seen[-1].errors) == (2, 1, 1)
    assert (seen[-1].calls_total, seen[-1].entries_total, seen[-1].retries) == (3, 2, 7)
    assert not seen[-1].finished
    counter.finish()  # the calls stopped early (a stop): one last report, marked finished
    assert seen[-1].finished and seen[-1].calls_done == 2 and len(seen) == 3
    ProgressCounter({"a": 1}, None).call_done("a", error=False)  # no callback: nothing to do


def test_eta_by_hand() -> None:
    assert estimate_seconds_left(MIN_CALLS_FOR_ETA - 1, 10, 0.0, 5.0) is None
    assert estimate_seconds_left(5, 10, 2.0, 6.0) == pytest.approx(4 / 4 * 5)
    assert estimate_seconds_left(10, 10, 2.0, 6.0) == 0.0
    assert estimate_seconds_left(5, 10, 6.0, 6.0) is None  # no time passed since the first
    assert estimate_seconds_left(5, 10, None, 6.0) is None


progress_figures = st.builds(
    lambda total, done, errors, retries, elapsed, left: Progress(
        min(done, total), total, min(done, total), total, min(errors, done), retries, elapsed,
        left),
    st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**6),
    st.floats(0, 10**7), st.none() | st.floats(0, 10**7))


@given(st.integers(1, 2000), progress_figures)
def test_fitted_line_never_exceeds_the_width(width: int, progress: Progress) -> None:
    assert len(fitted_line(progress, width)) <= width


def test_live_display_fits_sixty_columns() -> None:
    # A rich Live display redraws in place; every drawn line fits the 60-column terminal,
    # so nothing wraps into a stale line.
    from rich.console import Console

    stream = io.StringIO()
    display = ProgressDisplay(stream, live=True,
                              console=Console(file=stream, width=60, force_terminal=True))
    counter = ProgressCounter({f"e{i}": 5 for i in range(40)}, display, retries=lambda: 3)
    for i in range(40):
        for _ in range(5):
            counter.call_done(f"e{i}", error=i == 7)
    counter.finish()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    drawn = [line for chunk in text.split("\n") for line in chunk.split("\r") if line]
    assert drawn and all(len(line) <= 60 for line in drawn), max(drawn, key=len)
    assert "calls 200/200" in drawn[-1] and "errors 5" in drawn[-1]
    assert "ETA 0:00:00" in drawn[-1]


def test_wide_terminal_shows_everything_and_a_bar() -> None:
    progress = Progress(2, 3, 1, 2, 1, 3, 65.0, None)
    line = fitted_line(progress, 120)
    assert len(line) == 120
    assert line.endswith("calls 2/3  entries 1/2  errors 1  retries 3  0:01:05  ETA -:--:--")
    bar = line.split(" ", 1)[0]
    assert bar == "━" * round(len(bar) * 2 / 3) + "╌" * (len(bar) - round(len(bar) * 2 / 3))
    assert len(bar) >= 10


def test_narrow_terminals_get_shorter_forms() -> None:
    progress = Progress(2, 3, 1, 2, 1, 3, 65.0, 30.0)
    assert fitted_line(progress, 41) == "calls 2/3  errors 1  0:01:05  ETA 0:00:30"
    # one column fewer: the shortest form, and room for a bar again (2 of 3 calls done)
    assert fitted_line(progress, 40) == "━" * 15 + "╌" * 8 + " 2/3  ETA 0:00:30"
    assert fitted_line(progress, 20) == "2/3  ETA 0:00:30"
    assert fitted_line(progress, 5) == "2/3  "


def test_plain_progress_logs_every_tenth_of_each_run_of_a_series(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evalkit")
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=False)  # one display for every replicate
    for calls in (40, 20):
        counter = ProgressCounter({f"e{i}": 1 for i in range(calls)}, display)
        for i in range(calls):
            counter.call_done(f"e{i}", error=False)
        counter.finish()
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(",")[0] for line in lines] == (
        [f"calls {n}/40" for n in range(4, 41, 4)] + [f"calls {n}/20" for n in range(2, 21, 2)])
    assert "elapsed" in lines[-1] and lines[-1].endswith("ETA 0:00:00")
    assert stream.getvalue() == ""  # nothing drawn: the lines go to the log
