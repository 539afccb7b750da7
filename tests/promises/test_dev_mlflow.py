"""``make dev-mlflow`` is ``evalkit ui``.
"""

from __future__ import annotations

from tests.support.builders import REPO


def test_make_dev_mlflow_is_evalkit_ui() -> None:
    """So that it serves the store evalkit uses (MLFLOW_TRACKING_URI) and stops whole."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.partition("\ndev-mlflow: install\n")[2].split("\n\n")[0]
    assert recipe.strip() == "$(BIN)/evalkit ui $(if $(MLFLOW_PORT),--port $(MLFLOW_PORT))"
