"""The command lines: the ``evalkit`` command and ``eval.py`` (:func:`run_eval_script`).

Both are thin: they parse arguments, call the library, print, and map errors to exit statuses
(one table: :mod:`evalkit.cli._exit`).
"""

from evalkit.cli._display import ProgressDisplay
from evalkit.cli._exit import ExitStatus
from evalkit.cli._main import main
from evalkit.cli._script import run_eval_script

__all__ = ["ExitStatus", "ProgressDisplay", "main", "run_eval_script"]
