"""``evalkit compare --margin`` over two real runs of ``eval.py`` on a local MLflow store, in
processes of their own: the three answers and their exit statuses, ``--json``, and the job
summary's table with the margin column; a bad margin is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.markdown import tables
from tests.support.processes import run_eval, run_evalkit

COMPONENT = """
def invoke_component(entry, call):
    return "nope" if entry.id in WRONG else entry.expected_output
"""
FUNCTIONAL = [f"f{i}" for i in range(10)]
SMOKE = [f"s{i}" for i in range(10)]


def run_id(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("mlflow: run ")]
    return line.split()[2]


def test_compare_with_a_margin_answers_in_three_ways_on_the_local_store(
        tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", {**{i: entry("functional") for i in FUNCTIONAL},
                                    **{i: entry("smoke") for i in SMOKE}})
    constants = {"EXPERIMENT_NAME": "router/margin", "DATASET_PATH": "ds",
                 "EVAL_MIN_ACCURACY": 0.0}
    write_eval_script(tmp_path, {**constants, "WRONG": []}, COMPONENT)
    baseline = run_eval(tmp_path, "--type=all")
    assert baseline.returncode == 0, baseline.stderr
    # the candidate keeps functional and breaks smoke
    write_eval_script(tmp_path, {**constants, "WRONG": SMOKE}, COMPONENT)
    candidate = run_eval(tmp_path, "--type=all")
    assert candidate.returncode == 0, candidate.stderr
    a, b = run_id(baseline.stdout), run_id(candidate.stdout)

    # functional: ten items right in both, B - A 0 [-0.2775, +0.2775]
    no_worse = run_evalkit(tmp_path, "compare", a, b, "--margin", "functional=0.3")
    assert no_worse.returncode == 0, no_worse.stdout + no_worse.stderr
    assert no_worse.stdout.rstrip().endswith(
        "margin verdict: B no worse than A by more than the margin on functional")
    straddles = run_evalkit(tmp_path, "compare", a, b, "--margin", "functional=0.25", "--json")
    assert straddles.returncode == 5, straddles.stderr
    doc = json.loads(straddles.stdout)
    assert doc["margin_verdict"] == "INCONCLUSIVE"
    functional, smoke = doc["metrics"]
    assert smoke["margin"] is None
    assert functional["margin"]["margin"] == 0.25
    assert functional["margin"]["candidate_minus_baseline"]["low"] == (
        -functional["margin"]["candidate_minus_baseline"]["high"])

    # smoke: ten items right in A only, B - A -1 [-1, -0.6075]; the job summary says so
    step = tmp_path / "step-summary.md"
    worse = run_evalkit(tmp_path, "compare", a, b, "--margin", "0.3,smoke=0.6",
                        env={"GITHUB_STEP_SUMMARY": str(step)})
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert ("  against the margin: B - A -1.000 [-1.000, -0.608] (95% paired) against margin "
            "0.600: worse by more than the margin: the interval lies below -0.600") in worse.stdout
    summary = step.read_text(encoding="utf-8")
    assert "| **B - A -1.000 [-1.000, -0.608]" in summary
    assert summary.startswith(
        "\n### evalkit compare: B worse than A by more than the margin on smoke; not gated")
    (table,) = tables(summary)
    assert table.header[-1] == "B − A against the margin"
    assert [row[-1] for row in table.rows] == [
        "B - A +0.000 [-0.278, +0.278] (95% paired) against margin 0.300: no worse: the "
        "interval lies above -0.300",
        "B - A -1.000 [-1.000, -0.608] (95% paired) against margin 0.600: worse by more "
        "than the margin: the interval lies below -0.600"]  # in bold: what fails

    refused = run_evalkit(tmp_path, "compare", a, b, "--margin", "bias=0.1")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == ("error: --margin names bias, which A and B do not both have an "
                              "accuracy for; the types they share: functional, smoke\n")
