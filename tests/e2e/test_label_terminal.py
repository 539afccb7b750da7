"""``evalkit label`` end to end, in a real terminal: a fresh run of the example (functional
only, with the labels and the draw its eval.py would give taken out), a first session that
draws 10 entries and labels two of them with single key presses, a second session that reuses
the draw, resumes at entry 3 and changes a label with ``b``, and ``evalkit report`` reading
the labels back from MLflow.

Each session is a module fixture that also snapshots what MLflow holds right after it, so a
test reads the state its session left whatever order the tests run in.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import mlflow
import pexpect
import pytest

from evalkit.cli._labeller import KEY_LINE, RUBRIC_SHOWN
from evalkit.records import names
from evalkit.review._labelling import label_order
from evalkit.stats import LabelDraw, LabelDraws
from evalkit.tracking import Tracker
from tests.support.builders import REPO
from tests.support.processes import run_eval, run_evalkit, script_env

EXPERIMENT = "support-router/golden"
TYPE = "functional"
LABEL = "functional_label"
REVIEWER = "tess"
WIDTH = 80
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_HEADER = re.compile(rf"entry (\S+) · {TYPE} · (\d+) of (\d+) \((\d+) labelled\)")
VERDICT_WORDS = ("✓", "✗", "PASS", "FAIL", "judge", "verdict", "passed", "failed",
                 "your label")
"""Nothing of the scorer's verdict on the first screen (its entry has no label yet either).
None of these is in the example's tickets, expected outputs or the router's replies."""


@dataclass(frozen=True)
class Project:
    folder: Path
    store: str
    run_id: str
    experiment_id: str


@dataclass(frozen=True)
class Labels:
    """What MLflow holds on the run's traces, by entry id."""

    mine: dict[str, list[tuple[int, bool]]]
    """The reviewer's ``functional_label`` HUMAN feedback: (create time ms, value), oldest
    first."""
    wanted: set[str]
    """Entries whose trace carries a ``label_wanted`` assessment."""
    other_human: list[tuple[str, str, str]]
    """Every other HUMAN feedback (entry id, name, source id)."""


@dataclass(frozen=True)
class Session:
    transcript: str
    """Everything the terminal showed, ANSI sequences and carriage returns removed."""
    screens: list[str]
    """The text before each key line, one per screen shown."""
    exitstatus: int | None
    labels: Labels
    draw: LabelDraw | None


def _labels(project: Project) -> Labels:
    client = mlflow.MlflowClient(project.store)
    mine: dict[str, list[tuple[int, bool]]] = {}
    wanted: set[str] = set()
    other: list[tuple[str, str, str]] = []
    traces = client.search_traces(locations=[project.experiment_id], run_id=project.run_id,
                                  max_results=500, include_spans=False)
    for trace in traces:
        entry_id = trace.info.tags[names.ENTRY_ID_TRACE_TAG]
        for a in trace.info.assessments:
            if a.name == names.LABEL_WANTED_ASSESSMENT:
                assert a.value == LABEL  # the feedback wanted, named apart from the verdict
                wanted.add(entry_id)
            elif (a.feedback is not None and a.source.source_type == "HUMAN"
                  and a.source.source_id == REVIEWER and a.name == LABEL):
                mine.setdefault(entry_id, []).append((int(a.create_time_ms), a.value))
            elif a.feedback is not None and a.source.source_type == "HUMAN":
                other.append((entry_id, a.name, a.source.source_id))
    return Labels({e: sorted(v) for e, v in mine.items()}, wanted, other)


