"""evalkit's records as MLflow's own, checked in a real browser (`make test-ui`).

A fresh run of the example (one group of the dataset, to keep it quick) and a judged run of
examples/eval_llm.py (the llm-smoke dataset, with tests/openai_stub.py as both the component's
endpoint and the judge) are logged to a local store; `mlflow ui` serves it on loopback, and
headless Chromium (tests/ui_browse.py, from the cached UI venv) renders the pages. Screenshots
are kept in .cache/ui/screenshots for a reviewer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

from tests.conftest import REPO
from tests.openai_stub import OpenAIStub
from tools.team_server import free_port

pytestmark = pytest.mark.ui

SHOTS = REPO / ".cache" / "ui" / "screenshots"


def _env(store: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "OPENAI_"))}
    env.update(MLFLOW_TRACKING_URI=store, PYTHONPATH=str(REPO), **(extra or {}))
    return env


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The two runs, in one local store: their run and experiment ids."""
    project = tmp_path_factory.mktemp("ui-project")
    shutil.copy2(REPO / "eval.py", project / "eval.py")
    for folder in ("examples", "datasets"):
        shutil.copytree(REPO / folder, project / folder)
    store = f"sqlite:///{project / 'mlflow.db'}"
    example = subprocess.run([sys.executable, "eval.py", "--type=all", "--groups=billing"],
                             cwd=project, env=_env(store), capture_output=True, text=True,
                             timeout=600)
    assert example.returncode in (0, 1), example.stderr[-3000:]
    with OpenAIStub() as stub:
        judged = subprocess.run(
            [sys.executable, "examples/eval_llm.py", "--type=all"], cwd=project,
            env=_env(store, {"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "sk-ui-test"}),
            capture_output=True, text=True, timeout=600)
    assert judged.returncode in (0, 1), judged.stderr[-3000:]
    client = mlflow.MlflowClient(store)
    ids = {"store": store, "project": str(project)}
    for key, name in (("example", "support-router/golden"), ("judged", "gemma-chat/smoke")):
        experiment = client.get_experiment_by_name(name)
        (run,) = client.search_runs([experiment.experiment_id])
        ids[f"{key}_run"], ids[f"{key}_experiment"] = run.info.run_id, experiment.experiment_id
        ids[f"{key}_entries"] = run.data.metrics["entries"]
    return ids


@pytest.fixture(scope="module")
def ui(logged: dict[str, str]) -> Iterator[str]:
    """`mlflow ui` over the store, on a free loopback port."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("mlflow")), "ui", "--backend-store-uri",
         logged["store"], "--host", "127.0.0.1", "--port", str(port)],
        cwd=logged["project"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("mlflow ui did not start", pytrace=False)
                time.sleep(1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def browse(pages: list[dict[str, str]]) -> dict[str, str]:
    python = os.environ.get("EVALKIT_UI_PYTHON")
    if not python:
        pytest.skip("EVALKIT_UI_PYTHON is not set: run `make test-ui`")
    done = subprocess.run([python, str(REPO / "tests" / "ui_browse.py"), str(SHOTS)],
                          input=json.dumps(pages), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    texts: dict[str, str] = json.loads(done.stdout)
    return texts


def test_the_mlflow_ui_shows_traces_assessments_dataset_description_and_prompts(
        logged: dict[str, str], ui: str) -> None:
    run, experiment = logged["example_run"], logged["example_experiment"]
    entries = int(float(logged["example_entries"]))
    texts = browse([
        {"name": "run", "url": f"{ui}/#/experiments/{experiment}/runs/{run}",
         "wait_for": "evalkit verdict"},
        {"name": "evaluation-pane",
         "url": f"{ui}/#/experiments/{experiment}/evaluation-runs?selectedRunUuid={run}",
         "wait_for": "all-20", "click": "all-20", "then": f"{entries} of {entries}"},
        {"name": "prompts", "url": f"{ui}/#/prompts", "wait_for": "evalkit-judge-expected"},
    ])
    page = texts["run"]
    assert "evalkit verdict: PASS" in page or "evalkit verdict: FAIL" in page
    assert "accuracy [95% CI]" in page and "report-functional.md" in page
    assert "support-tickets" in page  # the dataset logged as the run's input
    pane = texts["evaluation-pane"]
    assert f"{entries} of {entries}" in pane  # one trace per entry
    cells = {line.strip() for line in pane.splitlines()}
    assert "functional" in cells  # the assessment's column (metrics are <type>_accuracy...)
    assert any(re.fullmatch(r"\(\d+/\d+\)", c) for c in cells)  # its pass count, e.g. (4/8)
    prompts = texts["prompts"]
    for use in ("expected", "repeatability", "bias"):
        assert f"evalkit-judge-{use}" in prompts
    assert {p.name for p in SHOTS.glob("*.png")} >= {"run.png", "evaluation-pane.png",
                                                       "prompts.png"}
