"""Sequential runs in-process, tracked in memory: the stopping rule's bookkeeping (entries,
repeats, bias groups, several types; a settled type takes no more calls), the verdict with
three answers, and every refusal.

Each type's settling look is checked against a :class:`MeanSequence` fed by hand with the
units' outcomes in the order the run recorded; the component is a test double of the user's.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit import Call, ConfigError, Entry, RunContext, Selection, evaluate
from evalkit.cli._exit import EXIT_STATUSES, ExitStatus
from evalkit.evaluation import evaluate_calibration, evaluate_replicates
from evalkit.stats import MeanSequence, Scope
from evalkit.tracking import Tracker, history
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset
from tests.support.commands import eval_script

# 40 functional entries answered right, 30 repeatability entries answered differently at each
# repeat, 20 bias groups of two variants answered alike; every threshold 0.5.
ENTRIES = {
    **{f"f{i:02d}": entry("functional", input=f"q{i}") for i in range(40)},
    **{f"r{i:02d}": entry("repeatability", input=f"r{i}") for i in range(30)},
    **{f"b{i:02d}{v}": entry("bias", bias_group=f"g{i:02d}", input=f"variant {v} {i}")
       for i in range(20) for v in "xy"},
}


def _answers() -> RecordingComponent:
    return RecordingComponent({f"r{i:02d}": (lambda e, c: f"x{c.repeat}") for i in range(30)})


def _run(tmp_path: Path, tracker: Tracker, component: Any, question: str = "dataset",
         test_type: str = "all", entries: dict[str, Any] = ENTRIES, **constants: Any) -> Any:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", entries), **{
        "REPEAT_COUNT": 3, "MAX_CONCURRENCY": 1, "EVAL_MIN_ACCURACY_BIAS": 0.5, **constants})
    return evaluate(config, component, Selection.parse(test_type, sequential=question),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def _settles_at(outcomes: list[float], threshold: float = 0.5,
                scope: Scope = Scope.DATASET) -> int:
    sequence = MeanSequence(len(outcomes), threshold, scope=scope)
    for n, value in enumerate(outcomes, 1):
        if sequence.update(value).verdict.settled:
            return n
    return len(outcomes)


def test_each_type_takes_its_units_in_the_drawn_order_and_stops_once_settled(
        tmp_path: Path, tracker: Tracker) -> None:
    component = _answers()
    outcome = _run(tmp_path, tracker, component)
    settled = outcome.sequential
    order = list(settled.order)
    assert sorted(order) == sorted(ENTRIES)
    by_type = {t.test_type: t for t in settled.types}
    assert {t: (s.look.verdict, s.units) for t, s in by_type.items()} == {
        "functional": ("PASS", 40), "repeatability": ("FAIL", 30), "bias": ("PASS", 20)}

    # by hand: every functional and bias unit scores 1, every repeatability unit 0
    functional = [e for e in order if e.startswith("f")]
    repeats = [e for e in order if e.startswith("r")]
    groups = list(dict.fromkeys(e[:3] for e in order if e.startswith("b")))
    expected = {"functional": _settles_at([1.0] * 40), "repeatability": _settles_at([0.0] * 30),
                "bias": _settles_at([1.0] * 20)}
    assert {t: s.look.settled_at for t, s in by_type.items()} == expected
    assert all(n < units for n, units in zip(expected.values(), (40, 30, 20), strict=True))

    calls = component.count()
    # a settled type takes no more units: exactly its first n units were called
    assert sorted(e for e in calls if e.startswith("f")) == sorted(
        functional[:expected["functional"]])
    assert sorted(e for e in calls if e.startswith("r")) == sorted(
        repeats[:expected["repeatability"]])
    assert {e[:3] for e in calls if e.startswith("b")} == set(groups[:expected["bias"]])
    # an entry with its repeats, a bias group with all its variants, called together
    assert all(calls[e] == 3 for e in calls if e.startswith("r"))
    assert all(calls[e] == 1 and calls[e[:3] + ("y" if e[3] == "x" else "x")] == 1
               for e in calls if e.startswith("b"))
    # called in the drawn order: each entry's first call after every earlier entry's
    first_calls = list(dict.fromkeys(e for e, _ in component.calls))
    assert first_calls == [e for e in order if e in calls]

    made = sum(calls.values())
    assert (settled.calls_planned, settled.calls_made) == (40 + 30 * 3 + 40, made)
    assert settled.entries_called == len(calls) and settled.calls_saved == 170 - made
    assert settled.verdict == "FAIL" and outcome.type_verdict("repeatability") == "FAIL"
    assert outcome.failures == (
        f"repeatability: FAIL at look {expected['repeatability']} of 30, interval "
        f"[{by_type['repeatability'].look.low:.3f}, {by_type['repeatability'].look.high:.3f}]"
        " against min_accuracy 0.5",)
    # only what was called is scored
    assert {m.test_type: m.samples for m in outcome.metrics} == {
        "functional": expected["functional"], "repeatability": expected["repeatability"],
        "bias": expected["bias"]}

    stored = tracker.reader.stored(outcome.run_id)
    assert stored.tags["sequential"] == "dataset" and stored.tags["verdict"] == "FAIL"
    assert stored.metrics["sequential_calls_saved"] == 170 - made
    assert stored.metrics["repeatability_settled_at"] == expected["repeatability"]
    (row,) = history(tracker.reader, outcome.experiment_name)
    assert (row.shown_mode, row.to_json()["sequential"]) == ("sequential", "dataset")


def test_an_entry_of_a_settled_type_is_still_called_for_a_type_that_is_not(
        tmp_path: Path, tracker: Tracker) -> None:
    # every entry is functional and smoke, one in 20 wrong; smoke's threshold (0.2) is met
    # early, functional's (0.95) only once 19 right answers are in: entries go on being
    # called for functional after smoke has settled
    entries = {f"e{i:02d}": entry("functional", "smoke", input=f"q{i}") for i in range(20)}
    component = RecordingComponent({"e00": "x"})
    outcome = _run(tmp_path, tracker, component, test_type="all", entries=entries,
                   EVAL_MIN_ACCURACY_FUNCTIONAL=0.95, EVAL_MIN_ACCURACY_SMOKE=0.2)
    by_type = {t.test_type: t.look for t in outcome.sequential.types}
    assert by_type["smoke"].verdict == "PASS" and by_type["smoke"].settled_at < 19
    assert by_type["functional"].verdict == "PASS"
    assert by_type["functional"].settled_at >= 19
    assert sum(component.count().values()) == by_type["functional"].settled_at
    assert by_type["smoke"].n == by_type["smoke"].settled_at  # no unit taken once settled


def test_the_population_question_may_end_inconclusive_with_exit_status_5(
        tmp_path: Path, tracker: Tracker, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    # 17 in 20 right, threshold 0.8: the dataset's 0.85 passes; the population is undecided
    entries = {f"e{i:02d}": entry("functional", input=f"q{i}") for i in range(20)}
    wrong = {"e03", "e09", "e15"}
    dataset = write_dataset(tmp_path / "ds", entries)
    constants = {"EXPERIMENT_NAME": "seq/inconclusive", "DATASET_PATH": str(dataset),
                 "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.8,
                 "SEQUENTIAL": "population", "TRACE_CALLS": False}
    out = tmp_path / "out.json"

    def component(item: Entry, call: Call) -> str:
        return "x" if item.id in wrong else "a"
    status = eval_script(constants, component, "--type=functional", "--json", str(out))
    assert status == ExitStatus.INCONCLUSIVE == 5
    shown = capsys.readouterr().out
    assert ("INCONCLUSIVE: 0/1 types passed (not passed: functional); not settled after 20 "
            "of 20 entries (0 calls saved)") in shown
    assert "INCONCLUSIVE  functional_accuracy 0.850" in shown
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert (summary["verdict"], summary["exit_status"]) == ("INCONCLUSIVE", 5)
    assert summary["types"][0]["verdict"] == "INCONCLUSIVE"
    assert summary["sequential"]["types"][0]["scope"] == "population"
    assert "sequential run could not settle" in " ".join(EXIT_STATUSES.split())

    # the whole dataset's question settles the same entries (exactly, at the latest)
    status = eval_script({**constants, "SEQUENTIAL": "dataset"}, component,
                         "--type=functional")
    assert status == ExitStatus.OK


REFUSED = [
    ({"LABELS_PATH": "labels.csv"}, (), "cannot be used with LABELS_PATH or LABEL_SAMPLE"),
    ({"LABEL_SAMPLE": 5}, (), "cannot be used with LABELS_PATH or LABEL_SAMPLE"),
    ({"JUDGE_MODEL": "m", "SCORER": "llm_judge", "JUDGE_REPEATS": 3}, (),
     "cannot be used with JUDGE_REPEATS=3"),
    ({"EVAL_MIN_F1": 0.5}, (), "cannot be used with EVAL_MIN_F1 (set for functional, "
                               "repeatability): F1 is no mean of the entries"),
    # every conflict in one error, as the example's eval.py would meet them
    ({"LABEL_SAMPLE": 5, "EVAL_MIN_F1": 0.5}, (),
     "cannot be used with LABELS_PATH or LABEL_SAMPLE: a full run checks the threshold on "
     "the accuracy corrected by people's labels, which a sequence over the scorer's verdicts "
     "does not estimate. Remove LABELS_PATH and LABEL_SAMPLE; nor with EVAL_MIN_F1 (set for "
     "functional, repeatability): F1 is no mean of the entries, so no sequence settles it. "
     "Remove EVAL_MIN_F1 (for sequential runs), or run without sequential"),
    ({"EVAL_MIN_ACCURACY": 1.0, "SEQUENTIAL": "population"}, (),
     "cannot be used with the population's question and a min_accuracy of 1 (functional): "
     "no interval for a population reaches 1"),
    ({}, ("--replicates",), "cannot be used with --replicates"),
    ({"REPEAT_COUNT": 2}, ("--calibrate",), "cannot be used with --calibrate"),
    ({"SEQUENTIAL": "yes"}, (), "SEQUENTIAL='yes' must be False, True"),
    ({"SEQUENTIAL_CONFIDENCE": 1.0}, (), "SEQUENTIAL_CONFIDENCE=1.0 must be a number strictly"),
]


@pytest.mark.parametrize(("constants", "options", "message"), REFUSED)
def test_what_a_sequential_run_cannot_keep_valid_is_refused_before_any_call(
        tmp_path: Path, constants: dict[str, Any], options: tuple[str, ...], message: str,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # nothing may be asked
    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional", "repeatability")})
    script = {"EXPERIMENT_NAME": "seq/refused", "DATASET_PATH": str(dataset),
              "EVAL_MIN_ACCURACY": 0.5, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5,
              "REPEAT_COUNT": 2, "SEQUENTIAL": True, **constants}
    status = eval_script(script, _never_called, "--type=all", *options)
    err = " ".join(capsys.readouterr().err.split())
    assert status == ExitStatus.USAGE, err
    assert message in err
    if "SEQUENTIAL" not in message:
        assert "--sequential (or SEQUENTIAL in eval.py)" in err
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.parametrize(("options", "message"), [
    (("--resume", "abcd1234", "--sequential"), "takes the run's own --type, --groups and "
                                                "--human-review, and a sequential run's"),
    (("--type=all", "--sequential=everything"), "argument --sequential: invalid choice"),
])
def test_bad_sequential_options_are_usage_errors(
        tmp_path: Path, options: tuple[str, ...], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_script({}, _never_called, *options) == ExitStatus.USAGE
    assert message in capsys.readouterr().err


def test_a_library_caller_is_refused_the_modes_without_a_sequential_reading(
        tmp_path: Path, tracker: Tracker) -> None:
    config = config_for(tmp_path, write_dataset(tmp_path / "ds", {"e": entry("repeatability")}))
    selection = Selection.parse("all", sequential="dataset")
    context = RunContext(tracker=tracker, runs_dir=tmp_path / "runs")
    with pytest.raises(ConfigError, match="cannot be used with --replicates"):
        evaluate_replicates(config, _never_called, selection, context)
    with pytest.raises(ConfigError, match="cannot be used with --calibrate"):
        evaluate_calibration(config, _never_called, selection, context)
    with pytest.raises(ConfigError, match="--sequential='x' is not a question"):
        Selection.parse("all", sequential="x")


def _never_called(entry: Entry, call: Call) -> str:
    raise AssertionError("the component was called")


def test_a_units_value_is_its_accuracy_count_and_the_metrics_cover_the_entries_called(
        tmp_path: Path, tracker: Tracker) -> None:
    # two of four right, threshold 0.5: the whole dataset passes once both right ones are in
    entries = {f"e{i}": entry("functional", input=f"q{i}") for i in range(4)}
    component = RecordingComponent({"e1": "x", "e2": "x"})
    outcome = _run(tmp_path, tracker, component, test_type="functional", entries=entries)
    (m,) = outcome.metrics
    (t,) = outcome.sequential.types
    order = list(outcome.sequential.order)
    n = _settles_at([0.0 if e in ("e1", "e2") else 1.0 for e in order])
    assert t.look.verdict == "PASS" and t.look.settled_at == n
    assert list(dict.fromkeys(e for e, _ in component.calls)) == order[:n]
    assert (m.samples, m.accuracy) == (n, t.look.estimate) and t.look.low >= 0.5
    saved = f"{4 - n} call{'' if 4 - n == 1 else 's'} saved"  # the order, so n, is the run's
    assert outcome.sequential.text() == f"settled after {n} of 4 entries ({saved})"


def test_a_sequential_run_is_not_rescored(tmp_path: Path, tracker: Tracker) -> None:
    from evalkit.evaluation import rescore

    entries = {f"e{i}": entry("functional", input=f"q{i}") for i in range(4)}
    outcome = _run(tmp_path, tracker, RecordingComponent(), test_type="functional",
                   entries=entries)
    config = config_for(tmp_path, tmp_path / "ds")
    with pytest.raises(ConfigError, match=f"run {outcome.run_id} is a sequential run: it "
                                          "stopped calling once its verdicts were settled"):
        rescore(config, outcome.run_id, RunContext(tracker=tracker, runs_dir=tmp_path / "r"))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(right=st.lists(st.booleans(), min_size=3, max_size=24),
       threshold=st.sampled_from([0.3, 0.5, 0.7]),
       question=st.sampled_from(["dataset", "population"]),
       concurrency=st.sampled_from([1, 4]))
def test_the_calls_are_a_prefix_of_the_order_and_settle_where_the_sequence_does(
        tracker: Tracker, right: list[bool], threshold: float, question: str,
        concurrency: int) -> None:
    entries = {f"e{i:02d}": entry("functional", input=f"q{i}") for i in range(len(right))}
    answers = {f"e{i:02d}": ("a" if r else "x") for i, r in enumerate(right)}
    component = RecordingComponent(answers)
    with tempfile.TemporaryDirectory() as folder:
        outcome = _run(Path(folder), tracker, component, question, "functional", entries,
                       EVAL_MIN_ACCURACY=threshold, MAX_CONCURRENCY=concurrency)
    order = list(outcome.sequential.order)
    (t,) = outcome.sequential.types
    scope = Scope.DATASET if question == "dataset" else Scope.POPULATION
    k = _settles_at([1.0 if answers[e] == "a" else 0.0 for e in order], threshold, scope)
    called = list(dict.fromkeys(e for e, _ in component.calls))
    # started in the drawn order, none passed over while the type was open
    assert sorted(called) == sorted(order[:len(called)]) and len(called) >= k
    assert t.look.n == k  # the sequence took exactly the units up to its settling look
    if t.look.verdict.settled:
        assert t.look.settled_at == k
    if question == "dataset" and k == len(right):  # the last entry: the exact accuracy
        assert t.look.verdict == ("PASS" if sum(right) / len(right) >= threshold else "FAIL")
