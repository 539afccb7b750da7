"""People's labels on a run: drawing the entries to label, giving labels, and what they change.

Two ways in, one path: ``evalkit label`` on a finished run (the terminal labeller, or a file
with ``--from``), and ``LABELS_PATH`` / ``LABEL_SAMPLE`` in eval.py, which draw and give the
labels a team keeps with its dataset to every run as it finishes. Either way a draw is
recorded on the run and the labels are feedback on its traces
(:class:`evalkit.tracking.RunLabels`), and the run's judge metrics are logged again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from evalkit._errors import ConfigError
from evalkit.dataset import BIAS, REPEATABILITY, Dataset, read_label_file
from evalkit.records import HumanLabel, ScoredRun, TypeNames, TypeResult, names
from evalkit.scorers import JudgePrompt
from evalkit.stats import (
    MIN_LABELS_PER_CLASS,
    JudgeCheck,
    LabelDraw,
    LabelDraws,
    draw_for_labels,
    judge_checks,
    judge_points,
    latest_labels,
)
from evalkit.tracking import (
    Assessment,
    RunLabels,
    TrackedRun,
    Tracker,
    label_assessment,
    wanted_assessment,
)

logger = logging.getLogger("evalkit")


def labellable_types(scored: ScoredRun) -> dict[str, TypeResult]:
    """The run's types whose items are single entries (a bias group is not labelled)."""
    return {r.test_type: r for r in scored.types
            if r.test_type != BIAS and all(len(i.entry_ids) == 1 for i in r.items)}


def draw_seed(run_id: str, test_type: str, seed: int | None = None) -> int:
    """The seed of a type's draw: given, or derived from the run id and the type, so that a
    run's draw is the same however often it is asked for."""
    if seed is not None:
        return seed
    return int.from_bytes(hashlib.sha256(f"{run_id}\0{test_type}".encode()).digest()[:4], "big")


def draw_entries(labels: RunLabels, run_id: str, result: TypeResult, sample: int,
                 seed: int | None = None) -> LabelDraw:
    """The type's draw: the one already recorded on the run, or a new one of ``sample``
    entries stratified by the scorer's verdict, recorded with a ``label_wanted`` assessment
    on each drawn trace. A recorded draw is never replaced: labels already given on it
    would lose their inclusion probabilities."""
    recorded = labels.draws().by_type.get(result.test_type)
    if recorded is not None:
        if sample and sample != len(recorded.drawn):
            raise ConfigError(
                f"run {run_id} already has a draw of {len(recorded.drawn)} "
                f"{result.test_type} entries; a draw is made once per run (its labels count "
                f"by their inclusion probabilities): label those, without --sample")
        return recorded
    verdicts = {i.id: i.passed for i in result.items}
    smallest = smallest_useful_draw(verdicts)
    if sample < smallest:
        raise ConfigError(
            f"--sample {sample}: a draw of fewer than {smallest} {result.test_type} entries "
            f"can never give a corrected accuracy (it needs {MIN_LABELS_PER_CLASS} labels "
            "among the scorer's passes and among its failures, or all of them), and a draw "
            f"is made once per run: draw at least {smallest}")
    draw = draw_for_labels(verdicts, sample, draw_seed(run_id, result.test_type, seed))
    labels.record_draw(result.test_type, draw)
    return draw


def smallest_useful_draw(verdicts: Mapping[str, bool]) -> int:
    """The smallest draw whose labels can give a corrected accuracy: ``MIN_LABELS_PER_CLASS``
    per scorer verdict, or all of a verdict's entries."""
    counts = [sum(v is h for v in verdicts.values()) for h in (True, False)]
    return sum(min(n, MIN_LABELS_PER_CLASS) for n in counts)


def label_order(draw: LabelDraw) -> list[str]:
    """Drawn entry ids, alternating the scorer's passes and failures, so that whatever
    prefix a reviewer labels before stopping holds both verdicts."""
    passes, failures = list(draw.of(True)), list(draw.of(False))
    order = []
    while passes or failures:
        for side in (failures, passes):
            if side:
                order.append(side.pop(0).entry_id)
    return order


def known_entries(dataset: Dataset) -> dict[str, list[str]]:
    """Test type -> the ids of the dataset's entries of that type (what a label may name)."""
    known: dict[str, list[str]] = {}
    for entry in dataset.entries:
        for test_type in entry.test_types:
            known.setdefault(test_type, []).append(entry.id)
    return known


def read_labels(path: Path, known: Mapping[str, Collection[str]],
                reviewer: str) -> tuple[HumanLabel, ...]:
    """A labels file (see :func:`evalkit.dataset.read_label_file`; ``reviewer`` for rows that
    name none): every bad row named, or none read."""
    return read_label_file(path, known, reviewer)


def give_labels(labels: RunLabels, scored: ScoredRun,
                given: Sequence[HumanLabel]) -> tuple[HumanLabel, ...]:
    """Write the labels that name an entry this run scored for that type (a file may label
    entries another selection of the dataset holds); returns those written."""
    fitting = fitting_labels(scored, given)
    labels.give(fitting)
    return fitting


