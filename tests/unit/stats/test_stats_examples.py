"""The statistics document themselves as scipy.stats does: each states its formula (Notes),
the source it follows (References) and an example (Examples) whose printed numbers are
checked here, as doctests, in the fast tier."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import evalkit.stats

MODULES = [importlib.import_module(f"evalkit.stats.{module.name}")
           for module in pkgutil.iter_modules(evalkit.stats.__path__)]
EXAMPLES = [test for module in MODULES for test in doctest.DocTestFinder().find(module)
            if test.examples]
APPLIERS = {"checks_for", "judge_checks", "corrected_metrics"}
"""Functions of the face that apply :func:`evalkit.stats.check_judge` to what a run holds:
their statistics, and example, are those of the function they apply."""
FACE_FUNCTIONS = {name: getattr(evalkit.stats, name) for name in evalkit.stats.__all__
                  if inspect.isfunction(getattr(evalkit.stats, name))}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda test: test.name)
def test_an_example_prints_what_its_docstring_says(example: doctest.DocTest) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    runner.run(example, out=report.append)
    assert runner.failures == 0, "".join(report)


@pytest.mark.parametrize("name", sorted(FACE_FUNCTIONS.keys() - APPLIERS))
def test_every_statistic_of_the_face_has_an_example(name: str) -> None:
    assert ">>> " in (FACE_FUNCTIONS[name].__doc__ or "")


@pytest.mark.parametrize("name", sorted(FACE_FUNCTIONS))
def test_a_documented_formula_cites_its_source(name: str) -> None:
    doc = inspect.getdoc(FACE_FUNCTIONS[name]) or ""
    assert ("Notes\n-----" not in doc) or ("References\n----------" in doc)


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_statistics_name_nothing_in_mlflow(module: ModuleType) -> None:
    # MLflow's names live in evalkit.records.names; tracking writes them, reports read them
    tree = ast.parse(inspect.getsource(module))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("evalkit.records") for alias in node.names}
    assert not imported & {"names", "TypeNames", "MetricPoint"}
