"""Hostile text in what evalkit writes: control characters in reports, short secrets, and bias
groups 7 and "7" that must not share an id."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

import evalkit
from evalkit._secrets import FLAG_VALUES, MIN_SECRET_LENGTH, Redactor
from evalkit.reports._markdown import cell, fenced, table
from evalkit.tracking import Tracker
from tests.support.builders import config_for, entry, write_dataset

CONTROLS = [chr(c) for c in [*range(0x00, 0x20), *range(0x7F, 0xA0)] if chr(c) not in "\n\r\t"]
RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# --- bias group ids -------------------------------------------------------------------------------


def _bias_ids(tmp_path: Path, groups: list[str | int]) -> dict[str, str]:
    dataset = write_dataset(tmp_path / "ds", {
        f"b{i}_{v}": entry("bias", bias_group=g) for i, g in enumerate(groups) for v in "xy"})
    return {e.id: e.bias_id for e in evalkit.load_dataset(dataset).entries}


def test_bias_ids_are_the_groups_as_written_without_a_clash(tmp_path: Path) -> None:
    assert _bias_ids(tmp_path, [7, "register", "8"]) == {
        "b0_x": "7", "b0_y": "7", "b1_x": "register", "b1_y": "register", "b2_x": "8",
        "b2_y": "8"}


def test_bias_ids_quote_every_string_group_when_7_and_quoted_7_both_exist(
        tmp_path: Path) -> None:
    ids = _bias_ids(tmp_path, [7, "7", "register", '"7"'])
    assert ids == {"b0_x": "7", "b0_y": "7", "b1_x": '"7"', "b1_y": '"7"',
                   "b2_x": '"register"', "b2_y": '"register"', "b3_x": '"\\"7\\""',
                   "b3_y": '"\\"7\\""'}
    assert len(set(ids.values())) == 4  # one id per group


def test_entries_without_a_bias_group_have_no_bias_id(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", {"f": entry("functional")})
    assert [e.bias_id for e in evalkit.load_dataset(dataset).entries] == [""]


# --- secrets --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "redacted"), [
    ("DB_PASSWORD", "4821", True),  # the shortest value redacted
    ("DB_PASSWORD", "482", False),  # too short to redact safely (docs/running.md)
    ("PROVIDER_API_KEY", "sk-" + "x" * 40, True),
    ("SERVICE_TOKEN", "abcdefg", True),  # under the former 8-character floor
    ("TOKENIZERS_PARALLELISM", "false", False),  # a flag word, whatever its case
    ("TOKENIZERS_PARALLELISM", "FALSE", False),
    ("HOME", "/home/someone", False),  # not a secret-looking name
])
def test_which_values_are_redacted(name: str, value: str, redacted: bool) -> None:
    redactor = Redactor.from_environment({name: value})
    text = f"output mentions {value} once"
    assert (redactor.text(text) == f"output mentions [REDACTED:{name}] once") is redacted
    assert (redactor.text(text) == text) is not redacted


def test_redaction_rule_constants_match_the_documentation() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "running.md").read_text(
        encoding="utf-8")
    assert f"values\nshorter than {MIN_SECRET_LENGTH} characters" in page
    for word in FLAG_VALUES:
        assert f"`{word}`" in page


# --- control characters in reports ----------------------------------------------------------------


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"{ord(c):02x}")
def test_a_cell_escapes_each_control_character_visibly(char: str) -> None:
    text = cell(f"a{char}b|c")
    assert RAW_CONTROL.search(text) is None
    assert text == f"a\\\\x{ord(char):02x}b\\|c"  # the backslash itself escaped for markdown
    row = table(["x", "y"], [[text, "z"]]).splitlines()[-1]
    assert len(re.findall(r"(?<!\\)\|", row)) == 3


def test_a_fenced_block_escapes_control_characters_and_keeps_lines() -> None:
    text = "".join(CONTROLS) + "\nsecond\tline\r\nthird"
    block = fenced(text)
    assert RAW_CONTROL.search(block) is None
    lines = block.splitlines()
    assert lines[0] == "```text" and lines[-1] == "```" and len(lines) == 5
    assert lines[1] == "".join(f"\\x{ord(c):02x}" for c in CONTROLS)
    assert lines[2:4] == ["second\tline", "third"]


def test_printable_text_is_unchanged() -> None:
    assert cell("plain é ☃ text") == "plain é ☃ text"
    assert fenced("plain é ☃\ttext") == "```text\nplain é ☃\ttext\n```"


# --- a whole evaluation -------------------------------------------------------------------------


def test_eval_reports_escape_controls_redact_short_secrets_and_separate_7_from_quoted_7(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("DB_PASSWORD", "4821")
    dataset = write_dataset(tmp_path / "ds", {
        "f": entry("functional", expected="ok"),
        "b/int_a": entry("bias", bias_group=7), "b/int_b": entry("bias", bias_group=7),
        "b/str_a": entry("bias", bias_group="7"), "b/str_b": entry("bias", bias_group="7")})

    def component(item: evalkit.Entry, call: evalkit.Call) -> str:
        return "ok\x00 bell\x07 esc\x1b[31m red \x9b pin " + os.environ["DB_PASSWORD"]

    outcome = evalkit.evaluate(config_for(tmp_path, dataset, EVAL_MIN_ACCURACY=0.0), component,
                               evalkit.Selection("all"),
                               evalkit.RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    reports = {p.name: p.read_bytes() for p in (tmp_path / "reports").glob("*.md")}
    assert sorted(reports) == ["report-bias.md", "report-functional.md", "summary.md"]
    for name, raw in reports.items():
        text = raw.decode("utf-8")
        assert RAW_CONTROL.search(text) is None, name
        if name == "summary.md":
            continue  # it quotes no output
        assert "\\\\x00 bell\\\\x07 esc\\\\x1b" in text, name
        assert "4821" not in text and "REDACTED:DB\\_PASSW" in text, name
        chart = text.split("```mermaid\n", 1)[1].split("\n```\n", 1)[0].splitlines()
        assert chart[0] == "xychart-beta" and len(chart) == 6, name
    rows = [line for line in reports["report-bias.md"].decode().splitlines()
            if line.startswith("| 7 |") or line.startswith('| "7" |')]
    assert [row.split(" | ")[:3:2] for row in rows] == [["| 7", "b/int\\_a<br>b/int\\_b"],
                                                        ['| "7"', "b/str\\_a<br>b/str\\_b"]]
    journal = tracker.backend.journals[outcome.run_id]
    texts = [tracker.backend.artifact(outcome.run_id, path).decode("utf-8")
             for path in journal.artifacts]
    assert len(texts) >= 6  # reports, results, raw results, run.json
    texts += [json.dumps(journal.params), json.dumps(journal.tags), caplog.text,
              outcome.raw_results.read_text(encoding="utf-8")]
    assert [t for t in texts if "4821" in t] == []
    assert "pin [REDACTED:DB_PASSWORD]" in outcome.raw_results.read_text(encoding="utf-8")
