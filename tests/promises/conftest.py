"""Fixtures of the process-level promises: a server that accepts connections and never
answers (lint's schema fetches, every command's tracking server), an eval script project
that logs its calls, and an API key in the environment."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evalkit.cli._common import TRACEBACK_VARIABLE
from evalkit.tracking import _connection as connection
from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.servers import SilentServer


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


SCRIPT_COMPONENT = """
def invoke_component(entry, call):
    with open(CALLS_LOG, "a") as log:
        log.write(entry.id + "\\n")
    return 'a'
"""


@pytest.fixture
def script_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An eval script and its dataset that logs each call to calls.log; the working folder,
    as for a user (the hostile tracking promises)."""
    folder = tmp_path / "project"
    folder.mkdir()
    write_dataset(folder / "ds", {"e": entry("functional")})
    constants = {"EXPERIMENT_NAME": "hostile/tracking", "DATASET_PATH": "ds",
                 "EVAL_MIN_ACCURACY": 0.5, "CALLS_LOG": "calls.log"}
    write_eval_script(folder, constants, SCRIPT_COMPONENT)
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    """An API key in the environment, as a user running evalkit against OpenAI has one."""
    key = "sk-proj-" + uuid.uuid4().hex
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
             ) -> Callable[[], tuple[str, str]]:
    """What a command printed (stdout, stderr: its log lines included), and the health
    check's timeout shortened: a silent server is waited on for that long, and only that long
    (what the server was sent is asserted, not how long it took)."""
    monkeypatch.delenv(TRACEBACK_VARIABLE, raising=False)
    monkeypatch.setattr(connection, "_HEALTH_TIMEOUT_SECONDS", 0.2)
    capsys.readouterr()
    return capsys.readouterr
