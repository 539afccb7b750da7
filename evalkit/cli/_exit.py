"""Exit statuses of `eval.py` and the `evalkit` command: where each failure's status is chosen.

The library raises an error (:mod:`evalkit._errors`) and never ends the process; this table
says which status each error class ends it with, and :data:`EXIT_STATUSES` documents them all
in ``--help``.
"""

from __future__ import annotations

from enum import IntEnum

from evalkit._errors import (
    BudgetExhausted,
    ConfigError,
    DatasetInvalid,
    EvalkitError,
    ImportInvalid,
    LabelFileInvalid,
    OverBudget,
    RunInterrupted,
    TrackingOffline,
)


class ExitStatus(IntEnum):
    """Process exit statuses of `eval.py` and the `evalkit` command (documented in `--help`)."""

    OK = 0
    THRESHOLD_FAILED = 1
    """A metric is under its threshold; or ``evalkit compare --margin``: B is worse than A by
    more than the margin on some type."""
    USAGE = 2
    DATASET_INVALID = 3
    RUNTIME_FAILURE = 4
    INCONCLUSIVE = 5
    """The data cannot settle the question ``evalkit compare`` asks. Without ``--margin``: no
    type's gap clears the noise floor that replicates measured, and at least one is inside it
    (a type that clears it decides: 0; without a floor the gap is not gated: 0). With
    ``--margin`` (whose answer is then the status): on some type B - A's paired interval holds
    ``-margin``, and on none is B worse by more than it. Or a sequential run
    (``--sequential=population``) called every entry and a type's interval still straddles
    its threshold, none having failed."""
    TRACKING_OFFLINE = 6
    """The tracking server became unreachable mid-run; the run is saved as a local bundle."""
    BUDGET = 7
    """``MAX_COST_USD`` stopped the run (kept, resumable), or refused to start it because the
    estimate from the last run is above it. Not 130: an interrupt is someone's decision to
    stop, which CI reads as cancelled; a budget stop is the run's own, and a pipeline may
    want to resume it with a higher limit rather than run it again."""
    INTERRUPTED = 130


_STATUS_OF: dict[type[EvalkitError], ExitStatus] = {
    ConfigError: ExitStatus.USAGE,
    DatasetInvalid: ExitStatus.DATASET_INVALID,
    ImportInvalid: ExitStatus.DATASET_INVALID,
    LabelFileInvalid: ExitStatus.USAGE,
    TrackingOffline: ExitStatus.TRACKING_OFFLINE,
    BudgetExhausted: ExitStatus.BUDGET,
    OverBudget: ExitStatus.BUDGET,
    RunInterrupted: ExitStatus.INTERRUPTED,
}
"""The status of each error class (and of its subclasses) that does not end the process as a
runtime failure."""


def exit_status_of(error: EvalkitError) -> ExitStatus:
    """The status ``error`` ends the process with: its nearest class in the table, else a
    runtime failure."""
    for cls in type(error).__mro__:
        if cls in _STATUS_OF:
            return _STATUS_OF[cls]
    return ExitStatus.RUNTIME_FAILURE


EXIT_STATUSES = """\
exit status:
  0    every threshold of the run was met
  1    a metric is under its threshold (the reports say which); evalkit compare --margin
       (or a run --against a baseline): B is worse than A by more than the margin on some
       test type
  2    usage or configuration error (bad option, missing or misspelt constant in eval.py,
       a judge endpoint that refuses the key or the model, a tracking server that
       refuses the credentials or the permission on the experiment, a run that another
       process is evaluating or resuming, an experiment, run id or run id prefix that
       the tracking store does not hold, a run that did not finish given to compare,
       report or label, a refused rescore)
  3    the golden dataset is invalid (every violation is listed; nothing was run)
  4    runtime failure (MLflow or the judge endpoint unreachable, unexpected error)
  5    INCONCLUSIVE: evalkit compare refused to call a winner: no test type's gap clears
       the noise floor measured by replicates (a type that clears it decides: 0; without
       replicates the gap is shown, not gated: 0); with --margin, whose answer is then the
       status: on some type B - A's 95% paired interval holds -margin (and on none is B
       worse by more than it; B no worse on every type given a margin: 0); or a
       sequential run could not settle: every entry was called and a type's interval at
       SEQUENTIAL_CONFIDENCE still straddles its threshold (or, --against a baseline, its
       margin: only --sequential=population can end so; a failed type gives 1)
  6    the tracking server became unreachable mid-run: the run is saved as a local bundle
       (named in the message); upload it with evalkit sync BUNDLE
  7    stopped for budget: the next call would have taken the run's spending past
       MAX_COST_USD; the MLflow run is marked KILLED and tagged stopped_for=budget,
       outputs are kept, and the message says what was spent and gives the command
       that continues it; or refused before starting: the estimate from the last run
       is above MAX_COST_USD (--ignore-estimate starts it anyway)
  130  interrupted (SIGINT/SIGTERM, or the Ray cluster running the calls was lost): the
       MLflow run is marked KILLED, outputs are kept;
       the message gives the command that continues it (python eval.py --resume RUN_ID)
"""
"""The ``--help`` epilog of both commands."""
