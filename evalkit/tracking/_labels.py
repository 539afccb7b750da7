"""People's labels on a finished run, in MLflow: the draw of entries to label and each label.

A label is feedback on the entry's trace (source ``HUMAN``, the reviewer as its source id,
named ``<type>_label``, value True for pass), exactly what a person adding feedback in the
MLflow UI writes, so labels from the UI, from ``evalkit label`` and from a file are one kind.
A draw is the ``labels/draws.json`` artifact (its types in the run's ``evalkit.label_draws``
tag) and a ``label_wanted`` assessment on each drawn trace, so a reviewer in the UI finds
the drawn entries as the terminal labeller does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from evalkit._errors import ConfigError
from evalkit.records import HumanLabel, MetricPoint, TypeNames, labels_in, names
from evalkit.stats import DrawnEntry, LabelDraw, LabelDraws
from evalkit.tracking._backend import Backend, StoredRun, people_feedback
from evalkit.tracking._journal import LoggedPoint
from evalkit.tracking._traces import Assessment, TraceContext, trace_id_for


class RunLabels:
    """Writes labels and draws to one run of a :class:`Backend`."""

    def __init__(self, backend: Backend, run: StoredRun) -> None:
        self._backend = backend
        self._run = run
        self._context = TraceContext(run.run_id, run.experiment_id, run.start_time_ms,
                                   run.params, run.tags)
        self._traces: set[str] | None = None

    def _on_traces(self, entry_ids: Sequence[str]) -> list[str]:
        """The trace ids of the entries, each checked to be in the store."""
        if self._traces is None:
            self._traces = set(self._backend.trace_store().assessment_names(self._context))
        ids = [trace_id_for(self._run.run_id, e) for e in entry_ids]
        missing = [e for e, t in zip(entry_ids, ids, strict=True) if t not in self._traces]
        if missing:
            raise ConfigError(
                f"run {self._run.run_id} has no trace for {', '.join(missing[:3])}"
                f"{' and more' if len(missing) > 3 else ''}: labels are feedback on an "
                "entry's trace; a run made with TRACE_CALLS = False has none (evaluate again "
                "with traces)")
        return ids

    def given(self, types: Sequence[str]) -> tuple[HumanLabel, ...]:
        """Every label people gave on the run's entries for ``types``."""
        return labels_in(people_feedback(self._backend, self._run.experiment_id,
                                         self._run.run_id), types)

    def give(self, labels: Sequence[HumanLabel]) -> None:
        """Each label as HUMAN feedback on its entry's trace."""
        traces = self._on_traces([label.entry_id for label in labels])
        self._backend.trace_store().add_assessments(self._context, [
            (trace, label_assessment(label)) for trace, label in zip(traces, labels,
                                                                      strict=True)])

    def publish(self, points: Sequence[MetricPoint], tags: Mapping[str, str],
                reports: Mapping[str, str]) -> None:
        """What labels changed, logged to the finished run: metrics (the judge's figures),
        tags (the verdict, the description) and reports (name -> markdown, replacing the
        run's own). A store that refuses this user the edit is a :class:`ConfigError` naming
        the fix."""
        now = int(time.time() * 1000)
        try:  # the reports first: the tags say what they were rendered with once they are in
            for name, text in reports.items():
                self._backend.log_artifact(self._run.run_id, names.report_artifact(name),
                                           text.encode("utf-8"))
            self._backend.log_batch(self._run.run_id, metrics=[
                LoggedPoint(p.key, float(p.value), p.step, now) for p in points], tags=tags)
        except Exception as err:
            refused = self._backend.refusal(err, None, "EDIT")
            if refused is None:
                raise
            raise refused from None

    def check_traces(self, entry_ids: Sequence[str]) -> None:
        """Fail before anything is shown or written when the entries have no traces."""
        self._on_traces(entry_ids)

    def draws(self) -> LabelDraws:
        """The draws recorded on the run so far."""
        if names.LABEL_DRAWS_TAG not in self._run.tags:
            return LabelDraws({})
        return LabelDraws.from_json(json.loads(self._backend.artifact(
            self._run.run_id, names.LABEL_DRAWS_ARTIFACT)))

    def record_draw(self, test_type: str, draw: LabelDraw) -> LabelDraws:
        """Add ``test_type``'s draw to the run's draws and ask for a label on each drawn
        trace."""
        traces = self._on_traces([d.entry_id for d in draw.drawn])
        draws = LabelDraws({**self.draws().by_type, test_type: draw})
        self._backend.log_artifact(self._run.run_id, names.LABEL_DRAWS_ARTIFACT,
                                   json.dumps(draws.to_json(), indent=1).encode())
        tags = {names.LABEL_DRAWS_TAG: ",".join(sorted(draws.by_type))}
        self._backend.log_batch(self._run.run_id, tags=tags)
        self._run = StoredRun(**{**vars(self._run), "tags": {**self._run.tags, **tags}})
        self._backend.trace_store().add_assessments(self._context, [
            (trace, wanted_assessment(test_type, d))
            for trace, d in zip(traces, draw.drawn, strict=True)])
        return draws


def label_assessment(label: HumanLabel) -> Assessment:
    """A label as the feedback a person adds in the MLflow UI."""
    return Assessment(TypeNames.of(label.test_type).label, label.passed, label.comment,
                      "HUMAN", label.reviewer)


def wanted_assessment(test_type: str, drawn: DrawnEntry) -> Assessment:
    """What a drawn entry's trace shows until it has a label: the name of the feedback
    wanted (its value, the column the traces table shows) and how to give it in the UI."""
    label = TypeNames.of(test_type).label
    return Assessment(
        names.LABEL_WANTED_ASSESSMENT, label,
        f"drawn at random for a {test_type} label (inclusion probability "
        f"{drawn.inclusion_probability:.3g}): Add feedback named {label!r} (not "
        f"{test_type!r}: that is the scorer's verdict), data type Boolean, True for pass or "
        "False for fail", "CODE", names.code_source("labels"))
