"""What both command lines share: the exit statuses, error handling and logging setup."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Callable

from evalkit._errors import EvalkitError, ExitStatus

EXIT_STATUSES = """\
exit status:
  0    every threshold of the run was met
  1    a metric is under its threshold (the reports say which)
  2    usage or configuration error (bad option, missing or misspelt constant in eval.py,
       a judge endpoint that refuses the key or the model)
  3    the golden dataset is invalid (every violation is listed; nothing was run)
  4    runtime failure (MLflow or the judge endpoint unreachable, unexpected error)
  5    evalkit compare refused to call a winner (gap inside the noise, or no noise floor)
  6    the tracking server became unreachable mid-run: the run is saved as a local bundle
       (named in the message); upload it with evalkit sync BUNDLE
  130  interrupted (SIGINT/SIGTERM): the MLflow run is marked KILLED, outputs are kept;
       continue it with --resume RUN_ID
"""


def guarded(action: Callable[[], int]) -> int:
    try:
        return action()
    except EvalkitError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_status
    except Exception:
        traceback.print_exc()
        return ExitStatus.RUNTIME_FAILURE


def configure_logging() -> None:
    # This process is ours: keep third-party progress bars out of evalkit's plain output.
    for name, value in (("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"),
                        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
                        ("TRANSFORMERS_VERBOSITY", "error")):
        os.environ.setdefault(name, value)
    logger = logging.getLogger("evalkit")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("evalkit: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
