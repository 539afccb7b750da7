"""One evaluation in one tracked run: its calls, its scores and metrics, its reports.

Data flows one way: plan -> calls (the call window) -> scores -> metrics -> the run in MLflow
-> reports rendered from what the run holds. Every output is on disk the moment it is made;
a stop or a crash ends the run (KILLED or FAILED, set by the :class:`TrackedRun` on exit)
with the raw results uploaded, from which ``resume`` continues it. The steps are separate so
that a mode can add to a run between them (calibration logs its document before the reports
are rendered).
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import time
from collections.abc import Collection, Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalkit._errors import BudgetExhausted, RunInterrupted
from evalkit.calls import (
    CallWindow,
    Component,
    EntryOutputs,
    ProgressCounter,
)
from evalkit.dataset import REPEATABILITY
from evalkit.evaluation._context import RunContext
from evalkit.evaluation._estimate import judge_calls_of
from evalkit.evaluation._outcome import EvaluationOutcome
from evalkit.evaluation._prepare import PreparedEvaluation, RunRole
from evalkit.evaluation._publishing import publish_reports
from evalkit.evaluation._scoring import EarlyJudging, score_run
from evalkit.evaluation._sequential import (
    SequentialGate,
    SequentialOutcome,
    sequential_points,
    sequential_seed,
)
from evalkit.evaluation._spending import Spending
from evalkit.evaluation._usage import usage_metrics
from evalkit.records import (
    CallRecord,
    HumanLabel,
    MetricPoint,
    RunUsage,
    ScoredRun,
    TypeNames,
    names,
    usd,
)
from evalkit.review import description_tags, label_new_run
from evalkit.stats import (
    JudgeCheck,
    LabelDraws,
    TypeMetrics,
    checks_for,
    corrected_metrics,
    latency_percentiles,
    logged_latency,
)
from evalkit.tracking import (
    MlflowSpanCapture,
    TrackedRun,
    call_trace,
    judge_points,
    shown_uri,
    spans_let_go,
    trace_id_for,
    type_points,
)

logger = logging.getLogger("evalkit")


def resume_command(script: str, run_id: str) -> str:
    """The command that continues run ``run_id``, to paste in the folder ``script`` (the path
    it was invoked by) ran from: ``python eval.py --resume ID`` for a script in that folder,
    else ``evalkit resume ID --script PATH``, which imports the script's neighbours as
    ``python`` would."""
    if Path(script).parent == Path("."):
        return f"python {shlex.quote(script)} --resume {run_id}"
    return f"evalkit resume {run_id} --script {shlex.quote(script)}"


@contextlib.contextmanager
def evaluation_in(opening: AbstractContextManager[TrackedRun], prepared: PreparedEvaluation,
                  component: Component, context: RunContext,
                  role: RunRole | None = None) -> Iterator[Evaluation]:
    """The skeleton of every mode: open the run (``opening``: a new run, one reopened, a
    replicate of a series), take the caller's stop requests while it is open, and carry the
    prepared evaluation in it. The run closes with the block: FINISHED, or KILLED or FAILED
    by what ended it."""
    with opening as run, context.stop.open_run():
        yield Evaluation(run, prepared, component, context, role)


class Evaluation:
    """A prepared evaluation carried out in ``run``, in the given role (alone by default)."""

    def __init__(self, run: TrackedRun, prepared: PreparedEvaluation, component: Component,
                 context: RunContext, role: RunRole | None = None) -> None:
        self.run = run
        self.prepared = prepared
        self.component = component
        self.context = context
        self.role = role or RunRole()
        self.timings: dict[str, float] = {}
        self._clock = time.perf_counter()
        self.outputs: list[EntryOutputs] = []
        self.scored = ScoredRun(())
        self.metrics: tuple[TypeMetrics, ...] = ()
        self.spending = Spending(prepared.config.max_cost_usd, prepared.config.token_prices,
                                 context.stop)
        """What this attempt at the run has spent, against ``MAX_COST_USD``."""
        self._judging = EarlyJudging(prepared.scorers, self.spending.add)
        """The judge's verdicts given while the calls run."""
        self.labels: tuple[HumanLabel, ...] = ()
        """People's labels given to the run as it finished (``LABELS_PATH``)."""
        self.draws = LabelDraws({})
        self.checks: dict[str, JudgeCheck] = {}
        self.sequential: SequentialOutcome | None = None
        """What a sequential run found (``None`` for a run that calls every entry)."""

    def complete(self) -> EvaluationOutcome:
        """Calls, scores, reports: the whole evaluation."""
        with self.stops_reported():
            self.make_calls()
            self.score()
            return self.publish()

    @contextlib.contextmanager
    def stops_reported(self) -> Iterator[None]:
        """A stop (or an interrupt) becomes a :class:`RunInterrupted` that says what was kept
        and how to go on."""
        try:
            yield
        except (RunInterrupted, KeyboardInterrupt):
            going_on = self.role.rerun or (
                f"continue it with: {resume_command(self.prepared.config.script, self.run.id)}")
            if self.spending.exhausted:
                raise self._budget_stop(going_on) from None
            raise RunInterrupted(
                f"interrupted: run {self.run.id} marked KILLED; every completed call is kept in "
                f"{self.run.raw.path} and in the run's artifacts; {going_on}") from None

    def _budget_stop(self, going_on: str) -> BudgetExhausted:
        """Tag the run stopped for budget, and say what was spent and how to go on."""
        spent, limit = self.spending.spent_usd, self.spending.limit_usd or 0.0
        self.run.log(tags={names.STOPPED_FOR_TAG: "budget",
                           names.BUDGET_SPENT_TAG: f"{spent:.6g} of {limit:.6g}"})
        return BudgetExhausted(
            f"stopped for budget: run {self.run.id} spent {usd(spent)} on "
            f"{self.spending.calls} calls against MAX_COST_USD = {limit:g} (no call started "
            f"after {usd(self.spending.stopped_at_usd or 0.0)}, when the next was expected to "
            "pass it; the calls then in flight were finished and kept); marked KILLED and "
            f"tagged {names.STOPPED_FOR_TAG}=budget; every completed call is kept in "
            f"{self.run.raw.path} and in the run's artifacts; {going_on} (a resume may "
            "spend up to MAX_COST_USD again: raise it in the script to allow more)")

    def make_calls(self) -> list[EntryOutputs]:
        """Every call the plan still needs (an earlier attempt's are reused), judging each
        entry as soon as its calls are in."""
        config = self.prepared.config
        plan = self.prepared.plan
        run = self.run
        recorded = run.recorded
        missing = {p.entry.id: sum((p.entry.id, r) not in recorded for r in range(p.calls))
                   for p in plan.items}
        outstanding = {entry_id: n for entry_id, n in missing.items() if n}
        # what the spending hears: the missing calls and the judgements given early
        self.spending.planned_calls = sum(missing.values()) + judge_calls_of(plan, config,
                                                                             bias=False)
        logger.info("MLflow run %s in experiment %s (%s); %d entries, %d calls%s; raw results: %s",
                    run.id, config.experiment_name, shown_uri(run.tracking_uri),
                    len(plan.items), sum(missing.values()),
                    " at most (sequential)" if plan.selection.sequential else "", run.raw.path)

        scorers = self.prepared.scorers
        run.register_prompts({p.registry_name: p.registry_template()
                              for p in scorers.judge_prompts.values()})
        self.prepared.record_source(run)
        run.log(tags={names.EXECUTOR_TAG: self.context.executor.where})
        scorers.reset_judge_stats()

        progress = ProgressCounter(outstanding, self.context.progress,
                                   retries=scorers.judge_retries)
        redact = self.prepared.redactor.value  # what traces show: redacted once per entry
        run.traces.begin({p.entry.id: (redact(p.entry.input), redact(p.entry.expected_output))
                          for p in plan.items}, outstanding)
        if scorers.judge is not None:
            logger.info("judging with %s, each entry as soon as its calls are in",
                        scorers.judge.model)

        def on_call(record: CallRecord) -> None:
            progress.call_done(record.entry_id, record.error is not None)
            run.traces.call(record)
            self.spending.add(record.usage)

        gate = self._sequential_gate()
        with MlflowSpanCapture() as capture:
            window = CallWindow.of(self.component, config.mock_adapters,
                                   self.prepared.redactor, self.context.executor, capture,
                                   concurrency=config.max_concurrency,
                                   call_timeout=config.call_timeout, stop=self.context.stop)
            try:
                self.outputs = window.run(plan, run.raw, seed=self.role.seed,
                                          replicate=self.role.replicate, recorded=recorded,
                                          on_call=on_call, follow_ups=None if gate else
                                          self._judging.follow_ups, sampling=gate)
            finally:
                progress.finish()
        if gate is not None:
            self.sequential = gate.outcome(sum(len(o.calls) for o in self.outputs))
            logger.info("sequential: %s", self.sequential.text())
        self._lap("calls")
        run.traces.calls_done([c for o in self.outputs for c in o.calls])
        return self.outputs

    def _sequential_gate(self) -> SequentialGate | None:
        """A sequential run's order and stopping rule, its seed tagged on the run."""
        prepared = self.prepared
        if prepared.selection.sequential is None:
            return None
        seed = sequential_seed(prepared.config.root_seed, self.run.id)
        self.run.log(tags={names.SEQUENTIAL_SEED_TAG: str(seed)})
        return SequentialGate(prepared, seed, self._judging, self._call_trace)

    def score(self) -> tuple[TypeMetrics, ...]:
        """Score the calls, check the scorers against people's labels, and log the scored
        items, the metrics and the verdict."""
        self._score_calls()
        self._lap("scoring")
        self.context.stop.raise_if_requested()
        self._log_scored_items()
        self._check_against_labels()
        self._log_verdict()
        self._lap("logging")
        return self.metrics

    def _score_calls(self) -> None:
        """The scorers' verdicts on the calls, and each type's metrics from them."""
        prepared = self.prepared
        # Judge errors can quote the provider; nothing leaves the run unredacted. What the
        # judge's requests make as spans (autologged) is let go, as in the window.
        with spans_let_go():
            scored = score_run(self.outputs, prepared.plan.types, prepared.scorers,
                               self._judging.verdicts, self.context.stop, self._call_trace)
        self.scored = ScoredRun.from_json(prepared.redactor.value(scored.to_json()))
        self.metrics = tuple(TypeMetrics.from_result(r, prepared.thresholds[r.test_type])
                             for r in self.scored.types)
        for result in self.scored.types:
            for skipped in result.skipped:
                logger.warning("bias group %r skipped: %s", skipped.bias_group, skipped.reason)

    def _call_trace(self, entry_id: str, call: CallRecord) -> Any:
        """MLflow's ``Trace`` of an entry's call, with the id of the entry's trace in this run
        (a rescore's calls are the source run's, its traces this run's)."""
        return call_trace(trace_id_for(self.run.id, entry_id), self.run.experiment_id, call)

    def _log_scored_items(self) -> None:
        """Every scored item, in the run's artifacts and on the entries' traces."""
        self.run.log_evaluation(self.scored)
        self.run.traces.finish(self.scored)

    def _check_against_labels(self) -> None:
        """Give the run people's labels (``LABELS_PATH``, ``LABEL_SAMPLE``), check each
        scorer against them, and correct the metrics by what the checks found."""
        prepared = self.prepared
        run = self.run
        if prepared.config.trace_calls and not run.offline:
            self.labels, self.draws = label_new_run(run, self.scored, prepared.labels,
                                                   prepared.config.label_sample)
        elif prepared.labels or prepared.config.label_sample:
            logger.warning("LABELS_PATH and LABEL_SAMPLE were not used: labels are feedback "
                           "on the entries' traces, and this run has none (%s)",
                           "the server went offline" if run.offline else "TRACE_CALLS = False")
        self.checks = checks_for(self.scored, self.labels, self.draws.by_type)
        self.metrics = corrected_metrics(self.metrics, self.checks)

    def _log_verdict(self) -> None:
        """The run's metrics and its verdict: PASS when every type met its threshold."""
        run = self.run
        verdict = "PASS" if all(m.passed for m in self.metrics) else "FAIL"
        if self.sequential is not None:
            verdict = self.sequential.verdict
            run.log_json(names.SEQUENTIAL_ARTIFACT, self.sequential.to_json())
        run.log(self._run_metrics(), {**names.verdict_tags(verdict, run.journal.run_name),
                                       names.RUN_URL_TAG: run.url})

    def publish(self, local: Collection[str] | None = None) -> EvaluationOutcome:
        """Render the reports from what the run holds, log them, write them to the reports
        folder (those named in ``local``, or all of them unless the run is a replicate's;
        see :mod:`evalkit.evaluation._publishing`), and describe the run."""
        self.context.stop.raise_if_requested()
        record = replace(self.run.record(), labels=self.labels)
        folder = self.prepared.config.reports_dir if self.role.local_reports or local else None
        reports = publish_reports(self.run, record, folder, local)
        self.run.log(tags=description_tags(record, self.metrics, reports.names))
        self._lap("reports")
        return EvaluationOutcome(
            self.run.id, self.prepared.config.experiment_name, self.run.tracking_uri,
            self.metrics, self.scored, reports.written, self.run.raw.path, self.run.url,
            dict(self.timings), dict(self.checks), RunUsage.from_metrics(record.metrics),
            self.sequential)

    def _lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.timings[phase] = now - self._clock
        self._clock = now

    def _run_metrics(self) -> list[MetricPoint]:
        plan = self.prepared.plan
        scored = self.scored
        typed = [p for m in self.metrics for p in type_points(m)]
        accuracies = {TypeNames.of(m.test_type).accuracy for m in self.metrics}
        # first: MLflow's run lists show metric columns in the order they were logged
        points = [p for p in typed if p.key in accuracies]
        # the entries called: a sequential run's never called are no part of its figures
        points += [MetricPoint(names.ENTRIES_METRIC, len(self.outputs)),
                  MetricPoint(names.CALLS_METRIC, scored.calls),
                  MetricPoint(names.COMPONENT_ERRORS_METRIC, scored.component_errors)]
        if REPEATABILITY in plan.types:
            points.append(MetricPoint(names.REPEAT_COUNT_METRIC,
                                      self.prepared.config.require_repeat_count()))
        latencies = [c.latency_ms for o in self.outputs for c in o.calls]
        points += [MetricPoint(names.call_latency_metric(name), logged_latency(value))
                   for name, value in latency_percentiles(latencies).items()]
        points += [MetricPoint(key, value) for key, value in
                   self.prepared.scorers.judge_metrics(scored).items()]
        points += usage_metrics([c for o in self.outputs for c in o.calls], scored,
                                self.prepared.config.token_prices)
        points += [p for p in typed if p.key not in accuracies]
        for check in self.checks.values():
            points += judge_points(check)
        if self.sequential is not None:
            points += sequential_points(self.sequential)
        return points
