"""Every install command evalkit prints or documents installs our distribution,
``evalkit-mlflow``, or a well-known third-party one: ``evalkit`` on PyPI is an unrelated project,
and ``pip install 'evalkit[ray]'`` would write its files into our import folder."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from evalkit import _distribution

ROOT = Path(__file__).resolve().parents[2]
OURS = canonicalize_name(_distribution.DISTRIBUTION)
THIRD_PARTY = frozenset({"torch", "openai", "mlflow", "ray", "playwright",
                         "sentence-transformers"})
"""Others' distributions a hint may name: each is the project its name says on PyPI."""
OPTIONS_WITH_VALUE = frozenset({"--index-url", "--extra-index-url", "-i", "--torch-backend",
                                "-r", "--requirement", "-c", "--constraint", "-f",
                                "--find-links"})
_HINT = re.compile(r"pip install\b([^`\"\n#;&)]*)")
"""A hint's arguments run to the end of the string, code span, line or command."""


def sources() -> list[Path]:
    """What evalkit prints and documents: its code (the scaffold's templates included), the
    example eval scripts, the README and the documentation site."""
    package = [p for p in (ROOT / "evalkit").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts]
    return [*package, ROOT / "eval.py", *sorted((ROOT / "examples").rglob("*.py")),
            ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def hints(text: str) -> list[str]:
    """The arguments of every ``pip install`` in ``text``, the distribution constant resolved
    where an f-string names it."""
    text = text.replace("{DISTRIBUTION}", _distribution.DISTRIBUTION)
    return [m.group(1).strip() for m in _HINT.finditer(text)]


def distributions(arguments: str) -> list[str]:
    """The distribution each requirement of one hint installs (a wheel by its file name, a
    local folder as ``path:``), or ValueError for a hint that names none."""
    words = shlex.split(arguments)
    found, skip = [], False
    for word in words:
        if skip or word.startswith("-"):
            skip = not skip and word in OPTIONS_WITH_VALUE
            continue
        if word.endswith(".whl"):
            found.append(canonicalize_name(Path(word).name.split("-")[0]))
        elif word.startswith(("/", ".")) and " @ " not in word:
            found.append(f"path:{word}")
        else:
            try:
                found.append(canonicalize_name(Requirement(word).name))
            except InvalidRequirement as err:
                raise ValueError(f"{word!r} is not a requirement: {err}") from None
    if not found:
        raise ValueError(f"'pip install {arguments}' names no requirement (a hint split "
                         "across strings? keep it whole)")
    return found


def wrong(arguments: str) -> list[str]:
    """The distributions a hint installs that are neither ours nor well-known."""
    try:
        named = distributions(arguments)
    except ValueError as err:
        return [str(err)]
    return [d for d in named if d != OURS and d not in THIRD_PARTY and not d.startswith("path:")]


def test_every_install_hint_in_code_and_documents_installs_evalkit_mlflow_or_a_known_project(
        ) -> None:
    found = {(str(path.relative_to(ROOT)), arguments)
             for path in sources()
             for arguments in hints(path.read_text(encoding="utf-8", errors="replace"))}
    bad = [f"{path}: pip install {arguments} -> {wrong(arguments)}"
           for path, arguments in sorted(found) if wrong(arguments)]
    assert bad == []
    # The collection sees the hints it is there for: the extras' commands and the README's.
    named = {arguments for _, arguments in found}
    assert "'evalkit-mlflow[semantic]'" in named and "'evalkit-mlflow[ray]'" in named
    assert any(a.startswith("'evalkit-mlflow @ git+") for a in named)


def test_the_printed_install_commands_install_evalkit_mlflow_or_a_known_project() -> None:
    commands = {name: value for name, value in vars(_distribution).items()
                if name.endswith("_COMMAND")}
    assert set(commands) >= {"SEMANTIC_EXTRA_COMMAND", "RAY_EXTRA_COMMAND", "CPU_TORCH_COMMAND"}
    for command in commands.values():
        (arguments,) = hints(command)
        assert wrong(arguments) == [], command


@pytest.mark.parametrize("hint", [
    "pip install evalkit", "pip install 'evalkit[ray]'", "(pip install 'evalkit[semantic]')",
    "`pip install -U evalkit==0.2`", "pip install evalkit-mlflow evalkit", "pip install ",
    'f"pip install "', "pip install --index-url https://example.org/simple evalkit",
])
def test_a_hint_that_installs_bare_evalkit_is_caught(hint: str) -> None:
    (arguments,) = hints(hint)
    assert wrong(arguments) != []


@pytest.mark.parametrize("hint", [
    "pip install 'evalkit-mlflow @ git+file://localhost/path/to/evalkit'   # a clone",
    "`pip install dist/evalkit_mlflow-0.2.0-py3-none-any.whl`",
    "pip install torch --index-url https://download.pytorch.org/whl/cpu",
    "uv pip install torch --torch-backend=cpu", "(`pip install /path/to/evalkit`)",
    "pip install 'openai[aiohttp]'",
])
def test_hints_of_ours_and_known_projects_pass(hint: str) -> None:
    (arguments,) = hints(hint)
    assert wrong(arguments) == []
