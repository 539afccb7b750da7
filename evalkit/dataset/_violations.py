"""Lint findings: each violation names the file, the JSON pointer, what is wrong and the fix."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LintViolation:
    """One broken rule: where (file and JSON pointer), what, and how to fix it."""

    file: str
    pointer: str
    message: str
    fix: str

    def render(self) -> str:
        return f"{self.file}: {self.pointer or '/'}: {self.message}. Fix: {self.fix}"


@dataclass(frozen=True)
class LintReport:
    """Every violation found in one dataset, in file order."""

    dataset: str
    files_checked: int
    violations: tuple[LintViolation, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    def render(self) -> str:
        lines = [v.render() for v in self.violations] + [f"warning: {w}" for w in self.warnings]
        verdict = (
            f"{self.dataset}: {self.files_checked} entries, valid"
            if self.ok
            else f"{self.dataset}: {len(self.violations)} violation(s) in "
            f"{len({v.file for v in self.violations})} file(s)"
        )
        return "\n".join([*lines, verdict])


class Collector:
    def __init__(self) -> None:
        self.violations: list[LintViolation] = []

    def add(self, file: Path | str, pointer: str, message: str, fix: str) -> None:
        self.violations.append(LintViolation(*map(printable, (display(file), pointer, message,
                                                               fix))))


def printable(text: str) -> str:
    """``text`` with lone surrogates (from a JSON escape or an undecodable file name) and control
    characters written as escapes, so that printing a violation cannot fail or garble a
    terminal."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def display(path: Path | str) -> str:
    """``path`` relative to the working directory when it is under it. Made absolute without
    resolving symlinks: a symlinked file is named as itself, not as its target."""
    try:
        return str(Path(os.path.abspath(path)).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def json_pointer(parts: Sequence[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def json_type(value: Any) -> str:
    for kind, name in ((bool, "a boolean"), (str, "a string"), (list, "an array"),
                       (dict, "an object"), ((int, float), "a number"), (type(None), "null")):
        if isinstance(value, kind):
            return name
    return type(value).__name__
