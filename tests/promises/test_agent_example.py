"""examples/agent/eval.py without the agent extra stops at once, naming the command that installs
it (our distribution's extra, never ``evalkit`` on PyPI), before it touches MLflow or a
dataset. Run in-process with the framework's packages hidden, whether installed or not."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "agent" / "eval.py"
EXTRA = ("langchain_core", "langchain_openai", "langgraph")


def test_the_agent_example_without_its_extra_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes an import raise ImportError; a loaded submodule is hidden too,
    # or importing it by its full name would find it
    for name in [*EXTRA, *(m for m in sys.modules if m.split(".")[0] in EXTRA)]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(SCRIPT), run_name="agent_example")
    assert str(stopped.value) == (
        "the agent example needs LangGraph and langchain-openai (langchain_core is "
        "missing): pip install 'evalkit-mlflow[agent]'")
