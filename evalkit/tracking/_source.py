"""What defines the component a run evaluated, as far as the files tell: the git commit, the
tracked files' uncommitted changes, a hash of the eval script and the local modules it
imported, and the versions of Python, MLflow and evalkit.

The hash of the script's own modules works without git and catches what a commit would not
show yet: a prompt edited in a local module between two runs.
"""

from __future__ import annotations

import getpass
import hashlib
import platform
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType

from evalkit.records import names


@dataclass(frozen=True)
class SourceState:
    """The source tags of a run, and the uncommitted diff they hash (``""`` when clean)."""

    tags: dict[str, str]
    diff: str = field(default="", repr=False)


def source_state(script: str, source_file: Path | None = None,
                 modules: Iterable[ModuleType] | None = None) -> SourceState:
    """The source of a run made by ``script`` (``source_file`` its file when known; its git
    checkout is the one the file is in, else the current folder's)."""
    folder = source_file.resolve().parent if source_file is not None else None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                                  check=True, cwd=folder)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "--verify", "--quiet", "HEAD")
    tags = {names.SOURCE_NAME_TAG: script, names.USER_TAG: _user(),
            names.PYTHON_VERSION_TAG: platform.python_version(),
            names.MLFLOW_VERSION_TAG: _version("mlflow")}
    diff = ""
    if commit:
        tags[names.GIT_COMMIT_TAG] = tags[names.SOURCE_COMMIT_TAG] = commit
        dirty = git("status", "--porcelain", "--untracked-files=no")
        tags[names.GIT_DIRTY_TAG] = "true" if dirty else "false"
        if dirty:
            diff = git("diff", "--no-ext-diff", "HEAD") or ""
    elif git("rev-parse", "--is-inside-work-tree") == "true":
        tags[names.GIT_COMMIT_TAG] = names.NO_COMMIT
        diff = git("diff", "--no-ext-diff", "--cached") or ""  # what is staged for it
    else:
        tags[names.GIT_COMMIT_TAG] = names.NOT_A_CHECKOUT
    if diff:
        tags[names.CODE_DIFF_SHA_TAG] = hashlib.sha256(diff.encode()).hexdigest()
    if source_file is not None:
        tags[names.COMPONENT_SOURCE_SHA_TAG] = component_source_sha256(
            source_file, sys.modules.values() if modules is None else modules)
    return SourceState(tags, diff)


def component_source_sha256(script: Path, modules: Iterable[ModuleType]) -> str:
    """sha256 over the script and every module among ``modules`` loaded from a file under
    the script's folder (not evalkit's own, and nothing under a hidden folder such as a
    virtualenv): each file's path relative to the folder, then its bytes."""
    folder = script.resolve().parent
    files = {script.resolve()}
    for module in list(modules):
        origin = getattr(module, "__file__", None)
        if not origin or module.__name__.split(".")[0] == "evalkit":
            continue
        path = Path(origin).resolve()
        if path.suffix == ".py" and path.is_relative_to(folder) and not any(
                part.startswith(".") or part == "site-packages"
                for part in path.relative_to(folder).parts):
            files.add(path)
    digest = hashlib.sha256()
    for path in sorted(files):
        if path.is_file():
            digest.update(f"{path.relative_to(folder).as_posix()}\0".encode())
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _user() -> str:
    """Who ran it, as MLflow's own fluent API records it."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        return "unknown"