def _draw(project: Project) -> LabelDraw | None:
    client = mlflow.MlflowClient(project.store)
    if names.LABEL_DRAWS_TAG not in client.get_run(project.run_id).data.tags:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = client.download_artifacts(project.run_id, names.LABEL_DRAWS_ARTIFACT, folder)
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    return LabelDraws.from_json(document).by_type.get(TYPE)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The example's functional entries evaluated in a project of their own, its eval.py
    without LABELS_PATH and LABEL_SAMPLE: a run with no draw and no label."""
    folder = tmp_path_factory.mktemp("label-project")
    script = (REPO / "eval.py").read_text(encoding="utf-8")
    for constant in ("LABELS_PATH", "LABEL_SAMPLE"):
        script, removed = re.subn(rf"^{constant} = .*\n", "", script, flags=re.MULTILINE)
        assert removed == 1, f"eval.py no longer sets {constant}"
    # The router samples its route; near zero it always takes the likeliest, so every run's
    # verdicts (and with them the smallest useful draw, 10) are the same.
    script, cooled = re.subn(r"^COMPONENT_TEMPERATURE = .*$", "COMPONENT_TEMPERATURE = 0.0001",
                             script, flags=re.MULTILINE)
    assert cooled == 1, "eval.py no longer sets COMPONENT_TEMPERATURE"
    (folder / "eval.py").write_text(script, encoding="utf-8")
    for name in ("examples", "datasets"):
        shutil.copytree(REPO / name, folder / name)
    done = run_eval(folder, "--type=functional", timeout=300)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    store = f"sqlite:///{folder / 'mlflow.db'}"
    client = mlflow.MlflowClient(store)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    return Project(folder, store, run.info.run_id, experiment.experiment_id)


def _spawn(project: Project, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable, ["-m", "evalkit", "label", project.run_id, "--type", TYPE, *args,
                         "--reviewer", REVIEWER],
        cwd=str(project.folder), env=script_env(project.folder, {"COLUMNS": str(WIDTH)}),
        encoding="utf-8", dimensions=(24, WIDTH), timeout=120)


def _session(project: Project, keys: str, *args: str) -> Session:
    """``evalkit label`` in a terminal: each key sent once the screen before it ends with the
    key line, then the end of the process awaited."""
    log = io.StringIO()
    child = _spawn(project, *args)
    child.logfile_read = log
    screens = []
    try:
        for key in keys:
            child.expect_exact(KEY_LINE)
            screens.append(_clean(child.before))
            child.send(key)
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    return Session(_clean(log.getvalue()), screens, child.exitstatus, _labels(project),
                   _draw(project))


def _clean(text: str) -> str:
    return _ANSI.sub("", text).replace("\r", "")


def _headers(text: str) -> list[tuple[str, int, int, int]]:
    """(entry id, position, of, labelled) of each screen header (a long one wraps)."""
    return [(e, int(at), int(of), int(done))
            for e, at, of, done in _HEADER.findall(" ".join(text.split()))]


@pytest.fixture(scope="module")
def before(project: Project) -> tuple[Labels, LabelDraw | None]:
    return _labels(project), _draw(project)


@pytest.fixture(scope="module")
def first(project: Project, before: tuple[Labels, LabelDraw | None]) -> Session:
    """A fresh draw of 10: pass the first entry, fail the second, quit at the third."""
    return _session(project, "pfq", "--sample", "10")


@pytest.fixture(scope="module")
def second(project: Project, first: Session) -> Session:
    """The draw reused: pass entry 3, back to it, fail it, quit at entry 4."""
    return _session(project, "pbfq")


def test_the_run_starts_without_a_draw_or_labels(
        before: tuple[Labels, LabelDraw | None]) -> None:
    labels, draw = before
    assert draw is None
    assert labels.mine == {} and labels.wanted == set() and labels.other_human == []


def test_a_draw_too_small_for_a_correction_is_refused_and_nothing_recorded(
        project: Project, before: tuple[Labels, LabelDraw | None]) -> None:
    done = run_evalkit(project.folder, "label", project.run_id, "--type", TYPE, "--sample",
                       "6", "--reviewer", REVIEWER, timeout=300)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "a draw of fewer than 10 functional entries can never give a corrected accuracy" \
        in done.stderr and "draw at least 10" in done.stderr
    assert _draw(project) is None


def test_a_first_session_draws_ten_entries_and_writes_each_key_as_a_label(
        first: Session) -> None:
    assert first.exitstatus == 0, first.transcript[-3000:]
    assert first.draw is not None and len(first.draw.drawn) == 10
    order = label_order(first.draw)
    assert f"10 {TYPE} entries drawn for labels (seed {first.draw.seed}); labelling as " \
           f"{REVIEWER}" in first.transcript
    # Three screens: the first two entries of the draw's order, then the third (quit there).
    assert [_headers(s) for s in first.screens] == [
        [(order[0], 1, 10, 0)], [(order[1], 2, 10, 1)], [(order[2], 3, 10, 2)]]
    screen = first.screens[0]
    for section in ("\ninput\n", "\noutput\n", "\nexpected_output\n",
                    "\nrubric\n  Is the output a right answer", "scorer exact"):
        assert section in screen
    shown = [word for word in VERDICT_WORDS if word in screen]
    assert shown == [], f"the first screen shows {shown}:\n{screen}"
    for later in first.screens[1:]:  # the judge's prompt once, then only the entry's own
        assert "Is the output a right answer" not in later and RUBRIC_SHOWN in " ".join(
            later.split()) and "\nexpected_output\n" in later
    assert "labelled 2, skipped 0; 2 of 10 entries have a label" in first.transcript
    assert "Traceback" not in first.transcript
    # In MLflow: exactly the two labels, True then False, and a label wanted on each drawn trace.
    assert {e: [v for _, v in values] for e, values in first.labels.mine.items()} == {
        order[0]: [True], order[1]: [False]}
    assert first.labels.wanted == set(order)
    assert first.labels.other_human == []


def test_a_second_session_reuses_the_draw_resumes_and_changes_a_label(
        project: Project, first: Session, second: Session) -> None:
    assert second.exitstatus == 0, second.transcript[-3000:]
    assert second.draw == first.draw
    assert first.draw is not None
    order = label_order(first.draw)
    assert f"(seed {first.draw.seed}); labelling as {REVIEWER}" in second.transcript
    # p on entry 3, b back to it (its label shown), f changes it, q at entry 4.
    assert [_headers(s) for s in second.screens] == [
        [(order[2], 3, 10, 2)], [(order[3], 4, 10, 3)], [(order[2], 3, 10, 3)],
        [(order[3], 4, 10, 3)]]
    assert "your label: pass" in second.screens[2]
    assert "your label" not in second.screens[0] + second.screens[1] + second.screens[3]
    assert "labelled 1, skipped 0; 3 of 10 entries have a label" in second.transcript
    assert "Traceback" not in second.transcript
    mine = second.labels.mine
    assert set(mine) == set(order[:3])
    assert [v for _, v in mine[order[0]]] == [True]
    assert [v for _, v in mine[order[1]]] == [False]
    assert [v for _, v in mine[order[2]]] == [True, False]  # oldest first: the latest is False
    assert len({t for t, _ in mine[order[2]]}) == 2  # no tie for the latest
    assert second.labels.wanted == set(order)
    # evalkit reads the same latest labels back.
    record = Tracker(project.store).reader.fetch(project.run_id)
    latest: dict[str, bool] = {}
    for label in sorted(record.labels, key=lambda x: x.time_ms):
        if label.test_type == TYPE and label.reviewer == REVIEWER:
            latest[label.entry_id] = label.passed
    assert latest == {order[0]: True, order[1]: False, order[2]: False}


def test_the_report_counts_the_three_labels_on_drawn_entries(
        project: Project, second: Session, tmp_path: Path) -> None:
    out, summary = tmp_path / "r", tmp_path / "j.json"
    done = run_evalkit(project.folder, "report", project.run_id, "--output", out,
                       "--json", summary, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    judge = (out / "report-judge.md").read_text(encoding="utf-8")
    assert "3 on drawn entries" in judge
    checks = json.loads(summary.read_text(encoding="utf-8"))
    assert checks["run_id"] == project.run_id
    functional = checks["types"][TYPE]
    assert (functional["labels_drawn"], functional["drawn"]) == (3, 10)


def test_no_line_is_wider_than_the_terminal(first: Session, second: Session) -> None:
    wide = [line for session in (first, second) for line in session.transcript.split("\n")
            if len(line) > WIDTH]
    assert wide == []
