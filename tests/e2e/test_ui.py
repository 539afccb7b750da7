"""evalkit's records as MLflow's own, checked in a real browser (`make test-ui`).

A fresh run of the example (one group of the dataset, to keep it quick) and a judged run of
examples/eval_llm.py (the llm-smoke dataset, with tests/support/openai_stub.py as both the
component's endpoint and the judge) are logged to a local store; `mlflow ui` serves it on
loopback, and headless Chromium (tests/e2e/ui_browse.py, from the cached UI venv) renders the
pages. Screenshots
are kept in .cache/ui/screenshots for a reviewer.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mlflow
import pytest

from evalkit.tracking import ServedUi
from evalkit.tracking._links import SERVED_UI
from tests.support.builders import REPO
from tests.support.openai_stub import OpenAIStub, RecordedRequest, Reply, ok
from tests.support.processes import free_port, run_eval, run_evalkit, script_env

pytestmark = pytest.mark.ui

SHOTS = REPO / ".cache" / "ui" / "screenshots"


@pytest.fixture(scope="module")
def ui_python() -> str:
    """The Python of the cached UI venv (Playwright), which `make test-ui` names."""
    python = os.environ.get("EVALKIT_UI_PYTHON")
    if not python:
        pytest.skip("EVALKIT_UI_PYTHON is not set: run `make test-ui`")
    return python


def judge_fails_jupiter(request: RecordedRequest) -> Reply:
    """The stub as component and judge: the judge fails the entry that expects Jupiter (its
    prompt quotes the expected output), so the judged run has a failing verdict to show."""
    return ok("0" if "Jupiter" in json.dumps(request.body) else "1")


@pytest.fixture(scope="module")
def first_runs(tmp_path_factory: pytest.TempPathFactory, ui_python: str) -> dict[str, str]:
    """The two runs made before `evalkit ui` serves, in one local store (the project's own):
    their run and experiment ids."""
    project = tmp_path_factory.mktemp("ui-project")
    shutil.copy2(REPO / "eval.py", project / "eval.py")
    for folder in ("examples", "datasets"):
        shutil.copytree(REPO / folder, project / folder)
    store = f"sqlite:///{project / 'mlflow.db'}"
    example = run_eval(project, "--type=all", "--groups=billing", timeout=600)
    assert example.returncode in (0, 1), example.stderr[-3000:]
    with OpenAIStub(judge_fails_jupiter) as stub:
        judged = run_eval(project, "--type=all", script="examples/eval_llm.py", timeout=600,
                          env={"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "sk-ui-test"})
    assert judged.returncode in (0, 1), judged.stderr[-3000:]
    with OpenAIStub() as stub:  # the stub makes the tool calls the orders' inputs name
        agent = run_eval(project, "--type=all", script="examples/agent/eval.py", timeout=600,
                         env={"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "sk-ui-test",
                              "MLFLOW_MODEL_CATALOG_URI": ""})  # offline: no price catalog
    assert agent.returncode == 0, agent.stderr[-3000:]
    client = mlflow.MlflowClient(store)
    ids = {"store": store, "project": str(project)}
    for key, name in (("example", "support-router/golden"), ("judged", "gemma-chat/smoke"),
                      ("agent", "orders-agent/orders")):
        experiment = client.get_experiment_by_name(name)
        (run,) = client.search_runs([experiment.experiment_id])
        ids[f"{key}_run"], ids[f"{key}_experiment"] = run.info.run_id, experiment.experiment_id
        ids[f"{key}_entries"] = run.data.metrics["entries"]
        ids[f"{key}_name"] = run.info.run_name  # its verdict heads it: "PASS all 12-01 20:03"
    return ids


@pytest.fixture(scope="module")
def logged(first_runs: dict[str, str], ui: str) -> dict[str, str]:
    """Every run: the first two, and those made while `evalkit ui` serves (see
    :func:`verdict_runs`)."""
    project, client = Path(first_runs["project"]), mlflow.MlflowClient(first_runs["store"])
    return first_runs | verdict_runs(project, client) | second_example(project, client,
                                                                        first_runs)


def second_example(project: Path, client: Any, first: dict[str, str]) -> dict[str, str]:
    """The example evaluated again (eval.py's labels given to it too), then a person fails
    one of its drawn functional entries with `evalkit label --from`: two runs of one
    experiment whose scorer agrees and whose labels do not, for MLflow's traces table and
    compare view."""
    done = run_eval(project, "--type=all", "--groups=billing", timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    (run,) = [r for r in client.search_runs([first["example_experiment"]])
              if r.info.run_id != first["example_run"]]
    run_id = run.info.run_id
    draws = json.loads(Path(client.download_artifacts(
        run_id, "labels/draws.json", str(project))).read_text(encoding="utf-8"))
    drawn = [d["entry_id"] for d in draws["types"]["functional"]["drawn"]]
    labels = project / "second-labels.csv"
    labels.write_text(f"entry_id,type,verdict\n{drawn[0]},functional,fail\n", encoding="utf-8")
    given = run_evalkit(project, "label", run_id, "--from", labels, "--reviewer", "ui-test")
    assert given.returncode == 0, given.stderr[-3000:]
    assert "the run's reports (summary.md, report-judge.md) and description in MLflow" in \
        " ".join(given.stdout.split())
    return {"second_run": run_id, "second_drawn": str(len(drawn))}


def jupiter_fails_in_replicate_1(request: RecordedRequest) -> Reply:
    """Component and judge: the component's answer says which replicate asked (the strict
    script puts it in the prompt), and the judge fails the Jupiter entry in replicate 1 only:
    that entry flips across the series."""
    body = json.dumps(request.body)
    if "[replicate " in body:  # the component's prompt
        return ok("an answer (replicate 1)" if "[replicate 1]" in body else "an answer")
    # the judge's prompt quotes the expected output and the component's answer
    return ok("0" if "Jupiter" in body and "(replicate 1)" in body else "1")


def verdict_runs(project: Path, client: Any) -> dict[str, str]:
    """Beside the judged run (thresholds 0: PASS), in its experiment: a FAIL run (the same
    script with every accuracy required), a series of 2 replicates whose Jupiter entry flips,
    and a plan, which goes to the experiment's sibling (gemma-chat/smoke/planning)."""
    script = (project / "examples" / "eval_llm.py").read_text(encoding="utf-8")
    for old, new in (("EVAL_MIN_ACCURACY = 0.0", "EVAL_MIN_ACCURACY = 1.0\nREPLICATES = 2"),
                     ('"content": entry.input}', '"content": f"{entry.input} '
                                                  '[replicate {call.replicate}]"}')):
        assert old in script
        script = script.replace(old, new)
    (project / "examples" / "eval_strict.py").write_text(script, encoding="utf-8")
    printed, summaries = {}, {}
    for name, answers, extra in (("failing", judge_fails_jupiter, ()),
                                 ("series", jupiter_fails_in_replicate_1, ("--replicates",))):
        with OpenAIStub(answers) as stub:
            done = run_eval(project, "--type=functional", *extra, timeout=600,
                            script="examples/eval_strict.py",
                            env={"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": "sk-ui"})
        assert done.returncode == 1, done.stderr[-3000:]  # both FAIL
        printed[name] = done.stdout + done.stderr
        summaries[name] = (project / "reports" / "llm" / "summary.md").read_text(
            encoding="utf-8")
    planned = run_evalkit(project, "plan", "gemma-chat/smoke")
    assert planned.returncode == 0, planned.stderr[-3000:]
    experiment = client.get_experiment_by_name("gemma-chat/smoke").experiment_id
    (parent,) = client.search_runs([experiment], "tags.mode = 'replicates'")
    (url,) = re.findall(r"http://\S+/runs/" + parent.info.run_id + r"/traces", printed["series"])
    (failing,) = set(re.findall(r"http://\S+/runs/(\w+)", printed["failing"]))
    return {"series_run": parent.info.run_id, "series_url": url, "failing_run": failing,
            "failing_printed": printed["failing"], "failing_summary": summaries["failing"]}


@pytest.fixture(scope="module")
def ui(first_runs: dict[str, str]) -> Iterator[str]:
    """`evalkit ui --port N` over the project's store, on a free loopback port (or
    EVALKIT_UI_PORT): the runs made while it serves link to it."""
    port = int(os.environ.get("EVALKIT_UI_PORT", "0")) or free_port()
    project = Path(first_runs["project"])
    server = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "ui", "--port", str(port)], cwd=project,
        env=script_env(project), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)  # SIGTERM to evalkit alone: it stops mlflow's group
    base = f"http://127.0.0.1:{port}"
    served = None
    try:
        deadline = time.monotonic() + 180
        # evalkit ui records the port after its own poll sees the UI answer, which may be a
        # moment after ours does: wait for both
        while (served := ServedUi.recorded(project / SERVED_UI)) is None:
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("evalkit ui did not start and record its port", pytrace=False)
            time.sleep(0.5)
        with urllib.request.urlopen(f"{base}/health", timeout=5):
            pass
        assert served is not None and served.url == base, served
        assert served.store == first_runs["store"]  # what the runs' links are matched by
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        if served is not None:  # should evalkit have left its child serving
            with contextlib.suppress(ProcessLookupError):
                os.killpg(served.pid, signal.SIGKILL)


