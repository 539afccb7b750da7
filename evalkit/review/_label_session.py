"""``evalkit label`` on a finished run: one person labelling one type, or a file of labels, and
what the labels change (the judge's figures and, through the corrected accuracy, the verdict).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalkit._errors import ConfigError
from evalkit.config import prompt_use
from evalkit.dataset import BIAS, REPEATABILITY
from evalkit.records import (
    HumanLabel,
    RunRecord,
    TypeNames,
    TypeResult,
    names,
)
from evalkit.reports import recorded_metrics, render_reports
from evalkit.review._labelling import (
    description_tags,
    draw_entries,
    label_order,
    labellable_types,
    read_labels,
)
from evalkit.scorers import JudgePrompt
from evalkit.stats import (
    JudgeCheck,
    LabelDraws,
    check_judge,
    corrected_metrics,
    judge_checks,
    latest_labels,
)
from evalkit.tracking import RunLabels, Tracker, judge_points

_QUESTION = {
    REPEATABILITY: "Do these outputs of one input agree with each other (the same answer "
                   "each time, wording aside)? Pass if they do, fail if they do not.",
}
_CORRECT = ("Is the output a right answer to the input (expected_output shows the answer "
            "wanted)? Pass if it is, fail if it is not.")


@dataclass(frozen=True)
class LabelOutcome:
    """What labels changed on a run: each labelled type's check and the run's verdict."""

    checks: Mapping[str, JudgeCheck]
    verdict_before: str | None
    verdict: str
    failures: tuple[str, ...]
    """Why the run misses its thresholds now, corrected accuracies included."""


class LabelSession:
    """One person labelling one test type of a finished run (``evalkit label``)."""

    def __init__(self, tracker: Tracker, reference: str, test_type: str | None,
                 sample: int = 0, seed: int | None = None) -> None:
        reader = tracker.reader
        self.run_id = reader.resolve(reference)
        self.record = reader.fetch(self.run_id)
        if self.record.evaluation is None:
            raise ConfigError(f"run {self.run_id} is a {self.record.mode} run: it scored no "
                              "entries; label an evaluation run")
        types = labellable_types(self.record.evaluation)
        self.result = types[_chosen_type(self.record, types, test_type)]
        self.test_type = self.result.test_type
        self._tracker = tracker
        self.store = RunLabels(tracker.backend, reader.stored(self.run_id))
        self.store.check_traces([i.id for i in self.result.items])
        self.draw = (draw_entries(self.store, self.run_id, self.result, sample, seed)
                     if sample or self.test_type in self.store.draws().by_type else None)

    @property
    def order(self) -> list[str]:
        """The entries to label: the drawn ones (alternating the scorer's verdicts), or,
        without a draw, every entry of the type (their labels count by choice)."""
        return label_order(self.draw) if self.draw else [i.id for i in self.result.items]

    def given_by(self, reviewer: str) -> dict[str, bool]:
        """Entry id -> the reviewer's latest label on this type."""
        mine = [x for x in self.store.given([self.test_type]) if x.reviewer == reviewer]
        return {e: x.passed for e, x in latest_labels(mine, self.test_type).items()}

    def labelled_by_others(self, reviewer: str) -> dict[str, str]:
        """Entry id -> who else labelled it last, among the entries to label: a new label
        replaces theirs (the latest label of an entry counts)."""
        latest = latest_labels(self.store.given([self.test_type]), self.test_type)
        wanted = set(self.order)
        return {e: x.reviewer for e, x in latest.items() if e in wanted and x.reviewer != reviewer}

    def rubric(self) -> str:
        """The question a person answers, and what the scorer was asked: the run's params
        for it and, for an LLM judge, the system prompt of the prompt file the run names
        (when it can still be read)."""
        n = TypeNames.of(self.test_type)
        params = self.record.params
        said = "; ".join(f"{what} {params[key]}" for what, key in (
            ("scorer", n.scorer), ("judge prompt", n.judge_prompt),
            ("similarity threshold", n.similarity_threshold)) if key in params) or \
            f"scorer {self.result.scorer}"
        said = f"{_QUESTION.get(self.test_type, _CORRECT)}\n{said}"
        source = params.get(n.judge_prompt, "").split(" sha256:")[0]
        if not source:
            return said
        use = prompt_use(self.test_type)
        try:  # the shipped prompt, or the user's file if it is still where the run found it
            prompt = JudgePrompt.load(use, None if source.startswith("evalkit/") else source)
        except (ConfigError, OSError):
            return said
        return f"{said}\n{prompt.system.strip()}"

    def give(self, labels: Sequence[HumanLabel]) -> None:
        self.store.give(labels)

    def finish(self) -> LabelOutcome:
        """The type's check with every label now given; its figures and the run's verdict
        logged to the run."""
        return after_labels(self.store, self._tracker.reader.fetch(self.run_id),
                            [self.test_type])


def import_labels(tracker: Tracker, reference: str, path: Path,
                  reviewer: str) -> tuple[int, LabelOutcome]:
    """Every label of a CSV or JSONL file given to a run, or none if any row is bad; returns
    how many were given and what they changed."""
    run_id = tracker.reader.resolve(reference)
    record = tracker.reader.fetch(run_id)
    if record.evaluation is None:
        raise ConfigError(f"run {run_id} is a {record.mode} run: it scored no entries; "
                          "label an evaluation run")
    types = labellable_types(record.evaluation)
    labels = read_labels(path, {t: [i.id for i in r.items] for t, r in types.items()},
                         reviewer)
    store = RunLabels(tracker.backend, tracker.reader.stored(run_id))
    store.give(labels)
    return len(labels), after_labels(store, tracker.reader.fetch(run_id),
                                     list(dict.fromkeys(x.test_type for x in labels)))


def after_labels(store: RunLabels, record: RunRecord, types: Collection[str]) -> LabelOutcome:
    """Re-measure ``types`` with every label ``record`` (the run read back after them) holds
    and bring the run in MLflow up to date with them: the types' figures, the verdict (and
    the run's name it heads), the description and every report, ``summary.md`` first,
    rendered as ``evalkit report`` renders them."""
    assert record.evaluation is not None
    checks = judge_checks(record)
    doc = record.label_draws
    draws = LabelDraws.from_json(doc).by_type if doc else {}
    mine = {t: checks.get(t) or check_judge(record.evaluation.type_result(t), record.labels,
                                            draws.get(t)) for t in types}
    metrics = corrected_metrics(recorded_metrics(record), checks)
    verdict = "PASS" if all(m.passed for m in metrics) else "FAIL"
    reports = render_reports(record)
    store.publish([p for c in mine.values() for p in judge_points(c)], {
        **names.verdict_tags(verdict, record.run_name),
        **description_tags(record, metrics, reports)}, reports)
    return LabelOutcome(mine, record.tags.get(names.VERDICT_TAG), verdict,
                        tuple(f for m in metrics for f in m.failures))


def feedback_taken_in(tracker: Tracker, record: RunRecord) -> LabelOutcome | None:
    """When people's feedback on ``record``'s run changed since its reports were rendered
    (labels or reviewers' verdicts added in the MLflow UI), the run brought up to date with
    it (see :func:`after_labels`); ``None`` when nothing changed, or the run scored no
    entries."""
    if record.evaluation is None or record.feedback_digest == record.tags.get(
            names.FEEDBACK_DIGEST_TAG, ""):
        return None
    store = RunLabels(tracker.backend, tracker.reader.stored(record.run_id))
    return after_labels(store, record, list(judge_checks(record)))


def _chosen_type(record: RunRecord, types: Mapping[str, TypeResult], wanted: str | None) -> str:
    if wanted is not None:
        if wanted == BIAS and record.evaluation is not None and any(
                r.test_type == BIAS for r in record.evaluation.types):
            raise ConfigError("bias is scored per group of entries, and a group is not "
                              f"labelled: label another type ({', '.join(types)})")
        if wanted not in types:
            raise ConfigError(f"run {record.run_id} has no {wanted!r} entries to label; its "
                              f"labellable types: {', '.join(types) or 'none'}")
        return wanted
    judged = [t for t, r in types.items() if r.scorer == "llm_judge"]
    if len(judged) == 1:
        return judged[0]
    raise ConfigError(f"name the type to label with --type, one of: {', '.join(types)}")
