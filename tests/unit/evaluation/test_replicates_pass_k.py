"""pass@k and pass^k of a real replicate series: in the parent's metrics, report-stability.md,
stability.json, and eval.py's --json, with the numbers :func:`evalkit.stats.pass_k` gives for
the item x replicate table the component's seeded answers make."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from evalkit import Call, Entry, EvalConfig, RunContext, Selection
from evalkit.evaluation import evaluate_replicates
from evalkit.records import names
from evalkit.reports import render_reports
from evalkit.stats import PassK, pass_k, replicate_seed
from evalkit.tracking import Tracker
from tests.support.builders import entry, write_dataset
from tests.support.commands import eval_script

ENTRIES = ({f"f{i:02d}": entry("functional") for i in range(20)}
           | {f"s{i:02d}": entry("smoke") for i in range(8)})
SKILL = {"functional": 0.7, "smoke": 0.5}
EXPERIMENT = "replicates/pass-k"
REPLICATES = 3
ROOT_SEED = 5


def right(seed: int | None, entry_id: str) -> bool:
    """A reproducible biased coin per replicate seed and entry (functional 0.7, smoke 0.5)."""
    digest = hashlib.sha256(f"{seed}:{entry_id}".encode()).digest()
    skill = SKILL["functional" if entry_id.startswith("f") else "smoke"]
    return int.from_bytes(digest[:4], "big") / 2**32 < skill


def seeded(item: Entry, call: Call) -> Any:
    return "a" if right(call.seed, item.id) else "wrong"


def expected_tables() -> dict[str, dict[str, dict[int, bool]]]:
    """test type -> item -> replicate -> right, worked out from the seeds, not from the run."""
    seeds = [replicate_seed(ROOT_SEED, EXPERIMENT, r) for r in range(REPLICATES)]
    tables: dict[str, dict[str, dict[int, bool]]] = {"functional": {}, "smoke": {}}
    for entry_id in ENTRIES:
        test_type = "functional" if entry_id.startswith("f") else "smoke"
        tables[test_type][entry_id] = {r: right(s, entry_id) for r, s in enumerate(seeds)}
    return tables


CONSTANTS = {"EXPERIMENT_NAME": EXPERIMENT, "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.0,
             "REPLICATES": REPLICATES, "ROOT_SEED": ROOT_SEED}


def test_a_series_records_pass_k_per_type(tmp_path: Path, tracker: Tracker) -> None:
    write_dataset(tmp_path / "ds", ENTRIES)
    config = EvalConfig.from_constants({**CONSTANTS, "REPORTS_DIR": str(tmp_path / "reports")},
                                       "test_eval.py")
    series = evaluate_replicates(config, seeded, Selection("all"), RunContext(tracker=tracker))
    tables = expected_tables()
    expected = {t: pass_k(table) for t, table in tables.items()}
    assert series.reliability == expected

    # independent of the estimator at k = the replicates: the share of items right every time
    # (pass^3) and right at least once (pass@3); the coins do vary at these skills
    functional = tables["functional"].values()
    all_three = sum(all(row.values()) for row in functional) / 20
    any_of_three = sum(any(row.values()) for row in functional) / 20
    assert 0 < all_three < any_of_three < 1
    parent = tracker.reader.stored(series.parent_run_id)
    assert parent.metrics["functional_pass_hat_3"] == pytest.approx(all_three)
    assert parent.metrics["functional_pass_at_3"] == pytest.approx(any_of_three)

    for test_type, reliability in expected.items():
        assert [row.k for row in reliability.by_k] == [1, 2, 3]
        for row in reliability.by_k:
            for metric, mean in ((f"{test_type}_pass_at_{row.k}", row.pass_at),
                                 (f"{test_type}_pass_hat_{row.k}", row.pass_hat)):
                assert parent.metrics[metric] == mean.value
                assert parent.metrics[f"{metric}_ci_lower"] == mean.low
                assert parent.metrics[f"{metric}_ci_upper"] == mean.high
    assert parent.metrics["functional_pass_at_1"] == pytest.approx(
        parent.metrics["functional_accuracy"])  # every item in every replicate

    report = (tmp_path / "reports" / names.STABILITY_REPORT).read_text()
    section = report[report.index("## Reliability over Replicates"):
                     report.index("## Unstable Items")]
    for test_type, reliability in expected.items():
        assert f"### {test_type}" in section
        for row in reliability.by_k:
            a, h = row.pass_at, row.pass_hat
            assert (f"| {row.k} | {row.items} | {a.value:.3f} [{a.low:.3f}, {a.high:.3f}] | "
                    f"{h.value:.3f} [{h.low:.3f}, {h.high:.3f}] |") in section

    document = json.loads(series.stability_path.read_text())
    stored = {m["metric"]: m["reliability"] for m in document["metrics"]}
    assert stored == {f"{t}_accuracy": r.to_json() for t, r in expected.items()}
    artifact = tracker.backend.journals[series.parent_run_id].artifacts[names.STABILITY_ARTIFACT]
    assert json.loads(artifact)["metrics"][0]["reliability"] == expected["functional"].to_json()


def test_eval_py_json_over_replicates_holds_pass_k(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_dataset(tmp_path / "ds", ENTRIES)
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    assert eval_script(CONSTANTS, seeded, "--type=all", "--replicates",
                       "--json", "out/summary.json") == 0
    expected = {t: pass_k(table) for t, table in expected_tables().items()}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {t["test_type"]: PassK.from_json(t["reliability"]) for t in summary["types"]} \
        == expected
    functional = expected["functional"].at(3)
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("functional_accuracy mean")))
    assert lines[at + 1].startswith("  unstable items ")
    assert lines[at + 1].endswith(
        f"pass@3 {functional.pass_at.value:.3f} pass^3 {functional.pass_hat.value:.3f}")
    assert max(len(line) for line in lines[at:at + 2]) <= 80


def test_one_run_has_no_pass_k_in_its_json(tmp_path: Path, tracker: Tracker,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    write_dataset(tmp_path / "ds", ENTRIES)
    monkeypatch.setattr("evalkit.evaluation._context.Tracker", lambda *args, **kwargs: tracker)
    assert eval_script(CONSTANTS, seeded, "--type=all", "--json", "out/summary.json") == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert all("reliability" not in t for t in summary["types"])


def test_the_report_of_an_earlier_series_says_pass_k_was_not_recorded(
        tmp_path: Path, tracker: Tracker) -> None:
    write_dataset(tmp_path / "ds", ENTRIES)
    config = EvalConfig.from_constants({**CONSTANTS, "REPORTS_DIR": str(tmp_path / "reports")},
                                       "test_eval.py")
    series = evaluate_replicates(config, seeded, Selection("all"), RunContext(tracker=tracker))
    record = tracker.reader.fetch(series.parent_run_id)
    document = record.documents[names.STABILITY_ARTIFACT]
    earlier = {**document, "metrics": [{k: v for k, v in m.items() if k != "reliability"}
                                       for m in document["metrics"]]}
    report = render_reports(replace(record, documents={
        **record.documents, names.STABILITY_ARTIFACT: earlier}))[names.STABILITY_REPORT]
    section = report[report.index("## Reliability over Replicates"):
                     report.index("## Unstable Items")]
    assert section.count("Not recorded: this series ran before evalkit kept pass@k and "
                         "pass^k.") == 2  # functional and smoke
    assert "| k |" not in section
