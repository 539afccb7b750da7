"""The command lines called in this process: ``eval.py``'s (``run_eval_script``) and the
``evalkit`` command (``main``), each giving back its exit status, argparse's own exits
included. A command puts the process back as it found it when it returns (environment,
logging); a test's own store is named by ``conftest.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalkit import run_eval_script
from evalkit.cli import main


def exit_status(command: Callable[[], int]) -> int:
    """The exit status of a command line run in-process, argparse's own exits included."""
    try:
        return command()
    except SystemExit as exit:
        assert isinstance(exit.code, int)
        return exit.code


def eval_script(constants: dict[str, Any], component: Any, *argv: str) -> int:
    """``python eval.py ARGV`` of a script with these constants and component."""
    return exit_status(lambda: run_eval_script(constants, component, argv=list(argv),
                                               script="eval.py"))


def evalkit_command(*argv: str | Path) -> int:
    """``evalkit ARGV``."""
    return exit_status(lambda: main([str(a) for a in argv]))
