"""The span writer process (see :mod:`evalkit.tracking._span_process`): reads pickled
``(phase, uri, args)`` requests on standard input, writes them, and answers each with
``("ok", None)`` or ``("error", message)`` until its input closes."""

from __future__ import annotations

import os
import pickle
import sys
from typing import IO

# Imported now, while the run's calls are made, rather than at the first batch.
import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
import mlflow.tracing.client  # noqa: F401

from evalkit.tracking._span_process import write_spans


def serve(inbox: IO[bytes], outbox: IO[bytes]) -> None:
    """One reply per request, until the pipe closes."""
    while True:
        try:
            phase, uri, args = pickle.load(inbox)
        except EOFError:
            return
        try:
            write_spans(phase, uri, *args)
            reply: tuple[str, str | None] = ("ok", None)
        except Exception as err:  # reported to the run, which warns and counts what is missing
            reply = ("error", f"{type(err).__name__}: {err}"[:500])
        pickle.dump(reply, outbox)
        outbox.flush()


if __name__ == "__main__":
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything MLflow prints goes to stderr, never into the replies
    serve(sys.stdin.buffer, replies)
