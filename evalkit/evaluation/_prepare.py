"""Everything checked before a run exists: the dataset, the constants against the selection,
the scorers and the judge endpoint; and the run's identity in MLflow (params, tags, name)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from evalkit._distribution import VERSION
from evalkit._errors import ConfigError, DatasetInvalid
from evalkit._secrets import Redactor
from evalkit.calls import RunPlan, Selection, plan_run
from evalkit.config import EvalConfig, prompt_sha256
from evalkit.dataset import Dataset, load_dataset, require_trajectories
from evalkit.evaluation._against import Baseline, plan_against
from evalkit.evaluation._scorers import Scorers
from evalkit.records import HumanLabel, Threshold, TypeNames, names, threshold_params
from evalkit.review import known_entries, read_labels
from evalkit.tracking import SourceState, TrackedRun, source_state, spans_let_go


@dataclass(frozen=True)
class RunRole:
    """How a run sits among others: a replicate of a series, a calibration run, or alone."""

    tags: Mapping[str, str] = field(default_factory=dict)
    name_prefix: str = ""
    """What tells the run apart from its siblings: a replicate's whole name (``r0``, nested
    under its series), or what leads a calibration run's (``calib ``)."""
    seed: int | None = None
    """Handed to the component as ``call.seed``."""
    replicate: int | None = None
    local_reports: bool = True
    """Write the reports to the reports folder too (always logged to MLflow)."""
    rerun: str | None = None
    """How to go on after a stop when the run cannot be resumed (a replicate, a calibration
    run); ``None`` for a run that ``--resume`` finishes."""


@dataclass(frozen=True)
class PreparedEvaluation:
    """An evaluation checked and ready to call the component: nothing below fails on input."""

    config: EvalConfig
    selection: Selection
    dataset: Dataset
    plan: RunPlan
    thresholds: Mapping[str, Threshold]
    scorers: Scorers
    redactor: Redactor
    labels: tuple[HumanLabel, ...] = ()
    """People's labels from ``LABELS_PATH``, read and checked before any call."""
    source: SourceState = field(default_factory=lambda: SourceState({}))
    """What defines the component as the files tell (git commit, uncommitted diff, hashes)."""
    baseline: Baseline | None = None
    """The recorded run a sequential run is compared with (``--against``)."""

    def params(self) -> dict[str, str]:
        """The run's MLflow params: the constants, the dataset identity, per-type settings."""
        config = self.config
        params = {**config.params(), names.DATASET_DIGEST_PARAM: self.dataset.digest,
                  names.DATASET_ENTRIES_PARAM: str(len(self.dataset.entries))}
        for test_type in self.plan.types:
            params.update(threshold_params(test_type, self.thresholds[test_type]))
            if config.scorer_for(test_type) == "semantic_similarity":
                params[TypeNames.of(test_type).similarity_threshold] = repr(
                    config.similarity_threshold_for(test_type))
        params.update(self.scorers.scorer_params())
        params[names.MAX_CONCURRENCY_PARAM] = str(config.max_concurrency)
        params.update(self.scorers.judge_params())
        return {k: self.redactor.text(v) for k, v in params.items()}

    def tags(self) -> dict[str, str]:
        selection = self.selection
        tags = {names.TEST_TYPES_TAG: ",".join(self.plan.types),
                names.GROUPS_FILTER_TAG: selection.groups_filter,
                names.EVAL_TYPE_TAG: selection.test_type,
                names.HUMAN_REVIEW_ONLY_TAG: str(selection.human_review_only).lower(),
                names.VERSION_TAG: VERSION, **self.source.tags}
        if selection.sequential is not None:
            tags[names.SEQUENTIAL_TAG] = selection.sequential
        if self.baseline is not None:
            tags.update(self.baseline.tags())
        return {k: self.redactor.text(v) for k, v in tags.items()}

    def component_prompts(self) -> dict[str, tuple[str, str]]:
        """``COMPONENT_PROMPTS``, key -> (its name in MLflow's prompt registry, its redacted
        text); the name is ``<component>-<key>``, the component being EXPERIMENT_NAME's first
        half."""
        component = re.sub(r"[^A-Za-z0-9_-]", "-", self.config.experiment_name.split("/")[0])
        return {key: (f"{component}-{key}", self.redactor.text(text))
                for key, text in sorted(self.config.component_prompts.items())}

    def record_source(self, run: TrackedRun) -> None:
        """Log what the tags only hash: the uncommitted diff (redacted) and the component's
        prompts; register those prompts (a new version only when one changed) and link them
        to the run."""
        if self.source.diff:
            run.log_text(names.CODE_DIFF_ARTIFACT, self.redactor.text(self.source.diff))
        prompts = self.component_prompts()
        if prompts:
            run.log_json(names.COMPONENT_PROMPTS_ARTIFACT, {
                key: {"name": name, "sha256": prompt_sha256(text), "template": text}
                for key, (name, text) in prompts.items()})
            run.register_prompts(dict(prompts.values()))

    def run_name(self, prefix: str = "") -> str:
        """Short, so that MLflow's run lists show it whole once the verdict heads it (the
        date is there to tell runs apart at a glance; the lists show the start time too)."""
        return f"{prefix}{self.selection.test_type} {datetime.now(UTC):%m-%d %H:%M}"


