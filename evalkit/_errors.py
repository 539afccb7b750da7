"""Every error evalkit raises on purpose, in one tree under :class:`EvalkitError`, so that a
caller can catch one class or tell the failures apart::

    EvalkitError                  a failure evalkit names and cannot go past
    ├── ConfigError               a constant of eval.py, an option or a selection is unusable
    │   └── NotFound              what a command names is not in the tracking store
    ├── DatasetInvalid            the golden dataset failed lint; carries every violation
    ├── ImportInvalid             rows to import have problems; nothing was written
    ├── LabelFileInvalid          a label file has problems; nothing was imported
    ├── RawResultsDamaged         a raw-results line before the last is not a call record
    ├── ProviderError             the chat endpoint is unreachable or kept failing
    ├── TrackingError             MLflow cannot be reached, or a run holds too little
    │   └── TrackingOffline       the server went away mid-run; the run is a local bundle
    ├── RunInterrupted            SIGINT or SIGTERM stopped the run; outputs were kept
    │   └── BudgetExhausted       MAX_COST_USD stopped the run; outputs were kept
    ├── OverBudget                the estimate is above MAX_COST_USD; nothing was started
    └── WorkerSetupError          a Ray worker could not load eval.py or run its setup hook

The library raises and the command line decides what each means for the process: the exit
status of each class is in :mod:`evalkit.cli._exit`. This module is the bottom layer, so what
an error carries from a higher wing is typed by a protocol of what the error reads
(:class:`Findings`, :class:`FileProblem`) or a plain type.

An exception a module raises and its own wing catches is no error of evalkit's and stays by its
code: the dataset's ``BadJson`` (a ``ValueError``) says why bytes are not strict JSON, and
every reader of JSON turns it into a lint violation or a row's problem, which do reach a person.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

MAX_LISTED = 50
"""Problems a refused file's error lists in its message; the rest are counted (the error
carries them all)."""


class Findings(Protocol):
    """What lint hands to :class:`DatasetInvalid`: every violation, rendered for a person."""

    def render(self) -> str: ...


class FileProblem(Protocol):
    """What is wrong with one line of a file (line 0: the whole file), as the dataset wing's
    ``dataset._rows.RowProblem`` holds it."""

    @property
    def line(self) -> int: ...

    @property
    def field(self) -> str | None: ...

    @property
    def message(self) -> str: ...

    def render(self, path: Path | str) -> str:
        """The problem for a person, naming ``path`` and its line."""
        ...


def _refusal(source: str, count: int, undone: str, listed: Sequence[str]) -> str:
    """The message of a file refused whole: its ``count`` problems, ``listed`` (the first
    :data:`MAX_LISTED` rendered) and how many more there are."""
    more = [f"... and {count - MAX_LISTED} more"] if count > MAX_LISTED else []
    return "\n".join([f"{source}: {count} problem(s); nothing was {undone}", *listed, *more])


class EvalkitError(Exception):
    """Base class of every error evalkit raises on purpose."""


class ConfigError(EvalkitError):
    """A constant in eval.py, a command-line option or a selection is unusable."""


class NotFound(ConfigError):
    """What a command names (an experiment, a run id, a prefix of one) is not in the tracking
    store: a usage error, not a failure of the store."""


class DatasetInvalid(EvalkitError):
    """The golden dataset failed lint; carries every violation found."""

    def __init__(self, report: Findings) -> None:
        self.report = report
        super().__init__(f"{report.render()}\nThe dataset is invalid: no component was called "
                         "and no MLflow run was created.")


class ImportInvalid(EvalkitError):
    """A source with at least one problem: nothing of it was written."""

    def __init__(self, source: str, lines: list[str]) -> None:
        self.lines = tuple(lines)
        super().__init__(_refusal(source, len(lines), "written", lines[:MAX_LISTED]))


class LabelFileInvalid(EvalkitError):
    """A label file with at least one problem: nothing of it was imported."""

    def __init__(self, path: Path, shown: str, problems: tuple[FileProblem, ...]) -> None:
        """``shown``: ``path`` as the dataset wing names a file to a person."""
        self.path, self.problems = path, problems
        listed = [problem.render(path) for problem in problems[:MAX_LISTED]]
        super().__init__(_refusal(shown, len(problems), "imported", listed))


class RawResultsDamaged(EvalkitError):
    """A line before the last of a raw-results file is not a call record."""

    def __init__(self, source: str, line: int, reason: str) -> None:
        self.source, self.line, self.reason = source, line, reason
        super().__init__(f"{source}: line {line} is not a call record ({reason}); only a "
                         "last line cut mid-write is tolerated")


class ProviderError(EvalkitError):
    """The endpoint could not be reached, or kept failing after every retry."""


class TrackingError(EvalkitError):
    """MLflow could not be reached, or a run holds less than evalkit needs."""


class TrackingOffline(TrackingError):
    """The tracking server became unreachable mid-run; the run was saved as a local bundle."""

    def __init__(self, bundles: list[Path], tracking_uri: str) -> None:
        self.bundles = bundles
        shown = " ".join(shlex.quote(str(b)) for b in bundles)
        saved = ("the run is saved as a local bundle in" if len(bundles) == 1 else
                 f"its {len(bundles)} runs are saved as local bundles in")
        super().__init__(f"the tracking server at {tracking_uri} became unreachable during the "
                         f"run; nothing was lost: {saved} {shown}. Upload "
                         f"{'it' if len(bundles) == 1 else 'them'} once the server is back: "
                         f"evalkit sync {shown}")


class RunInterrupted(EvalkitError):
    """The run was stopped by SIGINT or SIGTERM; outputs already made were kept."""


class BudgetExhausted(RunInterrupted):
    """The run stopped because its next call would have taken its spending past
    ``MAX_COST_USD``; what was paid for is kept and ``--resume`` continues it."""


class OverBudget(EvalkitError):
    """The estimate of a run's cost (from the last run's usage) is above ``MAX_COST_USD``:
    the run was not started."""


class WorkerSetupError(EvalkitError):
    """The eval script could not be loaded on a Ray worker, or its setup hook raised.

    Raised in the worker's process, where Ray turns it into text (its traceback) for the
    driver, which reads the message back by this class's name: no process catches it by type.
    """
