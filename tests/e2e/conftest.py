"""End to end: every test in this folder is of a tier outside ``make test``. A module of the
real LLM, the browser or the Ray cluster says so with its own ``pytestmark`` (``llm``, ``ui``,
``ray``: each has a make target of its own); every other module here is ``slow``
(``make test-slow``: subprocesses, real MLflow stores, the team server, a notebook)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent
OWN_TIERS = ("llm", "ui", "ray")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE) and not any(
                item.get_closest_marker(tier) for tier in OWN_TIERS):
            item.add_marker(pytest.mark.slow)
