"""An eval script against a dead tracking server, in a process of its own, and a real server
behind credentials in its URI (slow): one line and exit 4; the password never shown.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evalkit.tracking import Tracker
from tests.promises.test_hostile_tracking import (
    PASSWORD,
    assert_one_line_naming,
    calls_made,
    dead_server,
)
from tests.support.commands import evalkit_command
from tests.support.processes import free_port, run_eval
from tests.support.team_server import MlflowServer

pytestmark = pytest.mark.slow


# --- processes of their own, real servers (slow) ------------------------------------------------

def test_an_eval_script_against_a_dead_server_exits_4_with_one_line(script_project: Path) -> None:
    uri = dead_server().replace("http://", f"http://evalkit:{PASSWORD}@")
    done = run_eval(script_project, "--type=functional", env={"MLFLOW_TRACKING_URI": uri})
    assert done.returncode == 4, done.stderr
    assert_one_line_naming(uri.replace(PASSWORD, "***"), done.stdout, done.stderr)
    assert PASSWORD not in done.stdout + done.stderr
    assert calls_made(script_project) == []


def test_a_server_uri_with_credentials_is_accepted_and_the_password_kept_secret(
        tmp_path: Path, script_project: Path, monkeypatch: pytest.MonkeyPatch,
        terminal: Callable[[], tuple[str, str]]) -> None:
    server = MlflowServer(f"sqlite:///{tmp_path / 'server.db'}", tmp_path / "artifacts",
                          free_port())
    server.start()
    try:
        uri = server.uri.replace("http://", f"http://evalkit:{PASSWORD}@")
        done = run_eval(script_project, "--type=functional", env={"MLFLOW_TRACKING_URI": uri})
        assert done.returncode == 0, done.stderr
        assert calls_made(script_project) == ["e"]
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        assert evalkit_command("history", "hostile/tracking") == 0
        out, err = terminal()
        shown = done.stdout + done.stderr + out + err
        # printed without its credentials (shown_uri), never with the password
        assert PASSWORD not in shown and server.uri in shown
        reader = Tracker(server.uri).reader
        (run,) = reader.runs("hostile/tracking")
        assert run.status == "FINISHED"
        assert PASSWORD not in repr(run.params) + repr(run.tags)
        reports = [reader.read_text(run.run_id, f"reports/{name}")
                   for name in ("report-functional.md", "summary.md")]
        reports += [p.read_text() for p in (script_project / "reports").glob("*.md")]
        assert [r for r in reports if PASSWORD in r] == []
    finally:
        server.stop()
