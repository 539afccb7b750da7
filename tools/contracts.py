"""evalkit's own import-linter contract types: what ``lint-imports`` checks beyond imports.

Registered in ``pyproject.toml`` (``[tool.importlinter] contract_types``); import-linter puts the
working folder on ``sys.path``, so ``lint-imports`` run from the repository finds them. Each reads
the source of the modules in the import graph (``ast``, no import of evalkit's code):

- ``process_owner``: only the command line owns the process: nothing else imports ``signal``
  or calls ``os._exit``;
- ``module_size``: no module of the given packages is longer than a number of lines (the
  complexity of functions is ruff's to check: C901 and the PLR rules in ``pyproject.toml``);
- ``single_base``: no class of the given packages inherits from more than one class of the
  root package (composition, not a stack of mixins).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

from importlinter import Contract, ContractCheck, fields, output


def _source(module: str) -> tuple[Path, str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    path = Path(spec.origin)
    return path, path.read_text(encoding="utf-8")


def _inside(module: str, packages: set[str]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in packages)


def _render(check: ContractCheck) -> None:
    for problem in check.metadata["problems"]:
        output.print_error(problem, bold=False)
        output.new_line()


class ProcessOwnerContract(Contract):
    """Modules outside ``owners`` import none of ``forbidden_imports`` and call none of
    ``forbidden_calls`` (``module.function``)."""

    owners = fields.SetField(subfield=fields.StringField())
    forbidden_imports = fields.SetField(subfield=fields.StringField())
    forbidden_calls = fields.SetField(subfield=fields.StringField())

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        problems = []
        calls = {tuple(c.split(".", 1)) for c in self.forbidden_calls}  # type: ignore[attr-defined]
        for module in sorted(graph.modules):
            if _inside(module, self.owners):  # type: ignore[arg-type]
                continue
            path, text = _source(module)
            for node in ast.walk(ast.parse(text)):
                line = getattr(node, "lineno", 0)
                if isinstance(node, ast.Import | ast.ImportFrom):
                    imported = [a.name for a in node.names] if isinstance(node, ast.Import) \
                        else [node.module or ""]
                    for name in imported:
                        if name.split(".")[0] in self.forbidden_imports:  # type: ignore[operator]
                            problems.append(f"{module} imports {name} ({path}:{line})")
                    if isinstance(node, ast.ImportFrom) and any(
                            (node.module, a.name) in calls for a in node.names):
                        problems.append(f"{module} imports a forbidden function from "
                                        f"{node.module} ({path}:{line})")
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and (node.value.id, node.attr) in calls:
                    problems.append(f"{module} uses {node.value.id}.{node.attr} ({path}:{line})")
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _render(check)


class ModuleSizeContract(Contract):
    """No module inside ``packages`` has more than ``max_lines`` lines."""

    packages = fields.SetField(subfield=fields.StringField())
    max_lines = fields.IntegerField()

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        problems = []
        for module in sorted(graph.modules):
            if _inside(module, self.packages):  # type: ignore[arg-type]
                path, text = _source(module)
                lines = len(text.splitlines())
                if lines > self.max_lines:  # type: ignore[operator]
                    problems.append(f"{module} has {lines} lines, over {self.max_lines} "
                                    f"({path})")
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _render(check)


class SingleBaseContract(Contract):
    """No class inside ``packages`` lists more than one base imported from ``root``."""

    packages = fields.SetField(subfield=fields.StringField())
    root = fields.StringField()

    def check(self, graph: Any, verbose: bool) -> ContractCheck:
        problems = []
        for module in sorted(graph.modules):
            if not _inside(module, self.packages):  # type: ignore[arg-type]
                continue
            path, text = _source(module)
            tree = ast.parse(text)
            own = _names_from(tree, self.root, module)  # type: ignore[arg-type]
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(b) for b in node.bases
                             if ast.unparse(b).split(".")[0] in own]
                    if len(bases) > 1:
                        problems.append(f"{module}.{node.name} inherits from {', '.join(bases)} "
                                        f"({path}:{node.lineno})")
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        _render(check)


def _names_from(tree: ast.Module, root: str, module: str) -> set[str]:
    """Names a module binds to things of the root package: its imports from it, and its own
    classes."""
    found = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0]
                                                 == root):
            found |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names
                      if a.name.split(".")[0] == root}
    return found
