"""Shared test helpers: datasets written to disk, eval scripts, and a real MLflow store."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PERMISSIVE_SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}


def write_dataset(root: Path, entries: Mapping[str, Mapping[str, Any]],
                  schema: Mapping[str, Any] = PERMISSIVE_SCHEMA) -> Path:
    """A valid dataset folder: README, schema, and one file per entry id (``$schema`` added)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# test dataset\n", encoding="utf-8")
    (root / "dataset.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    for entry_id, doc in entries.items():
        path = root / "data" / f"{entry_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        reference = os.path.relpath(root / "dataset.schema.json", path.parent)
        path.write_text(json.dumps({"$schema": reference, **doc}), encoding="utf-8")
    return root


def entry(*types: str, input: Any = "q", expected: Any = "a", **fields: Any) -> dict[str, Any]:
    """An entry document; ``expected`` defaults to null for bias/repeatability-only types."""
    if set(types) <= {"bias", "repeatability"} and expected == "a":
        expected = None
    return {"test_types": list(types), "input": input, "expected_output": expected, **fields}


def write_eval_script(folder: Path, constants: Mapping[str, Any], component: str,
                      epilogue: str = "") -> Path:
    """An eval.py in ``folder``: the constants, ``component`` (the body of invoke_component
    source, defining ``invoke_component(entry, call)``), and the standard entry point."""
    lines = ["import evalkit", *(f"{k} = {v!r}" for k, v in constants.items()), "",
             textwrap.dedent(component).strip(), "", "if __name__ == '__main__':",
             "    status = evalkit.run_eval_script(globals(), invoke_component)"]
    lines += [f"    {line}" for line in textwrap.dedent(epilogue).strip().splitlines()]
    lines.append("    raise SystemExit(status)")
    script = folder / "eval.py"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return script


def plan_of(tmp_path: Path, entries: Mapping[str, Mapping[str, Any]], repeats: int = 3,
            selection: str = "all", groups: str | None = None, **constants: Any) -> Any:
    """The run plan (:class:`evalkit.run._selection.RunPlan`) of a dataset written from
    ``entries``, with thresholds of 0.5, ``REPEAT_COUNT = repeats`` and ``constants``."""
    from evalkit import EvalConfig, Selection
    from evalkit.dataset import load_dataset
    from evalkit.run._selection import plan_run

    dataset = write_dataset(tmp_path / "ds", entries)
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "plan/tests", "DATASET_PATH": str(dataset), "EVAL_MIN_ACCURACY": 0.5,
        "REPEAT_COUNT": repeats, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, **constants},
        "test_eval.py")
    return plan_run(load_dataset(dataset), Selection.parse(selection, groups), config)


def run_script(folder: Path, *args: str, env: Mapping[str, str] | None = None,
               timeout: float = 300, seed_store: bool = True
               ) -> subprocess.CompletedProcess[str]:
    """Run ``folder/eval.py`` with ``folder`` as the working directory and its own store."""
    return subprocess.run(
        [sys.executable, "eval.py", *args], cwd=folder, capture_output=True, text=True,
        timeout=timeout, env=script_env(folder, env, seed_store=seed_store))


def script_env(folder: Path, extra: Mapping[str, str] | None = None, *,
               seed_store: bool = True) -> dict[str, str]:
    """The environment of a subprocess whose store is ``folder/mlflow.db`` unless ``extra``
    names another. With ``seed_store``, a missing local store is first copied from an empty
    one MLflow created once per session (see :func:`seed_local_store`); a test of what
    happens before or while evalkit creates a store passes ``seed_store=False``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder / 'mlflow.db'}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra or {})
    if seed_store and env["MLFLOW_TRACKING_URI"] == f"sqlite:///{folder / 'mlflow.db'}":
        seed_local_store(folder / "mlflow.db")
    return env


_TEMPLATE_DIR: list[Path] = []
"""Where this session (each xdist worker its own) keeps its empty store; set at its start."""


def seed_local_store(database: Path) -> None:
    """Copy an empty MLflow store, its schema already migrated, to ``database`` unless one is
    there: MLflow takes seconds to create the schema of a new store, and most tests run
    ``eval.py`` in a folder of their own. The copy is the store MLflow would create."""
    if database.exists() or not _TEMPLATE_DIR:
        return
    template = _TEMPLATE_DIR[0] / "mlflow.db"
    if not template.exists():
        import mlflow

        _TEMPLATE_DIR[0].mkdir(parents=True, exist_ok=True)
        with contextlib.chdir(_TEMPLATE_DIR[0]):
            mlflow.MlflowClient(f"sqlite:///{template}").search_experiments()
    database.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, database)


@pytest.fixture(scope="session", autouse=True)
def _store_template(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Name the folder of the session's empty store (created on first use only, so the fast
    tests, and each mutant of ``make mutation``, never pay for it)."""
    _TEMPLATE_DIR[:] = [tmp_path_factory.getbasetemp() / "store-template"]


@pytest.fixture(autouse=True)
def _in_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every test from its own folder: MLflow puts local artifacts under ./mlruns."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session", autouse=True)
def tracking_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real local MLflow store for the in-process tests (creating one costs seconds).

    It is also the process default, so no test can write to the repository's own store.
    """
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    previous = os.environ.get("MLFLOW_TRACKING_URI")
    os.environ["MLFLOW_TRACKING_URI"] = uri
    yield uri
    if previous is None:
        del os.environ["MLFLOW_TRACKING_URI"]
    else:
        os.environ["MLFLOW_TRACKING_URI"] = previous
