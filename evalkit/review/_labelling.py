"""People's labels on a run: which entries can be labelled, the draw, and the labels a run
is given as it finishes.

Two ways in, one path: ``evalkit label`` on a finished run (:mod:`._label_session`), and
``LABELS_PATH`` / ``LABEL_SAMPLE`` in eval.py, which draw and give the labels a team keeps
with its dataset to every run as it finishes. Either way a draw is recorded on the run and
the labels are feedback on its traces (:class:`evalkit.tracking.RunLabels`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from evalkit._errors import ConfigError
from evalkit.dataset import Dataset, read_label_file
from evalkit.records import HumanLabel, RunRecord, ScoredRun, TypeResult, names
from evalkit.reports import run_description
from evalkit.stats import (
    MIN_LABELS_PER_CLASS,
    LabelDraw,
    LabelDraws,
    Stratum,
    TypeMetrics,
    draw_for_labels,
    labels_missing,
)
from evalkit.tracking import (
    Assessment,
    RunLabels,
    TrackedRun,
    label_assessment,
    wanted_assessment,
)

logger = logging.getLogger("evalkit")


def labellable_types(scored: ScoredRun) -> dict[str, TypeResult]:
    """The run's types whose items are single entries (a bias group is not labelled)."""
    return {r.test_type: r for r in scored.types
            if r.per_entry}


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
    counts = list(verdicts.values())
    unlabelled = {h: Stratum(counts.count(h), ()) for h in (True, False)}
    return sum(labels_missing(unlabelled).values())


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


def description_tags(record: RunRecord, metrics: Sequence[TypeMetrics],
                     reports: Collection[str]) -> dict[str, str]:
    """The run's description (``metrics``, the names of its ``reports``) and the people's
    feedback its reports were rendered with: the tag is set once there was some (an absent
    one means none), so ``evalkit report`` knows when feedback given since changes them."""
    tags = {names.DESCRIPTION_TAG: run_description(metrics, list(reports))}
    if record.feedback_digest or names.FEEDBACK_DIGEST_TAG in record.tags:
        tags[names.FEEDBACK_DIGEST_TAG] = record.feedback_digest
    return tags
