"""`evalkit history`: a mode column (a rescore named as one, with the run it rescored), a dirty
tree marked beside its commit, each run's tokens and cost, and a layout that fits 100
columns."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from evalkit.records import Mode, RunUsage
from evalkit.tracking import render_history
from evalkit.tracking._history import HistoryRow, TypeFigure

TYPES = ("safety", "adversarial", "fairness", "bias", "robustness", "functional", "smoke",
         "repeatability")


def _row(mode: Mode, verdict: str, replicates: int | None) -> HistoryRow:
    return HistoryRow(
        run_id="c5e6c94321dd419784c4d720605bad64", run_name="all-1",
        started=datetime(2026, 11, 30, 16, 30, 5, tzinfo=UTC), status="FINISHED",
        test_types=TYPES, accuracy={t: TypeFigure(0.8125, 0.5699, 0.9342) for t in TYPES},
        repeat_count=5, replicates=replicates, dataset_digest="4d39f0a" + "0" * 57,
        git_commit="de4676c" + "1" * 33, git_dirty=False, verdict=verdict, mode=mode)


def test_history_has_a_mode_column_and_fits_100_columns() -> None:
    rows = [_row(Mode.REPLICATES, "PASS", 3), _row(Mode.CALIBRATION, "FAIL", None),
            _row(Mode.EVALUATION, "KILLED", None)]
    text = render_history(rows)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[0].split()[:6] == ["started", "(UTC)", "run", "id", "mode", "verdict"]
    runs = [line for line in lines if line.startswith("2026-")]
    assert [line.split()[3:5] for line in runs] == [
        ["replicates", "PASS"], ["calibration", "FAIL"], ["evaluation", "KILLED"]]
    assert runs[0].split()[5:] == ["5/3", "4d39f0a", "de4676c"]
    # Every type's figure appears whole, never split over two lines.
    for t in TYPES:
        assert text.count(f"{t} 0.812 [0.570, 0.934]") == 3
    assert rows[0].to_json()["mode"] == "replicates"


def test_a_run_without_a_commit_shows_none_in_the_commit_column() -> None:
    rows = [replace(_row(Mode.EVALUATION, "PASS", None), git_commit=why)
            for why in ("none: no commit yet", "none: not a git checkout")]
    runs = [line for line in render_history(rows).splitlines() if line.startswith("2026-")]
    assert [line.split()[-1] for line in runs] == ["none", "none"]


def test_a_rescore_names_the_run_it_rescored_and_a_dirty_tree_is_marked() -> None:
    source = "0123456789abcdef0123456789abcdef"
    rows = [replace(_row(Mode.EVALUATION, "FAIL", None), rescored_from=source, git_dirty=True),
            _row(Mode.EVALUATION, "PASS", None),
            replace(_row(Mode.EVALUATION, "PASS", None), git_dirty=None)]
    lines = render_history(rows).splitlines()
    assert max(len(line) for line in lines) <= 100
    runs = [line for line in lines if line.startswith("2026-")]
    assert [line.split()[3] for line in runs] == ["rescore", "evaluation", "evaluation"]
    assert [line.split()[-1] for line in runs] == ["de4676c+", "de4676c", "de4676c"]
    below = lines[lines.index(runs[0]) + 1]
    assert below.strip() == f"rescore of run {source}: its recorded outputs scored again"
    assert lines[-1].startswith("commit+: the run started with uncommitted changes")
    assert rows[0].to_json()["rescored_from"] == source
    assert rows[0].to_json()["mode"] == "evaluation"  # the run's mode tag, as recorded
    assert [r.to_json()["git_dirty"] for r in rows] == [True, False, None]


def test_no_dirty_note_when_no_run_was_dirty() -> None:
    text = render_history([_row(Mode.EVALUATION, "PASS", None)])
    assert "+" not in text and "uncommitted" not in text


def test_a_runs_tokens_and_cost_follow_its_accuracies_and_a_run_without_has_no_line() -> None:
    rows = [replace(_row(Mode.EVALUATION, "PASS", None),
                    usage=RunUsage(12_345, 0.0123, 3_210, 0.000042)),
            replace(_row(Mode.EVALUATION, "PASS", None), usage=RunUsage(987, None, None, None)),
            replace(_row(Mode.EVALUATION, "PASS", None), usage=RunUsage(None, None, 40, 0.0)),
            _row(Mode.EVALUATION, "PASS", None)]
    lines = render_history(rows).splitlines()
    assert [line for line in lines if "usage" in line] == [
        " " * 18 + "usage: 12,345 tokens, $0.012; judge 3,210 tokens, $0.000042",
        " " * 18 + "usage: 987 tokens",
        " " * 18 + "usage: judge 40 tokens, $0.00"]
    # each usage line closes its run's block: the next line is the next run (or the end)
    runs = [i for i, line in enumerate(lines) if line.startswith("2026-")]
    assert [lines[i - 1].strip().startswith("usage:") for i in runs[1:]] == [True, True, True]
    assert not lines[-1].strip().startswith("usage:")
    assert rows[0].to_json()["usage"] == {"tokens": 12_345, "cost_usd": 0.0123,
                                          "judge_tokens": 3_210, "judge_cost_usd": 0.000042}
    assert rows[3].to_json()["usage"] == {"tokens": None, "cost_usd": None,
                                          "judge_tokens": None, "judge_cost_usd": None}


def test_a_large_usage_still_fits_100_columns() -> None:
    big = RunUsage(123_456_789, 12_345.678, 98_765_432, 9_876.54)
    lines = render_history([replace(_row(Mode.REPLICATES, "PASS", 3), usage=big)]).splitlines()
    assert max(len(line) for line in lines) <= 100
    assert lines[-1] == (" " * 18 + "usage: 123,456,789 tokens, $12,345.68; "
                         "judge 98,765,432 tokens, $9,876.54")
