"""examples/eval_llm.py against a real LLM behind the OpenAI API, offline (`make test-llm`).

A llama.cpp server (llama-cpp-python, from the cache venv that `make test-llm` installs in
``.cache/llm/``) serves Gemma 3 270M on a free loopback port. The eval script runs unchanged in
a scratch copy of its layout, as a user would run it. Gemma 3 270M is a *base* model: the test
asserts the plumbing (real calls, repeats that really differ, judge replies recorded and never
counted as passes when invalid, the MLflow run, no key anywhere), never the model's answers.

Excluded from `make test` by the ``llm`` marker; the server python and the model come from
``EVALKIT_LLM_PYTHON`` and ``EVALKIT_LLM_MODEL``, which `make test-llm` sets.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest

from tests.support.processes import free_port, run_eval

pytestmark = pytest.mark.llm

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path("examples") / "eval_llm.py"
DATASET = Path("datasets") / "llm-smoke"
MODEL = "gemma3-270m"  # COMPONENT_MODEL and JUDGE_MODEL of examples/eval_llm.py
EXPERIMENT = "gemma-chat/smoke"
REPEAT_COUNT = 3
HOST = "127.0.0.1"
SERVER_READY_TIMEOUT = 120.0  # seconds for the model to load and /v1/models to answer
SERVER_STOP_TIMEOUT = 30.0  # seconds after SIGTERM before SIGKILL
EVAL_TIMEOUT = 600.0  # 14 component calls and 7 judge calls take about 20 s on 2 cores
NO_PROXY = "127.0.0.1,localhost"  # a proxy from the environment must not see loopback calls


def _required_path(name: str) -> Path:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this test with `make test-llm`, which installs the "
                    "llama.cpp server and the model into .cache/llm/ and sets "
                    "EVALKIT_LLM_PYTHON and EVALKIT_LLM_MODEL", pytrace=False)
    path = Path(value)
    if not path.is_file():
        pytest.fail(f"{name}={value} does not exist: run `make test-llm` (to reinstall, "
                    "remove .cache/llm/ first)", pytrace=False)
    return path


def _tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def _served_models(base_url: str) -> list[str] | None:
    """The model ids of ``GET /v1/models``, or ``None`` while the server is not answering."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{base_url}/v1/models", timeout=5) as reply:
            return [m["id"] for m in json.load(reply)["data"]]
    except (OSError, ValueError, KeyError):  # refused, reset, timeout, not JSON yet
        return None


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM this PID, wait; SIGKILL only if it will not stop."""
    if server.poll() is not None:
        return
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=SERVER_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=SERVER_STOP_TIMEOUT)


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama.cpp server with the model on a free loopback port; yields its base URL."""
    python = _required_path("EVALKIT_LLM_PYTHON")
    model = _required_path("EVALKIT_LLM_MODEL")
    port = free_port(HOST)
    base_url = f"http://{HOST}:{port}"
    log = tmp_path_factory.mktemp("llm-server") / "server.log"
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model),
               "--model_alias", MODEL, "--host", HOST, "--port", str(port),
               "--chat_format", "gemma", "--n_threads", "2"]
    with log.open("wb") as output:
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output,
                                  stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_READY_TIMEOUT
        while (models := _served_models(base_url)) is None:
            if server.poll() is not None:
                pytest.fail(f"the llama.cpp server exited with status {server.returncode} "
                            f"before answering:\n{_tail(log)}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"the llama.cpp server did not answer GET /v1/models within "
                            f"{SERVER_READY_TIMEOUT:.0f} s:\n{_tail(log)}", pytrace=False)
            time.sleep(0.5)
        assert MODEL in models, f"the server serves {models}, not {MODEL}"
        yield base_url
    finally:
        _stop(server)


