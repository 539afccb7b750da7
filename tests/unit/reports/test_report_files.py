"""The reports folder and what its files say: the charts' SVG pictures, the header's script
line, and the reports an earlier run left there."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalkit.records import RunRecord, names
from evalkit.reports._common import header
from evalkit.reports._svg import BOTTOM, LEFT, RIGHT, TOP, Y_TOP, Line, LineChart, Rule
from evalkit.tracking import Tracker
from tests.support.builders import (
    MIXED_ENTRIES,
    RecordingComponent,
    config_for,
    entry,
    write_dataset,
)
from tests.unit.evaluation.test_evaluation import run

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def polyline_points(root: ET.Element) -> list[list[tuple[float, float]]]:
    return [[tuple(map(float, point.split(","))) for point in p.attrib["points"].split()]
            for p in root.iter(f"{SVG}polyline")]  # type: ignore[misc]


def test_a_line_chart_places_each_point_on_its_axes_and_names_everything() -> None:
    chart = LineChart("t <&> \"title\"", "samples", "score", [
        Line("accuracy", [(1, 0.0), (2, 0.5), (5, 1.0)]),
        Line("F1", [(1, 1.0), (5, 0.25)])]).svg()
    root = parse(chart)  # escaped text keeps it well-formed
    accuracy, f1 = polyline_points(root)
    height = BOTTOM - TOP
    assert accuracy == [(LEFT, BOTTOM), (LEFT + (RIGHT - LEFT) / 4, round(BOTTOM - height * 0.5
                                                                            / Y_TOP, 1)),
                        (RIGHT, round(BOTTOM - height / Y_TOP, 1))]
    assert f1 == [(LEFT, round(BOTTOM - height / Y_TOP, 1)),
                  (RIGHT, round(BOTTOM - height * 0.25 / Y_TOP, 1))]
    assert texts(root) == [
        "0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "1", "2", "3", "4", "5",  # the ticks
        't <&> "title"', "samples", "score", "accuracy", "F1"]
    assert not list(root.iter(f"{SVG}circle")) and 'stroke-dasharray' not in chart


@pytest.mark.parametrize(("last", "ticks"), [
    (1, ["0", "1", "2"]),  # one sample: the axis widened around it
    (12, ["2", "4", "6", "8", "10", "12"]),
    (10_000, [str(k) for k in range(1000, 10_001, 1000)]),
])
def test_the_x_ticks_are_whole_numbers_at_most_ten_steps_apart(last: int,
                                                               ticks: list[str]) -> None:
    root = parse(LineChart("t", "x", "y", [Line("a", [(1, 0.5), (last, 0.5)])]).svg())
    assert texts(root)[6:-4] == ticks


def test_the_reference_line_stands_at_its_x_and_the_points_get_markers() -> None:
    chart = LineChart("t", "k", "rate", [Line("pass rate", [(2, 0.9), (3, 0.8), (4, 0.8)],
                                              markers=True)],
                      rule=Rule(3, "recommended k = 3"), legend_left=True).svg()
    root = parse(chart)
    circles = [(float(c.attrib["cx"]), float(c.attrib["cy"])) for c in root.iter(f"{SVG}circle")]
    assert circles == polyline_points(root)[0]
    middle = (LEFT + RIGHT) / 2
    dashed = [line for line in root.iter(f"{SVG}line") if "stroke-dasharray" in line.attrib]
    assert [float(dashed[0].attrib["x1"]), float(dashed[0].attrib["x2"])] == [middle, middle]
    assert "recommended k = 3" in texts(root)


def test_each_mermaid_chart_has_its_svg_beside_it_for_mlflow_s_artifact_viewer(
        tmp_path: Path, tracker: Tracker) -> None:
    from evalkit.reports import render_charts

    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    outcome = run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent())
    record = tracker.reader.fetch(outcome.run_id)
    charts = render_charts(record)
    assert sorted(charts) == [f"convergence-{t}.svg"
                              for t in ("bias", "functional", "repeatability", "smoke")]
    for metrics in outcome.metrics:
        test_type = metrics.test_type
        chart = f"convergence-{test_type}.svg"
        report = (tmp_path / "reports" / f"report-{test_type}.md").read_text()
        # the image line right under the mermaid block, naming the picture beside the report
        after = report.split("```mermaid", 1)[1].split("```", 1)[1]
        assert after.startswith(f"\n\n![{test_type}: cumulative accuracy and F1]({chart})\n")
        svg = (tmp_path / "reports" / chart).read_text(encoding="utf-8")
        assert svg == charts[chart]  # re-renders alike from the run
        assert tracker.backend.artifact(outcome.run_id, f"reports/{chart}") == svg.encode()
        root = parse(svg)
        accuracy, f1 = polyline_points(root)
        assert len(accuracy) == len(f1) == metrics.samples  # every sample, as the metrics
        final = round(BOTTOM - (BOTTOM - TOP) * metrics.cumulative_accuracy[-1] / Y_TOP, 1)
        last = RIGHT if metrics.samples > 1 else (LEFT + RIGHT) / 2  # one sample: centred
        assert accuracy[-1] == (last, final)
        assert f"{test_type}: cumulative accuracy and F1" in texts(root)


def test_no_plotting_library_is_imported_on_a_run_s_path(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)  # another test's import (put back after)
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent())
    assert (tmp_path / "reports" / "convergence-functional.svg").is_file()
    assert "matplotlib" not in sys.modules


def record_with(tags: dict[str, str]) -> RunRecord:
    return RunRecord("r1", "run", "1", "exp", 0, "FINISHED", {},
                     {names.SOURCE_NAME_TAG: "eval.py", **tags}, {}, {}, None)


@pytest.mark.parametrize(("tags", "script"), [
    ({names.GIT_COMMIT_TAG: names.NO_COMMIT, names.GIT_DIRTY_TAG: "true"},
     "eval.py (no git commit yet)"),
    ({names.GIT_COMMIT_TAG: names.NOT_A_CHECKOUT}, "eval.py (not in a git checkout)"),
    ({names.GIT_COMMIT_TAG: "0123456789abcdef" * 2, names.GIT_DIRTY_TAG: "true"},
     "eval.py at git 0123456789ab (with uncommitted changes)"),
    ({names.GIT_COMMIT_TAG: "0123456789abcdef" * 2, names.GIT_DIRTY_TAG: "false"},
     "eval.py at git 0123456789ab"),
])
def test_the_header_names_the_commit_or_says_why_there_is_none(tags: dict[str, str],
                                                               script: str) -> None:
    assert f"- **Script:** {script}" in header(record_with(tags), "Report")


def test_a_report_an_earlier_run_left_is_marked_until_a_run_writes_it_again(
        tmp_path: Path, tracker: Tracker) -> None:
    dataset = write_dataset(tmp_path / "ds", MIXED_ENTRIES)
    first = run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent())
    reports = tmp_path / "reports"
    earlier = {name: (reports / name).read_text() for name in
               ("report-bias.md", "report-human-review.md", "report-repeatability.md")}
    # the dataset loses its bias entries: the next run writes no bias report
    smaller = write_dataset(tmp_path / "ds2", {"f1": entry("functional"), "s1": entry("smoke")})
    second = run(tmp_path, tracker, config_for(tmp_path, smaller), RecordingComponent())
    assert {p.name for p in second.reports} == {"report-functional.md", "report-smoke.md",
                                                "summary.md"}
    for name in ("report-bias.md", "report-human-review.md", "report-repeatability.md"):
        text = (reports / name).read_text()
        note, rest = text.split("\n\n", 1)
        assert note == (
            "> **Not from the latest run.** The latest run here, "
            f"{tracker.reader.stored(second.run_id).run_name} (run {second.run_id}), wrote no "
            f"{name}: this one is from the earlier run its header names. `evalkit report RUN` "
            "writes any run's reports again.")
        assert rest == earlier[name] and first.run_id in rest  # otherwise untouched
    assert "Not from the latest run" not in (reports / "report-functional.md").read_text()
    third = run(tmp_path, tracker, config_for(tmp_path, smaller), RecordingComponent())
    bias = (reports / "report-bias.md").read_text()
    assert bias.count("Not from the latest run") == 1 and third.run_id in bias  # replaced
    assert bias.split("\n\n", 1)[1] == earlier["report-bias.md"]
    run(tmp_path, tracker, config_for(tmp_path, dataset), RecordingComponent())
    assert (reports / "report-bias.md").read_text().startswith("# ")  # written anew
