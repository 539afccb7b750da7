"""Tracking: MLflow as the store of every run.

:class:`Tracker` writes a run in batches (surviving a server outage as a local bundle), reads it
back whole as a :class:`~evalkit.records.RunRecord`, and uploads bundles; :func:`history` lists
an experiment's runs. Tracking stores and reads plain records; it knows nothing of scoring or
the loop.
"""

from evalkit.tracking._bundle import BUNDLES_DIR, RunJournal, unsynced_bundles
from evalkit.tracking._history import HistoryRow, history, render_history
from evalkit.tracking._links import run_url, shown_uri, ui_base
from evalkit.tracking._reader import build_record, journal_record
from evalkit.tracking._store import TrackingOffline
from evalkit.tracking._traces import Verdict, stability_verdict
from evalkit.tracking._tracker import Tracker, source_tags

__all__ = ["BUNDLES_DIR", "HistoryRow", "RunJournal", "Tracker", "TrackingOffline",
           "Verdict", "build_record", "history", "journal_record", "render_history", "run_url",
           "shown_uri", "source_tags", "stability_verdict", "ui_base", "unsynced_bundles"]