def _run_eval(project: Path, base_url: str, api_key: str) -> subprocess.CompletedProcess[str]:
    """The script as a user runs it, in a process of its own, against the project's own
    store; the server on loopback bypasses any proxy of the environment."""
    return run_eval(project, "--type=all", script=str(SCRIPT), timeout=EVAL_TIMEOUT, env={
        "OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": api_key,
        "NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY})


def _dataset_entries(dataset: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((dataset / "data").rglob("*.json"))]


def _artifact_paths(client: mlflow.MlflowClient, run_id: str, path: str = "") -> set[str]:
    found = set()
    for artifact in client.list_artifacts(run_id, path):
        found |= (_artifact_paths(client, run_id, artifact.path) if artifact.is_dir
                  else {artifact.path})
    return found


def test_eval_llm_runs_end_to_end_against_a_real_model(
        llm_server: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The user's layout, in a scratch folder: the script, its dataset, nothing else.
    (tmp_path / SCRIPT).parent.mkdir(parents=True)
    shutil.copy2(REPO / SCRIPT, tmp_path / SCRIPT)
    shutil.copytree(REPO / DATASET, tmp_path / DATASET)
    api_key = "sk-local-" + uuid.uuid4().hex  # unique: any trace of it is a leak
    tracking_uri = f"sqlite:///{tmp_path / 'mlflow.db'}"  # the project's own (run_eval's)

    started = time.monotonic()
    result = _run_eval(tmp_path, llm_server, api_key)
    elapsed = time.monotonic() - started
    console = result.stdout + result.stderr
    # Thresholds are 0: anything but 0 is broken plumbing, never a weak model.
    assert result.returncode == 0, f"exit status {result.returncode}:\n{console[-4000:]}"

    entries = _dataset_entries(tmp_path / DATASET)
    types = {t for e in entries for t in e["test_types"]}
    assert types == {"functional", "bias", "repeatability"}
    for test_type in types:
        report = tmp_path / "reports" / "llm" / f"report-{test_type}.md"
        assert report.is_file(), f"no {report}:\n{console[-4000:]}"

    # The MLflow run.
    client = mlflow.MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    params, metrics = run.data.params, run.data.metrics
    assert params["judge_model"] == MODEL
    assert len(params["judge_prompt_digest"]) == 64
    assert params["component.model"] == MODEL
    assert metrics["repeat_count"] == REPEAT_COUNT
    expected_calls = sum(REPEAT_COUNT if "repeatability" in e["test_types"] else 1
                         for e in entries)
    assert metrics["calls"] == expected_calls  # every repeat a real call
    assert metrics["judge_calls"] > 0
    artifacts = _artifact_paths(client, run.info.run_id)
    assert {f"reports/report-{t}.md" for t in types} <= artifacts
    assert {"results/evaluation.json", "results/entries.json",
            "raw/raw-results.jsonl"} <= artifacts

    downloaded = client.download_artifacts(run.info.run_id, "results/evaluation.json",
                                           str(tmp_path_factory.mktemp("artifacts")))
    doc = json.loads(Path(downloaded).read_text(encoding="utf-8"))
    by_type = {t["test_type"]: t for t in doc["types"]}
    assert set(by_type) == types
    assert all(t["scorer"] == "llm_judge" for t in by_type.values())

    # Repeats are fresh draws at temperature 1: somewhere they must differ.
    repeated = by_type["repeatability"]["items"]
    assert repeated and all(len(i["outputs"]) == REPEAT_COUNT for i in repeated)
    distinct = {i["id"]: len(set(map(json.dumps, i["outputs"]))) for i in repeated}
    assert max(distinct.values()) >= 2, (
        f"every repeatability entry gave {REPEAT_COUNT} identical outputs: the repeats were "
        f"not fresh calls: {[i['outputs'] for i in repeated]}")

    # Every judgement is a valid 0/1, a recorded invalid reply, or an error; only a valid
    # reply can pass, and it passes exactly when it is 1.
    items = [i for t in by_type.values() for i in t["items"]]
    replies: collections.Counter[str] = collections.Counter()
    for item in items:
        valid = item["judge_reply"] in ("0", "1") and not item["invalid_judgement"]
        assert valid or item["invalid_judgement"] is True or item["error"], item
        if item["invalid_judgement"] or item["error"]:
            assert item["passed"] is False, item
        elif valid:
            assert item["passed"] is (item["judge_reply"] == "1"), item
        replies["error" if item["error"] else "valid" if valid else "invalid"] += 1
    assert metrics["judge_invalid"] == sum(bool(i["invalid_judgement"]) for i in items)
    if metrics["component_errors"] == 0:  # then every item was judged, once
        assert metrics["judge_calls"] == len(items)

    # The key appears nowhere: store, artifacts, reports, raw results, console.
    assert api_key not in console
    leaks = [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
             if p.is_file() and api_key.encode() in p.read_bytes()]
    assert leaks == []

    with capsys.disabled():  # one line of what the model did, shown by `make test-llm`
        print(f"\neval_llm.py: {elapsed:.1f} s, {int(metrics['calls'])} component calls, "
              f"{int(metrics['judge_calls'])} judge calls; judgements {dict(replies)}; "
              f"replies {dict(collections.Counter(repr(i['judge_reply']) for i in items))}; "
              f"distinct repeat outputs {distinct}")
