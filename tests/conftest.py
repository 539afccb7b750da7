"""Fixtures: a scratch folder per test, a tracker in memory, and (for the slow tier) one real local
MLflow store per session. Shared helpers are in ``tests/support/`` (builders, processes,
servers, the OpenAI stub, the team server).

Tiers, set per folder or module (never test by test): ``make test`` runs every test not marked
``slow`` (in-process, no MLflow store, no subprocess, no server: all of ``unit/``), ``make
test-all`` adds the ``slow`` ones (every module of ``e2e/`` but those of their own tier, and the
modules of ``promises/`` whose ``pytestmark`` says so), the real LLM (``llm``), the browser
(``ui``) and Ray (``ray``). No test depends on the wall time it takes: Hypothesis runs without a
deadline.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from evalkit.tracking import Tracker
from tests.support.processes import STORE_TEMPLATE

# A deadline fails an example that a loaded machine merely ran slowly: behaviour, not speed.
settings.register_profile("evalkit", deadline=None)
settings.load_profile("evalkit")


@pytest.fixture(scope="session", autouse=True)
def _store_template(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Name the folder of the session's empty store (created on first use only, so the fast
    tier, and each mutant of ``make mutation``, never pays for it)."""
    STORE_TEMPLATE[:] = [tmp_path_factory.getbasetemp() / "store-template"]


@pytest.fixture(autouse=True)
def _in_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test from its own folder: MLflow puts local artifacts under ./mlruns."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test appends to the job summary of the CI job running the tests (GitHub Actions
    names it in ``GITHUB_STEP_SUMMARY``); a test of that summary names a file of its own."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def tracker(tmp_path: Path) -> Tracker:
    """A tracker in memory: runs, artifacts, traces and bundles, and nothing on disk but the
    raw results and bundles under ``tmp_path``."""
    return Tracker.in_memory(bundles_dir=tmp_path / ".evalkit" / "bundles")


@pytest.fixture(scope="session")
def tracking_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real local MLflow store for the in-process tests of the slow tier (creating one
    costs seconds). It is also the process default while a test uses it, so no test can write
    to the repository's own store."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    previous = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = uri
    yield uri
    if previous is None:
        del os.environ["MLFLOW_TRACKING_URI"]
    else:
        os.environ["MLFLOW_TRACKING_URI"] = previous


@pytest.fixture(autouse=True)
def _no_default_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                      tmp_path: Path) -> None:
    """No test writes to a store it did not name: a slow test's default store is the
    session's real one (``tracking_uri``), a fast test's a path in its own folder (which it
    never creates: fast tests track in memory)."""
    if request.node.get_closest_marker("slow") is not None:
        request.getfixturevalue("tracking_uri")
    elif "MLFLOW_TRACKING_URI" not in os.environ:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