def browse(python: str, pages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    done = subprocess.run([python, str(REPO / "tests" / "e2e" / "ui_browse.py"), str(SHOTS)],
                          input=json.dumps(pages), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    texts: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return texts


def shown_trace(store: str, run_id: str, failing: bool) -> Any:
    """The trace to open, as the store holds it: the one with the most verdicts and call spans
    and no person's label (eval.py's labels file covers the billing group's entries of
    several types), or the one whose verdict failed."""
    client = mlflow.MlflowClient(store)
    experiment = client.get_run(run_id).info.experiment_id
    traces = client.search_traces(locations=[experiment], run_id=run_id, max_results=500)
    if failing:
        return next(t for t in traces if any(a.feedback is not None and a.value is False
                                             for a in t.info.assessments))
    unlabelled = [t for t in traces if not any(a.source.source_type == "HUMAN"
                                               and a.feedback is not None
                                               for a in t.info.assessments)]
    # count verdicts only: the draw's label_wanted feedback must not decide the pick
    return max(unlabelled, key=lambda t: (len(verdicts(t)), len(t.data.spans), t.info.trace_id))


def verdicts(trace: Any) -> list[Any]:
    """The scorers' verdicts on a trace: its feedback other than the label draw's and
    people's."""
    return [a for a in trace.info.assessments
            if a.feedback is not None and a.name != "label_wanted"
            and a.source.source_type != "HUMAN"]


def open_trace(ui: str, experiment: str, run: str, entries: int, trace_id: str
               ) -> dict[str, Any]:
    """The run's traces pane, then one trace opened from its row, with its assessments pane
    shown and every assessment unfolded (value, source, rationale)."""
    return {"url": f"{ui}/#/experiments/{experiment}/runs/{run}/traces",
            "wait_for": f"{entries} of {entries}",
            "steps": [["row", trace_id], ["button", "Assess trace"],
                      ["expand", EXPAND_ASSESSMENT], ["wait", "Rationale"]]}


EXPAND_ASSESSMENT = '[data-component-id="shared.model-trace-explorer.toggle-assessment-expanded"]'
"""The chevron that unfolds an assessment (it has no accessible name in MLflow 3.17)."""


def flat(text: str) -> str:
    """Whitespace folded: the trace view wraps long outputs (YAML ``>-``) over lines."""
    return " ".join(text.split())


def leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in leaves(v)]
    return [str(value)]


@pytest.fixture(scope="module")
def pages(logged: dict[str, str], ui: str, ui_python: str) -> dict[str, dict[str, Any]]:
    """Every page the tests read, rendered in one browser session."""
    run, experiment = logged["example_run"], logged["example_experiment"]
    entries = int(float(logged["example_entries"]))
    judged_entries = int(float(logged["judged_entries"]))
    example = shown_trace(logged["store"], run, failing=False)
    judged = shown_trace(logged["store"], logged["judged_run"], failing=True)
    judge_span = next(s.name for s in judged.data.spans if s.name.startswith("judge: "))
    failing = mlflow.MlflowClient(logged["store"]).get_run(logged["failing_run"])
    agent = shown_agent_trace(logged["store"], logged["agent_run"])
    agent_entries = int(float(logged["agent_entries"]))
    (tool,) = [s for s in agent.data.spans if s.span_type == "TOOL"][:1]
    texts = browse(ui_python, [
        {"name": "agent-trace", **open_trace(ui, logged["agent_experiment"],
                                             logged["agent_run"], agent_entries,
                                             agent.info.trace_id)},
        {"name": "agent-tool", **open_trace(ui, logged["agent_experiment"],
                                            logged["agent_run"], agent_entries,
                                            agent.info.trace_id),
         "steps": [["row", agent.info.trace_id], ["click-exact", tool.name],
                   ["wait", str(next(iter(tool.inputs.values())))]]},
        {"name": "run", "url": f"{ui}/#/experiments/{experiment}/runs/{run}",
         "wait_for": "evalkit verdict"},
        {"name": "evaluation-pane",
         "url": f"{ui}/#/experiments/{experiment}/evaluation-runs?selectedRunUuid={run}",
         "wait_for": logged["example_name"],
         "steps": [["click", logged["example_name"]], ["wait", f"{entries} of {entries}"]]},
        {"name": "traces-pane", "url": f"{ui}/#/experiments/{experiment}/runs/{run}/traces",
         "wait_for": f"{entries} of {entries}",
         "steps": [["button", "Columns"], ["option", "All Assessments"], ["key", "Escape"]]},
        {"name": "trace", **open_trace(ui, experiment, run, entries, example.info.trace_id)},
        {"name": "judged-trace", **open_trace(ui, logged["judged_experiment"],
                                              logged["judged_run"], judged_entries,
                                              judged.info.trace_id)},
        {"name": "prompts", "url": f"{ui}/#/prompts", "wait_for": "evalkit-judge-expected"},
        {"name": "evaluation-runs",
         "url": f"{ui}/#/experiments/{logged['judged_experiment']}/evaluation-runs",
         "wait_for": "PASS r0"},
        {"name": "training-runs",
         "url": f"{ui}/#/experiments/{logged['judged_experiment']}/runs",
         "wait_for": "FAIL ×2 functional"},
        {"name": "series-traces", "url": logged["series_url"], "wait_for": "changed"},
        {"name": "labelled-traces",
         "url": f"{ui}/#/experiments/{experiment}/runs/{logged['second_run']}/traces",
         "wait_for": f"{entries} of {entries}",
         "steps": [["button", "Columns"], ["option", "All Assessments"], ["key", "Escape"]]},
        {"name": "compare-runs",
         "url": f"{ui}/#/experiments/{experiment}/evaluation-runs?selectedRunUuid="
                f"{logged['second_run']}&compareToRunUuid={run}",
         "wait_for": "Comparing",
         # it shows 4 of the assessments at first: a click on All Assessments clears them,
         # a second shows them all
         "steps": [["last-button", "Columns"], ["option", "All Assessments"],
                   ["option", "All Assessments"], ["key", "Escape"],
                   ["show", "functional_label"]]},
        {"name": "labelled-run",
         "url": f"{ui}/#/experiments/{experiment}/runs/{logged['second_run']}",
         "wait_for": "evalkit verdict"},
        {"name": "labelled-summary",
         "url": f"{ui}/#/experiments/{experiment}/runs/{logged['second_run']}"
                "/artifacts/reports/summary.md",
         "wait_for": "Corrected by labels"},
        {"name": "judge-span", **open_trace(ui, logged["judged_experiment"],
                                            logged["judged_run"], judged_entries,
                                            judged.info.trace_id),
         "steps": [["row", judged.info.trace_id], ["click", judge_span],
                   ["wait", "You are a strict evaluator"]]},
        # the link the run tagged, as it is: it must open on the port evalkit ui serves
        {"name": "served-run", "url": failing.data.tags["run_url"],
         "wait_for": failing.info.run_name},
    ])
    texts["example"], texts["judged"] = {"trace": example}, {"trace": judged}
    texts["agent"] = {"trace": agent}
    return texts


def shown_agent_trace(store: str, run_id: str) -> Any:
    """The agent's trace to open: the one whose agent called the most tools."""
    client = mlflow.MlflowClient(store)
    experiment = client.get_run(run_id).info.experiment_id
    traces = client.search_traces(locations=[experiment], run_id=run_id, max_results=500)
    return max(traces, key=lambda t: (sum(s.span_type == "TOOL" for s in t.data.spans),
                                      t.info.trace_id))


def test_an_agents_trace_shows_its_tools_under_the_call_its_trajectory_and_its_tokens(
        pages: dict[str, dict[str, Any]]) -> None:
    """The LangGraph example's trace (screenshots agent-trace.png, agent-tool.png): the
    span tree holds the graph's spans and each tool under the call's span; the trajectory
    verdict (``safety``) is shown with its rationale; the header counts the tokens of the
    autologged model requests; a tool's span opened shows its arguments."""
    trace = pages["agent"]["trace"]
    by_id = {s.span_id: s for s in trace.data.spans}
    tools = [s for s in trace.data.spans if s.span_type == "TOOL"]
    assert len(tools) >= 2
    for tool in tools:
        ancestors = []
        span = tool
        while span.parent_id is not None:
            span = by_id[span.parent_id]
            ancestors.append(span.name)
        assert "call 0" in ancestors and ancestors[-1] == trace.data.spans[0].name
    view = pages["agent-trace"]["dialog"]
    for span in trace.data.spans:  # the whole tree is listed, the tools among it
        assert f"\n{span.name}\n" in view, span.name
    (safety,) = [a for a in verdicts(trace) if a.name == "safety"]
    assert safety.value is True and safety.source.source_id == "evalkit.trajectory"
    assert flat(safety.rationale) in flat(view)
    usage = trace.info.token_usage
    chats = [s for s in trace.data.spans if s.get_attribute("mlflow.chat.tokenUsage")]
    assert chats and all(s.name != "call 0" for s in chats)  # from the model's own spans
    assert usage["total_tokens"] > 0 and f"{usage['total_tokens']} tokens" in view
    tool = tools[0]
    for value in leaves(tool.inputs):
        assert flat(value) in flat(pages["agent-tool"]["dialog"])


def test_the_mlflow_ui_shows_traces_assessments_dataset_description_and_prompts(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    entries = int(float(logged["example_entries"]))
    page = pages["run"]["body"]
    assert "evalkit verdict: PASS" in page or "evalkit verdict: FAIL" in page
    assert "accuracy [95% CI]" in page and "report-functional.md" in page
    assert "support-tickets" in page  # the dataset logged as the run's input
    pane = pages["evaluation-pane"]["body"]
    assert f"{entries} of {entries}" in pane  # one trace per entry
    cells = {line.strip() for line in pane.splitlines()}
    assert "functional" in cells  # the assessment's column (metrics are <type>_accuracy...)
    assert any(re.fullmatch(r"\(\d+/\d+\)", c) for c in cells)  # its pass count, e.g. (4/8)
    prompts = pages["prompts"]["body"]
    for use in ("expected", "repeatability", "bias"):
        assert f"evalkit-judge-{use}" in prompts
    assert {p.name for p in SHOTS.glob("*.png")} >= {
        "run.png", "evaluation-pane.png", "traces-pane.png", "trace.png", "judged-trace.png",
        "prompts.png"}


def test_the_run_traces_pane_has_an_assessment_column_per_test_type(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    types = mlflow.MlflowClient(logged["store"]).get_run(
        logged["example_run"]).data.tags["test_types"].split(",")
    assert len(types) == 7  # the billing group has entries of every type but planning's
    # MLflow shows a feedback named like one of its built-in scorers capitalised ("Safety")
    headers = {h.lower() for h in pages["traces-pane"]["headers"]}
    labelled = {t for t in types if f"{t}_label" in headers}
    assert "functional" in labelled  # eval.py's labels file: a column of their own
    assert {*types, "label_wanted", "expected_output", "request", "response"} <= headers
    # human_review is a tag until a reviewer gives the verdict (the next test)
    assert "human_review" not in headers
    n = len(types) + len(labelled) + 1  # the types, their labels and label_wanted
    assert f"Assessments\n({n}/{n})" in pages["traces-pane"]["body"]


def test_the_traces_table_counts_verdicts_and_labels_apart(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    """MLflow's traces table sums each feedback name over a run's traces: in the run a
    person failed one entry of (`evalkit label --from`), the functional column is the
    scorer's pass rate alone and functional_label the labels' alone."""
    held = feedback_of(logged, logged["second_run"])
    verdict = held["functional"]
    label = held["functional_label"]
    assert {source for _, source in verdict} == {"CODE"}
    assert {source for _, source in label} == {"HUMAN"}
    columns = {c.splitlines()[0]: c for c in pages["labelled-traces"]["columns"]}
    assert shown_percent(columns["functional"]) == percent(verdict) == 100
    assert shown_percent(columns["functional_label"]) == percent(label) < 100


def feedback_of(logged: dict[str, str], run: str) -> dict[str, list[tuple[Any, str]]]:
    """Feedback name -> (value, source type) of each feedback on the run's traces."""
    client = mlflow.MlflowClient(logged["store"])
    traces = client.search_traces(locations=[logged["example_experiment"]], run_id=run,
                                  max_results=500)
    held: dict[str, list[tuple[Any, str]]] = {}
    for trace in traces:
        for a in trace.info.assessments:
            if a.feedback is not None and a.valid is not False:
                held.setdefault(a.name, []).append((a.value, a.source.source_type))
    return held


def percent(values: list[tuple[Any, str]]) -> int:
    """The share of True among the values, in whole percent rounded half up (as the UI)."""
    return math.floor(100 * sum(v is True for v, _ in values) / len(values) + 0.5)


def shown_percent(column: str) -> int:
    """The share of True a column's header shows for a Boolean feedback (its first)."""
    return int(re.findall(r"(\d+)%", column)[0])


def test_the_compare_view_shows_the_verdicts_and_the_labels_as_two_rows(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    """The labelled run compared with the first in MLflow's evaluation view: the scorer's
    pass rate is unchanged (+0%), the labels' fell; never one rate over both."""
    columns = {c.splitlines()[0]: c for c in pages["compare-runs"]["columns"]}
    assert columns["functional"].split() == ["functional", "TRUE", "100%", "True", "+0%"]
    second = f"{percent(feedback_of(logged, logged['second_run'])['functional_label'])}%"
    label = columns["functional_label"].split()  # the share of True, then its change
    assert label[:3] == ["functional_label", "TRUE", second], label
    assert label[3].startswith("-") and second != "100%"


def test_labels_given_with_evalkit_label_reach_the_runs_description_and_summary(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    n = int(logged["second_drawn"])  # all labelled pass by the example, one now failed
    corrected = f"{(n - 1) / n:.3f}"
    assert f"corrected by {n} labels {corrected}" in pages["labelled-run"]["body"]
    assert re.search(rf"{corrected} \[[0-9.]+, [0-9.]+\] \({n} labels\)",
                     pages["labelled-summary"]["body"])


@pytest.mark.parametrize("which", ["example", "judged"])
def test_a_single_trace_shows_its_request_response_calls_and_verdicts(
        pages: dict[str, dict[str, Any]], which: str) -> None:
    trace = pages[which]["trace"]
    view = pages["trace" if which == "example" else "judged-trace"]["dialog"]
    root = trace.data.spans[0]
    assert view.startswith("Trace\n" + trace.info.trace_id.removeprefix("tr-")[:8])
    for text in leaves(root.inputs) + leaves(root.outputs):  # request and response
        assert flat(text) in flat(view)
    spans = [s.name for s in trace.data.spans]
    assert spans[0] == trace.info.tags["evalkit.entry_id"]
    calls = [s for s in spans if s.startswith("call ")]
    assert calls == [f"call {r}" for r in range(len(calls))] and calls
    if which == "judged":
        assert any(s.startswith("judge: ") for s in spans)  # named for the type it judges
    for name in spans:  # the span tree lists the entry and each call (and judge call)
        assert f"\n{name}\n" in view
    feedback = [a for a in trace.info.assessments if a.feedback is not None]
    assert verdicts(trace)  # human_review is a tag, not a feedback, until a reviewer decides
    assert f"Feedback ({len(feedback)})" in view
    for a in feedback:  # name = the test type, its value, who scored it, and why
        value = {True: "True", False: "False"}.get(a.value, str(a.value))
        assert re.search(
            rf"\n{re.escape(a.name)}\n{value}\n{re.escape(a.source.source_id)}\n.*?\n"
            rf"Feedback\n{value}\nRationale\n{re.escape(a.rationale)}\n", view, re.DOTALL), a
    if which == "judged":
        (failed,) = [a for a in feedback if a.value is False]
        assert (failed.name, failed.rationale) == ("functional", "FAIL; judge replied '0'")


def test_a_label_added_in_the_ui_enters_the_corrected_accuracy(
        logged: dict[str, str], ui: str, ui_python: str, tmp_path: Path) -> None:
    """A person fails a drawn entry through the MLflow UI's own feedback form; evalkit report
    counts the label in the corrected accuracy (the latest label of an entry wins)."""
    store, run = logged["store"], logged["example_run"]
    project = Path(logged["project"])
    client = mlflow.MlflowClient(store)
    draws = json.loads(Path(client.download_artifacts(
        run, "labels/draws.json", str(tmp_path))).read_text())
    drawn = [d["entry_id"] for d in draws["types"]["functional"]["drawn"]]
    traces = client.search_traces(locations=[logged["example_experiment"]], run_id=run,
                                  max_results=500)
    trace = next(t for t in traces if t.info.tags["evalkit.entry_id"] == drawn[0])

    def judge_report(folder: str) -> str:
        done = run_evalkit(project, "report", run, "--output", tmp_path / folder)
        assert done.returncode == 0, done.stderr[-2000:]
        return (tmp_path / folder / "report-judge.md").read_text(encoding="utf-8")

    before = judge_report("before")
    assess_in_ui(logged, ui, ui_python, "add-label", trace.info.trace_id,
                 "functional_label=fail")
    after = judge_report("after")

    n = len(drawn)  # every drawn billing entry has the example's label: all passed
    assert "| corrected (stratified PPI) | 1.000 |" in before
    corrected = f"{(n - 1) / n:.3f}"
    assert f"| corrected (stratified PPI) | {corrected} |" in after
    assert re.search(rf"\| {re.escape(drawn[0])} \| pass \| fail \| drawn \| User \|", after)
    # evalkit report took the UI's label into the run: its description and summary.md
    experiment = logged["example_experiment"]
    shown = browse(ui_python, [
        {"name": "run-after-label", "url": f"{ui}/#/experiments/{experiment}/runs/{run}",
         "wait_for": "evalkit verdict"},
        {"name": "summary-after-label",
         "url": f"{ui}/#/experiments/{experiment}/runs/{run}/artifacts/reports/summary.md",
         "wait_for": "Corrected by labels"}])
    assert f"corrected by {n} labels {corrected}" in shown["run-after-label"]["body"]
    assert re.search(rf"{corrected} \[[0-9.]+, [0-9.]+\] \({n} labels\)",
                     shown["summary-after-label"]["body"])


def assess_in_ui(logged: dict[str, str], ui: str, ui_python: str, name: str, trace_id: str,
                 feedback: str) -> None:
    """A person's feedback (``NAME=pass|fail``) on one trace of the example run, given with
    the MLflow UI's own "Assess trace" form."""
    entries = int(float(logged["example_entries"]))
    browse(ui_python, [{
        "name": name, "url": f"{ui}/#/experiments/{logged['example_experiment']}"
                             f"/runs/{logged['example_run']}/traces",
        "wait_for": f"{entries} of {entries}",
        "steps": [["row", trace_id], ["button", "Assess trace"], ["feedback", feedback]]}])


def test_a_reviewers_verdict_from_the_ui_form_is_the_one_human_review_value(
        logged: dict[str, str], ui: str, ui_python: str, tmp_path: Path) -> None:
    """A reviewer passes an entry tagged for review with the UI's own feedback form (a new
    name: Boolean); the trace then holds that one human_review value, and evalkit report
    ticks the entry in the checklist."""
    store, run = logged["store"], logged["example_run"]
    client = mlflow.MlflowClient(store)
    traces = client.search_traces(locations=[logged["example_experiment"]], run_id=run,
                                  max_results=500)
    flagged = [t for t in traces if "human_review" in t.info.tags]
    assert flagged and not [t for t in traces if t.search_assessments("human_review")]
    trace = flagged[0]
    assess_in_ui(logged, ui, ui_python, "add-review", trace.info.trace_id, "human_review=pass")
    (verdict,) = client.get_trace(trace.info.trace_id).search_assessments("human_review")
    assert (verdict.value, verdict.source.source_type) == (True, "HUMAN")
    done = run_evalkit(Path(logged["project"]), "report", run, "--output", tmp_path / "r")
    assert done.returncode == 0, done.stderr[-2000:]
    checklist = (tmp_path / "r" / "report-human-review.md").read_text(encoding="utf-8")
    entry_id = trace.info.tags["evalkit.entry_id"]
    assert f"- [x] PASS (User) **{entry_id}**" in checklist
    assert f"- **Reviewed:** 1 (1 pass, 0 fail); pending {len(flagged) - 1}" in checklist


def test_the_run_lists_tell_a_failing_run_from_a_passing_one(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    """The verdict heads each run's name in both of MLflow's run lists (the classic table
    colours its dot too); plans are elsewhere. The GenAI list cuts names to a few letters and
    a nested replicate's to one: the verdict's first letter is what stays there."""
    client = mlflow.MlflowClient(logged["store"])
    runs = client.search_runs([logged["judged_experiment"]])
    by_verdict = {r.data.tags["verdict"]: r.info.run_name for r in runs
                  if "replicate" not in r.data.tags and r.data.tags.get("mode") is None}
    assert set(by_verdict) == {"PASS", "FAIL"}
    table = pages["training-runs"]["body"]
    for verdict, name in by_verdict.items():
        assert name.startswith(f"{verdict} functional ") or name.startswith(f"{verdict} all ")
        assert name in table  # the column shows about 20 characters: the verdict and type
    assert "FAIL ×2 functional" in table
    listed = pages["evaluation-runs"]["body"]
    assert "PASS r0" in listed and "FAIL r1" in listed
    for page in (table, listed):  # the plan went to gemma-chat/smoke/planning
        assert not any(line.strip().startswith("plan ") for line in page.splitlines())
    headers = pages["evaluation-runs"]["headers"]
    metrics = headers[headers.index("Dataset") + 1:]
    assert metrics[0].startswith("functional_acc"), headers  # the accuracy leads


def test_a_series_parent_shows_which_entries_flipped(
        logged: dict[str, str], pages: dict[str, dict[str, Any]]) -> None:
    """The URL a series prints opens the parent's traces: one row per entry, its stability."""
    client = mlflow.MlflowClient(logged["store"])
    traces = client.search_traces(locations=[logged["judged_experiment"]],
                                  run_id=logged["series_run"], max_results=500)
    stability = {t.info.tags["evalkit.entry_id"]: a.value for t in traces
                 for a in t.info.assessments if a.name == "functional_stability"}
    assert sorted(set(stability.values())) == ["always right", "changed"]
    page = pages["series-traces"]["body"]
    assert f"{len(traces)} of {len(traces)}" in page
    assert "changed" in page and "always right" in page


def test_a_judged_trace_shows_the_judges_prompt_and_the_tokens_used(
        pages: dict[str, dict[str, Any]]) -> None:
    """The judge's span (opened from the trace's span tree) shows the messages sent to the
    judge as a chat, the strict evaluator's prompt first (in the user message for a model
    without a system role, as gemma's); the trace and the judge's span count the tokens the
    LLM spans reported."""
    trace = pages["judged"]["trace"]
    (judge,) = [s for s in trace.data.spans if s.name == "judge: functional"]
    messages = judge.inputs["messages"]
    assert judge.span_type == "CHAT_MODEL"
    assert judge.get_attribute("mlflow.message.format") == "openai"
    assert messages[0]["content"].startswith("You are a strict evaluator")
    view = flat(pages["judge-span"]["dialog"])
    assert flat(messages[0]["content"])[:150] in view  # the UI shows each message's start
    usage = trace.info.token_usage  # MLflow's sum of the LLM spans' mlflow.chat.tokenUsage
    llm = [s for s in trace.data.spans if s.get_attribute("mlflow.chat.tokenUsage")]
    assert {s.name for s in llm} == {"call 0", "judge: functional"}
    assert usage["total_tokens"] == sum(
        s.get_attribute("mlflow.chat.tokenUsage")["total_tokens"] for s in llm) > 0
    assert f"{usage['total_tokens']} tokens" in view  # the trace's header
    assert f"{judge.get_attribute('mlflow.chat.tokenUsage')['total_tokens']} tokens" in view


def test_runs_made_while_evalkit_ui_serves_link_to_its_port(
        logged: dict[str, str], ui: str, pages: dict[str, dict[str, Any]]) -> None:
    """`evalkit ui --port N` serves on N (the `ui` fixture reached it there); a run made
    while it serves prints, tags and writes in summary.md links on N, which open the run in
    the browser; the series' printed URL too."""
    assert ui != "http://127.0.0.1:5000"
    client = mlflow.MlflowClient(logged["store"])
    run = client.get_run(logged["failing_run"])
    url = f"{ui}/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}"
    assert run.data.tags["run_url"] == url
    assert url in logged["failing_printed"]
    assert f"({url})" in logged["failing_summary"] or f"<{url}>" in logged["failing_summary"]
    assert logged["series_url"].startswith(f"{ui}/#/experiments/")
    opened = pages["served-run"]
    assert opened["url"] == url  # not redirected: the run's own page on port N
    assert run.info.run_name in opened["body"] and "evalkit verdict: FAIL" in opened["body"]


def test_mlflow_s_artifact_viewer_shows_each_chart_as_a_picture(
        first_runs: dict[str, str], ui: str, ui_python: str) -> None:
    run, experiment = first_runs["example_run"], first_runs["example_experiment"]
    client = mlflow.MlflowClient(first_runs["store"])
    charts = [f.path for f in client.list_artifacts(run, "reports") if f.path.endswith(".svg")]
    assert "reports/convergence-functional.svg" in charts
    # a click on the file in the artifact tree: a new address that differs only after the
    # "#" leaves MLflow's artifact view on the file it shows
    shown = browse(ui_python, [
        {"name": f"chart-{chart.rsplit('/', 1)[1].removesuffix('.svg')}",
         "url": f"{ui}/#/experiments/{experiment}/runs/{run}/artifactPath/{chart}",
         "wait_for": chart.rsplit("/", 1)[1],
         "steps": [["click", chart.rsplit("/", 1)[1]], ["picture", chart]]}
        for chart in charts])
    for chart in charts:
        pictures = shown[f"chart-{chart.rsplit('/', 1)[1].removesuffix('.svg')}"]["pictures"]
        assert {"alt": chart, "width": 700, "height": 400} in pictures, pictures
