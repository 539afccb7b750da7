"""The command line's signals, in-process: each SIGINT or SIGTERM becomes a stop request of
the run (never an exception inside it), the third ends the process, and before a run is open
a signal interrupts at once. The handlers are the CLI's own, so these hold even in a job
started with SIGINT ignored."""

from __future__ import annotations

import logging
import os
import signal

import pytest

from evalkit.calls import Stop
from evalkit.cli._signals import stopping_on_signals


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_inside_a_run_a_signal_is_a_stop_request(number: int) -> None:
    stop = Stop()
    with stopping_on_signals(stop), stop.open_run():
        os.kill(os.getpid(), number)
        assert stop.requested and not stop.abandons
        os.kill(os.getpid(), number)
        assert stop.abandons


def test_before_a_run_is_open_a_signal_interrupts_at_once() -> None:
    stop = Stop()
    with stopping_on_signals(stop), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    assert not stop.requested


def test_a_second_signal_while_the_run_closes_says_so_and_a_third_ends_the_process(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    ended: list[int] = []
    monkeypatch.setattr(os, "_exit", ended.append)
    stop = Stop()
    with stopping_on_signals(stop), stop.open_run(), caplog.at_level(logging.WARNING):
        os.kill(os.getpid(), signal.SIGTERM)  # no call window hears it: the calls are made
        assert caplog.messages == ["stopping: every call is made; the run stops after the step "
                                   "it is on (signal twice more to stop without closing it)"]
        os.kill(os.getpid(), signal.SIGTERM)
        assert caplog.messages[1:] == ["already stopping: closing the run (signal again to "
                                       "stop without closing it)"]
        os.kill(os.getpid(), signal.SIGINT)
    assert ended == [130]
    assert "stopped without closing the run; its raw results are kept on disk" in \
        capfd.readouterr().err


def test_the_handlers_before_are_put_back() -> None:
    before = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
    with stopping_on_signals(Stop()):
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {n: signal.getsignal(n) for n in before} == before


def test_a_window_that_hears_a_request_takes_it() -> None:
    stop = Stop()
    heard: list[str] = []
    with stop.waking(lambda: heard.append("woken")):
        assert stop.request() is True
    assert stop.request() is False  # no window: the run is past its calls
    assert heard == ["woken"]


def test_a_signal_before_the_run_does_not_count_towards_the_three(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ended: list[int] = []
    monkeypatch.setattr(os, "_exit", ended.append)
    stop = Stop()
    with stopping_on_signals(stop):
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # caught by the caller, before any run
        with stop.open_run():
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)
            assert stop.abandons
    assert ended == []
