"""The job summary as a GitHub Actions job gets it: ``eval.py`` and ``evalkit compare`` in
processes of their own over a real local MLflow store, ``GITHUB_STEP_SUMMARY`` naming a file
an earlier step already wrote to. Each appends its section; the tables read as GitHub's
Markdown reads them, with the columns they promise."""

from __future__ import annotations

from pathlib import Path

from tests.support.builders import entry, write_dataset, write_eval_script
from tests.support.markdown import tables
from tests.support.processes import run_eval, run_evalkit

COMPONENT = """
def invoke_component(entry, call):
    return "nope" if entry.id in WRONG else entry.expected_output
"""
EARLIER = "## Lint\n\nevery dataset is valid"  # an earlier step's text, its last line unended


def run_id(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("mlflow: run ")]
    return line.split()[2]


def test_eval_and_compare_append_their_verdict_tables_to_the_job_summary(
        tmp_path: Path) -> None:
    write_dataset(tmp_path / "ds", {
        "f1": entry("functional"), "f2": entry("functional"), "f3": entry("functional"),
        "s1": entry("smoke")})
    constants = {"EXPERIMENT_NAME": "router/ci", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.6}
    step = tmp_path / "step-summary.md"
    step.write_text(EARLIER, encoding="utf-8")
    env = {"GITHUB_STEP_SUMMARY": str(step)}

    write_eval_script(tmp_path, {**constants, "WRONG": ["f2", "f3"]}, COMPONENT)
    before = run_eval(tmp_path, "--type=all", "--pr-comment", "out/comment.md", env=env)
    assert before.returncode == 1, before.stderr
    baseline = run_id(before.stdout)
    first = step.read_text(encoding="utf-8")
    assert first.startswith(EARLIER + "\n### FAIL: 1/2 types passed (failed: functional); "
                            "4 entries, 4 calls, 0 errors, ")
    assert f"/runs/{baseline}) in experiment router/ci\n" in first
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert comment == "<!-- evalkit: eval.py verdict -->\n" + first.removeprefix(EARLIER + "\n")

    write_eval_script(tmp_path, {**constants, "WRONG": []}, COMPONENT)
    after = run_eval(tmp_path, "--type=all", env=env)
    assert after.returncode == 0, after.stderr
    candidate = run_id(after.stdout)
    compared = run_evalkit(tmp_path, "compare", candidate, baseline, "--summary-md",
                           "out/compare.md", env=env)
    assert compared.returncode == 0, compared.stderr
    assert "summary-md: out/compare.md" in compared.stdout

    text = step.read_text(encoding="utf-8")
    assert text.startswith(first)  # appended, never rewritten
    sections = text.split("\n### ")
    assert [s.splitlines()[0] for s in sections[1:]] == [
        first.splitlines()[3].removeprefix("### "),
        after.stdout.strip().splitlines()[-2],
        "evalkit compare: not gated (no replicates measured a noise floor): each gap with its "
        "paired interval"]
    assert (tmp_path / "out" / "compare.md").read_text(encoding="utf-8") == (
        "### " + sections[3])
    eval_before, eval_after, comparison = tables(text)
    for table in (eval_before, eval_after):
        assert table.header == ("Type", "Metric", "Value [95% interval]", "Threshold",
                                "Verdict")
    assert eval_before.rows[0] == ("functional", "functional_accuracy",
                                   "0.333 [0.061, 0.792] (n = 3)", "accuracy ≥ 0.6", "FAIL")
    assert [row[4] for row in eval_after.rows] == ["PASS", "PASS"]
    assert comparison.header == ("Type", "A", "B", "Gap A − B", "Noise floor",
                                 "Right in A only / B only", "Verdict")
    # f2 and f3 right in A only: Newcombe's interval of paired_gap(1, 2, 0, 0)
    assert comparison.rows[0] == (
        "functional", "1.000", "0.333", "+0.667 [-0.059, +0.939] (95% paired, 3 shared items)",
        "none (no replicates)", "2 / 0 of 3", "not gated (no replicates)")
    assert f"A: run [{candidate}](http://127.0.0.1:5000/#/experiments/" in sections[3]
    assert "- code component\\_source\\_sha256: " in sections[3]  # what differs: the script
