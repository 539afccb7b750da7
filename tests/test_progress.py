"""The progress line: live on a terminal, plain lines every tenth of the calls otherwise."""

from __future__ import annotations

import io
import logging

import pytest

from evalkit.run._progress import Progress


def test_interactive_progress_redraws_one_line() -> None:
    stream = io.StringIO()
    progress = Progress({"a": 2, "b": 1}, retries=lambda: 3, stream=stream, interactive=True)
    progress.call_done("a", error=False)
    progress.call_done("a", error=True)
    progress.call_done("b", error=False)
    progress.finish()
    text = stream.getvalue()
    assert text.startswith("\rcalls 1/3, entries 0/2, errors 0, retries 3, ETA ")
    assert "\rcalls 3/3, entries 2/2, errors 1, retries 3, ETA 0:00:00" in text
    assert text.endswith("\n")


def test_plain_progress_logs_every_tenth(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="evalkit")
    progress = Progress({f"e{i}": 1 for i in range(40)}, stream=io.StringIO(),
                        interactive=False)
    for i in range(40):
        progress.call_done(f"e{i}", error=False)
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(",")[0] for line in lines] == [f"calls {n}/40" for n in range(4, 41, 4)]