def fitting_labels(scored: ScoredRun, given: Sequence[HumanLabel]) -> tuple[HumanLabel, ...]:
    """The labels that name an entry the run scored for that type."""
    scored_ids = {t: {i.id for i in r.items} for t, r in labellable_types(scored).items()}
    return tuple(x for x in given if x.entry_id in scored_ids.get(x.test_type, ()))


def label_new_run(run: TrackedRun, scored: ScoredRun, given: Sequence[HumanLabel],
                  sample: int) -> tuple[tuple[HumanLabel, ...], LabelDraws]:
    """At the end of a run: draw ``sample`` entries of each type that has labels in
    ``LABELS_PATH`` or an LLM judge, and give the file's labels on the entries this run
    scored. Returns the labels given and the draws."""
    types = labellable_types(scored)
    fitting = fitting_labels(scored, given)
    wanted = {x.test_type for x in fitting} | {t for t, r in types.items()
                                               if r.scorer == "llm_judge"}
    draws = LabelDraws({t: draw_for_labels({i.id: i.passed for i in r.items}, sample,
                                           draw_seed(run.id, t))
                        for t, r in types.items() if sample and t in wanted})
    for test_type, draw in draws.by_type.items():
        if len(draw.drawn) < smallest_useful_draw({i.id: i.passed for i in types[test_type].items}):
            logger.warning("LABEL_SAMPLE = %d is too small for a corrected %s accuracy: its "
                           "labels count in the agreement only", sample, test_type)
    by_entry: dict[str, list[Assessment]] = {}
    for test_type, draw in draws.by_type.items():
        for drawn in draw.drawn:
            by_entry.setdefault(drawn.entry_id, []).append(wanted_assessment(test_type, drawn))
    for label in fitting:
        by_entry.setdefault(label.entry_id, []).append(label_assessment(label))
    if draws.by_type:
        run.log_json(names.LABEL_DRAWS_ARTIFACT, draws.to_json())
        run.log(tags={names.LABEL_DRAWS_TAG: ",".join(sorted(draws.by_type))})
    if by_entry:
        run.traces.add_assessments(by_entry)
    return fitting, draws


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
        self.result = types[_chosen_type(self.run_id, types, test_type)]
        self.test_type = self.result.test_type
        self._tracker = tracker
        self.store = RunLabels(tracker.backend, reader.stored(self.run_id))
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

    def rubric(self) -> str:
        """What the scorer was asked: the run's params for it and, for an LLM judge, the
        system prompt of the prompt file the run names (when it can still be read)."""
        n = TypeNames.of(self.test_type)
        params = self.record.params
        said = "; ".join(f"{what} {params[key]}" for what, key in (
            ("scorer", n.scorer), ("judge prompt", n.judge_prompt),
            ("similarity threshold", n.similarity_threshold)) if key in params) or \
            f"scorer {self.result.scorer}"
        source = params.get(n.judge_prompt, "").split(" sha256:")[0]
        use = self.test_type if self.test_type == REPEATABILITY else "expected"
        try:  # the shipped prompt, or the user's file if it is still where the run found it
            prompt = JudgePrompt.load(use, None if source.startswith("evalkit/") else source)
        except (ConfigError, OSError):
            return said
        return f"{said}\n{prompt.system.strip()}" if source else said

    def give(self, labels: Sequence[HumanLabel]) -> None:
        self.store.give(labels)

    def finish(self) -> JudgeCheck:
        """The type's check with every label now given, its metrics logged to the run."""
        record = self._tracker.reader.fetch(self.run_id)
        check = judge_checks(record)[self.test_type]
        self.store.log(judge_points(check))
        return check


def _chosen_type(run_id: str, types: Mapping[str, TypeResult], wanted: str | None) -> str:
    if wanted is not None:
        if wanted not in types:
            raise ConfigError(f"run {run_id} has no {wanted!r} entries to label; its "
                              f"labellable types: {', '.join(types) or 'none'}")
        return wanted
    judged = [t for t, r in types.items() if r.scorer == "llm_judge"]
    if len(judged) == 1:
        return judged[0]
    raise ConfigError(f"name the type to label with --type, one of: {', '.join(types)}")


def import_labels(tracker: Tracker, reference: str, path: Path,
                  reviewer: str) -> tuple[int, dict[str, JudgeCheck]]:
    """Every label of a CSV or JSONL file given to a run, or none if any row is bad; returns
    how many were given and the checks of the types they label (their metrics logged)."""
    run_id = tracker.reader.resolve(reference)
    record = tracker.reader.fetch(run_id)
    if record.evaluation is None:
        raise ConfigError(f"run {run_id} is a {record.mode} run: it scored no entries")
    types = labellable_types(record.evaluation)
    labels = read_labels(path, {t: [i.id for i in r.items] for t, r in types.items()},
                         reviewer)
    store = RunLabels(tracker.backend, tracker.reader.stored(run_id))
    store.give(labels)
    checks = judge_checks(tracker.reader.fetch(run_id))
    labelled = {x.test_type for x in labels}
    store.log([p for t, c in checks.items() if t in labelled for p in judge_points(c)])
    return len(labels), {t: c for t, c in checks.items() if t in labelled}
