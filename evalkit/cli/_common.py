"""What both command lines share: error handling and logging setup."""

from __future__ import annotations

import ast
import contextlib
import logging
import os
import re
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from evalkit._errors import ConfigError, EvalkitError
from evalkit._secrets import Redactor
from evalkit.cli._exit import ExitStatus, exit_status_of

TRACEBACK_VARIABLE = "EVALKIT_TRACEBACK"
"""Set to 1 to see the traceback of an unexpected error (for a bug report)."""
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)[^/\s@]*@")

def guarded(action: Callable[[], int]) -> int:
    """Run a command; any failure becomes one redacted line on stderr and an exit status."""
    try:
        return action()
    except EvalkitError as err:
        print(f"error: {shown(str(err))}", file=sys.stderr)
        return exit_status_of(err)
    except KeyboardInterrupt:  # before a run's calls began, or outside any run
        print("error: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except Exception as err:
        if os.environ.get(TRACEBACK_VARIABLE) == "1":
            traceback.print_exc()
        print(f"error: unexpected {type(err).__name__}: {shown(str(err))[:500]} (this is a "
              f"bug in evalkit or a library under it: rerun with {TRACEBACK_VARIABLE}=1 and "
              "report the traceback)", file=sys.stderr)
        return ExitStatus.RUNTIME_FAILURE


def script_experiment(script: Path = Path("eval.py")) -> str:
    """``EXPERIMENT_NAME`` as ``script`` assigns it (a string literal), read without running
    the script: the experiment a command takes when none is named."""
    fix = "name the experiment on the command line, e.g. support-router/golden"
    try:
        tree = ast.parse(script.read_bytes(), str(script))
    except FileNotFoundError:
        raise ConfigError(f"no EXPERIMENT given and no {script} here to read "
                          f"EXPERIMENT_NAME from: {fix}") from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ConfigError(f"cannot read EXPERIMENT_NAME from {script} ({err}): {fix}") from None
    for node in reversed(tree.body):  # the last assignment is the one that holds
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "EXPERIMENT_NAME" for t in targets):
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            raise ConfigError(f"{script} sets EXPERIMENT_NAME to an expression, not a string "
                              f"literal; evalkit reads it without running the script: {fix}")
    raise ConfigError(f"no EXPERIMENT given and {script} sets no EXPERIMENT_NAME: {fix}")


def shown(text: str) -> str:
    """``text`` fit for the terminal: secrets redacted, passwords in URLs masked."""
    return _URL_PASSWORD.sub(r"\1***@", Redactor.from_environment().text(text))


_PROCESS_DEFAULTS = {
    # third-party progress bars stay out of evalkit's plain output
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    # MLflow's own requests fail in seconds, not after its default of seven retries with
    # exponential backoff (about four minutes against a dead server)
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "15",
}
"""Settings of this process that a user's environment may override."""


@contextlib.contextmanager
def process_configured() -> Iterator[None]:
    """The command line owns its process while it runs: its environment defaults and
    evalkit's log lines (``evalkit: ...`` on stderr). All of it is put back when the command
    returns, so that a command called from Python (a test, ``evalkit resume`` running a
    script) leaves the calling process as it found it."""
    added = [name for name in _PROCESS_DEFAULTS if name not in os.environ]
    os.environ.update({name: _PROCESS_DEFAULTS[name] for name in added})
    logger = logging.getLogger("evalkit")
    handler = None
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("evalkit: %(message)s"))
        logger.addHandler(handler)
    level, propagate = logger.level, logger.propagate
    if handler is not None:
        logger.setLevel(logging.INFO)
        logger.propagate = False
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)
        if handler is not None:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def run_script(script: Path, argv: Sequence[str]) -> int:
    """Run an eval script as ``python SCRIPT ARGV`` would, in this process: as ``__main__``,
    its folder first on ``sys.path`` (its own modules import as they did when it made the
    run), ``sys.argv`` and the import path put back after; its exit status returned."""
    if not script.is_file():
        raise ConfigError(f"{script} not found: pass the eval script with --script")
    folder = str(script.parent.resolve())
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, folder)
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as done:
        return int(done.code or 0) if not isinstance(done.code, str) else ExitStatus.USAGE
    except ModuleNotFoundError as missing:
        raise ConfigError(f"{script} imports {missing.name or missing}, which is neither in "
                          f"{folder} nor installed in {sys.executable}: install it there, or "
                          "run it with the Python that made the run: python "
                          f"{script} {' '.join(argv)}") from None
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    return ExitStatus.OK