def dataset_of(config: EvalConfig) -> Dataset:
    """The script's dataset, linted; when it is invalid, the constants' problems are raised
    first (a wrong ``DATASET_PATH`` is one of them)."""
    try:
        return load_dataset(config.dataset_path)
    except DatasetInvalid:
        config.check_types(())
        raise


def prepare(config: EvalConfig, selection: Selection, baseline: Baseline | None = None
            ) -> PreparedEvaluation:
    """Lint the dataset and check the constants against the selection, before any run exists.
    With a ``baseline`` (``--against``), the plan keeps what the baseline has an item for.

    Raises :class:`DatasetInvalid` or :class:`ConfigError`; every problem with the
    constants, those of the selected types included, in one :class:`ConfigError`."""
    dataset = dataset_of(config)
    plan = plan_run(dataset, selection, config)
    if baseline is not None:
        plan = plan_against(plan, baseline, config.script)
    refuse_sequential(config, plan, against=baseline is not None)
    require_trajectories(dataset, [(p.entry, t) for p in plan.items for t in p.types
                                   if config.scorer_for(t) == "trajectory"])
    thresholds = {t: config.threshold_for(t) for t in plan.types}
    scorers = Scorers.for_run(config, plan.types)
    if scorers.judge is not None:
        # seconds, not hundreds of paid calls, to find a bad key; what it traces is let go
        with spans_let_go():
            scorers.judge.preflight()
    labels = () if config.labels_path is None else read_labels(
        config.labels_path, known_entries(dataset), reviewer=str(config.labels_path))
    return PreparedEvaluation(
        config=config, selection=selection, dataset=dataset, plan=plan, thresholds=thresholds,
        scorers=scorers, redactor=Redactor.from_environment(), labels=labels,
        source=source_state(config.script, config.source_file), baseline=baseline)


_SEQUENTIAL = "--sequential (or SEQUENTIAL in eval.py)"


def with_sequential(config: EvalConfig, selection: Selection) -> Selection:
    """The selection a run makes: ``SEQUENTIAL``'s question unless ``--sequential`` names
    one."""
    if selection.sequential is None and config.sequential is not None:
        return replace(selection, sequential=config.sequential)
    return selection


def refuse_sequential_mode(config: EvalConfig, selection: Selection, mode: str) -> None:
    """Refuse a sequential selection in a mode other than one run (``--replicates``,
    ``--calibrate``), before anything is prepared."""
    if selection.sequential is None and config.sequential is None:
        return
    why = ("replicates measure the spread of whole runs, and runs stopped at different looks "
           "have no common spread to measure" if mode == "--replicates" else
           "calibration measures repeatability over every repeatability entry and gates "
           "nothing, so there is nothing to settle")
    raise ConfigError(f"{config.script}: {_SEQUENTIAL} cannot be used with {mode}: {why}. "
                      f"Run {mode} without --sequential and with SEQUENTIAL = False")


def refuse_sequential(config: EvalConfig, plan: RunPlan, against: bool = False) -> None:
    """Refuse, before any call (and before the judge is asked anything), what a sequential
    run cannot keep valid: people's labels, a judge asked more than once, an F1 threshold
    (except ``against`` a baseline, where no threshold is checked); every one found, in one
    error."""
    if plan.selection.sequential is None:
        return
    reasons = []
    if config.labels_path is not None or config.label_sample:
        reasons.append(
            "LABELS_PATH or LABEL_SAMPLE: a full run checks the threshold on the accuracy "
            "corrected by people's labels, which a sequence over the scorer's verdicts does "
            "not estimate. Remove LABELS_PATH and LABEL_SAMPLE")
    if config.judge is not None and config.judge.repeats > 1:
        reasons.append(
            f"JUDGE_REPEATS={config.judge.repeats}: the sequence would settle on the majority "
            "of a judge whose votes disagree, and measuring that disagreement needs the judge "
            "asked about every entry. Set JUDGE_REPEATS = 1")
    with_f1 = [t for t in plan.types if config.threshold_for(t).min_f1 is not None]
    if with_f1 and not against:
        reasons.append(
            f"EVAL_MIN_F1 (set for {', '.join(with_f1)}): F1 is no mean of the entries, so no "
            "sequence settles it. Remove EVAL_MIN_F1")
    perfect = [t for t in plan.types if config.threshold_for(t).min_accuracy >= 1]
    if perfect and plan.selection.sequential == "population" and not against:
        reasons.append(
            f"the population's question and a min_accuracy of 1 ({', '.join(perfect)}): no "
            "interval for a population reaches 1, so such a type could end FAIL or "
            "INCONCLUSIVE but never PASS, after every entry. Ask the dataset's question "
            "(--sequential=dataset), which settles every entry passing exactly")
    if reasons:
        mode = "--against" if against else _SEQUENTIAL
        raise ConfigError(
            f"{config.script}: {mode} cannot be used with "
            + "; nor with ".join(reasons)
            + (" (for sequential runs), or run without sequential" if not against
               else " (for runs against a baseline), or run without --against"))
