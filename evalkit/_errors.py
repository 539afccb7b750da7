"""One exception hierarchy, and the exit status each failure maps to.

Every error evalkit raises on purpose derives from :class:`EvalkitError`, so a caller can catch
one class; each subclass carries the process exit status the CLI reports for it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Protocol


class Findings(Protocol):
    """What lint hands to :class:`DatasetInvalid`: every violation, rendered for a person."""

    def render(self) -> str: ...


class ExitStatus(IntEnum):
    """Process exit statuses of `eval.py` and the `evalkit` command (documented in `--help`)."""

    OK = 0
    THRESHOLD_FAILED = 1
    USAGE = 2
    DATASET_INVALID = 3
    RUNTIME_FAILURE = 4
    INCONCLUSIVE = 5
    """``evalkit compare`` refused to call a winner: no type's gap clears the noise floor
    that replicates measured, and at least one is inside it (a type that clears it decides:
    0; without a floor the gap is not gated: 0)."""
    TRACKING_OFFLINE = 6
    """The tracking server became unreachable mid-run; the run is saved as a local bundle."""
    INTERRUPTED = 130


class EvalkitError(Exception):
    """Base class of every error evalkit raises on purpose."""

    exit_status: ExitStatus = ExitStatus.RUNTIME_FAILURE


class ConfigError(EvalkitError):
    """A constant in eval.py, a command-line option or a selection is unusable."""

    exit_status = ExitStatus.USAGE


class NotFound(ConfigError):
    """What a command names (an experiment, a run id, a prefix of one) is not in the tracking
    store: a usage error, not a failure of the store."""


class DatasetInvalid(EvalkitError):
    """The golden dataset failed lint; carries every violation found."""

    exit_status = ExitStatus.DATASET_INVALID

    def __init__(self, report: Findings) -> None:
        self.report = report
        super().__init__(f"{report.render()}\nThe dataset is invalid: no component was called "
                         "and no MLflow run was created.")


class TrackingError(EvalkitError):
    """MLflow could not be reached, or a run holds less than evalkit needs."""


class RunInterrupted(EvalkitError):
    """The run was stopped by SIGINT or SIGTERM; outputs already made were kept."""

    exit_status = ExitStatus.INTERRUPTED
