"""The screen of ``evalkit label``: which labels reach ``write`` and when, where a session starts,
what a screen shows (never a verdict, at most 80 columns, no raw control character), and key
presses read from a real terminal without Enter."""

from __future__ import annotations

import inspect
import io
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pexpect
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit.cli._labeller import (
    KEY_LINE,
    RUBRIC_SHOWN,
    LabelCase,
    LabellingOutcome,
    label_cases,
    terminal_keys,
)


def _case(number: int, label: bool | None = None, **changes: Any) -> LabelCase:
    case = LabelCase(entry_id=f"e{number}", test_type="classification",
                     input=f"question {number}", outputs=(f"answer {number}",),
                     expected=f"expected {number}", rubric=f"rubric {number}", label=label)
    return replace(case, **changes)


def _session(cases: list[LabelCase], keys: list[str],
             width: int = 80) -> tuple[LabellingOutcome, list[tuple[str, bool]], str]:
    """The outcome, the (entry id, label) pairs ``write`` received in order, and the screen."""
    written: list[tuple[str, bool]] = []
    out = io.StringIO()
    outcome = label_cases(cases, lambda case, passed: written.append((case.entry_id, passed)),
                          iter(keys), out, width)
    return outcome, written, out.getvalue()


def test_pass_fail_back_to_change_a_label_skip_and_quit() -> None:
    outcome, written, screen = _session([_case(n) for n in (1, 2, 3, 4)],
                                        ["p", "f", "b", "p", "s", "q"])
    assert written == [("e1", True), ("e2", False), ("e2", True)]
    assert outcome == LabellingOutcome(labelled=2, skipped=1, quit=True)
    assert "your label: fail" in screen
    assert screen.count("4 of 4") == 1
    assert screen.rstrip().endswith("labelled 2, skipped 1; 2 of 4 entries have a label")


@pytest.mark.parametrize(("key", "passed"), [("P", True), ("F", False)])
def test_keys_are_case_insensitive(key: str, passed: bool) -> None:
    _, written, _ = _session([_case(1), _case(2)], [key, "q"])
    assert written == [("e1", passed)]


def test_a_session_resumes_at_the_first_entry_without_a_label_and_passes_labelled_ones() -> None:
    cases = [_case(1, True), _case(2), _case(3, False), _case(4)]
    outcome, written, screen = _session(cases, ["p", "f"])
    assert written == [("e2", True), ("e4", False)]
    assert outcome == LabellingOutcome(labelled=2, skipped=0, quit=False)
    assert "1 of 4" not in screen and "3 of 4" not in screen
    assert "entry e2 · classification · 2 of 4 (2 labelled)" in screen
    assert "4 of 4 (3 labelled)" in screen
    assert screen.rstrip().endswith("4 of 4 entries have a label")


def test_going_back_shows_a_label_given_before_this_session() -> None:
    _, written, screen = _session([_case(1, True), _case(2)], ["b", "f"])
    assert "your label: pass" in screen
    assert written == [("e1", False)]


def test_when_every_entry_has_a_label_it_says_so_and_reads_no_key() -> None:
    keys = iter(["p"])
    out = io.StringIO()
    outcome = label_cases([_case(1, True), _case(2, False)], lambda *_: pytest.fail("written"),
                          keys, out)
    assert outcome == LabellingOutcome(labelled=0, skipped=0, quit=False)
    assert out.getvalue() == "all 2 entries already have your label: nothing to do\n"
    assert next(keys) == "p"


def test_a_skipped_entry_labelled_later_in_the_session_is_not_counted_as_skipped() -> None:
    outcome, written, _ = _session([_case(1), _case(2)], ["s", "b", "p", "f"])
    assert written == [("e1", True), ("e2", False)]
    assert outcome == LabellingOutcome(labelled=2, skipped=0, quit=False)


def test_back_at_the_first_entry_says_so_and_stays() -> None:
    _, written, screen = _session([_case(1), _case(2)], ["b", "p", "q"])
    assert "this is the first entry: there is none before it" in screen
    assert written == [("e1", True)]
    assert screen.count("· 1 of 2 (") == 1


def test_an_unknown_key_shows_a_hint_and_keeps_the_entry() -> None:
    _, written, screen = _session([_case(1), _case(2)], ["x", "\x1b[A", "p", "q"])
    assert "unknown key 'x': press p, f, s, b, r or q" in screen
    assert "unknown key '\\x1b[A'" in screen
    assert written == [("e1", True)]
    assert screen.count("· 1 of 2 (") == 1


@pytest.mark.parametrize("key", ["q", "Q", "\x1b", "\x03", "\x04"])
def test_q_escape_ctrl_c_and_ctrl_d_quit(key: str) -> None:
    outcome, written, screen = _session([_case(1), _case(2)], ["p", key, "f"])
    assert written == [("e1", True)]
    assert outcome == LabellingOutcome(labelled=1, skipped=0, quit=True)
    assert "labelled 1, skipped 0; 1 of 2 entries have a label" in screen


def test_the_end_of_the_keys_quits() -> None:
    outcome, written, screen = _session([_case(1), _case(2), _case(3)], ["f"])
    assert written == [("e1", False)]
    assert outcome == LabellingOutcome(labelled=1, skipped=0, quit=True)
    assert "labelled 1, skipped 0; 1 of 3 entries have a label" in screen


def test_a_failing_write_propagates_after_the_labels_before_it_were_written() -> None:
    written: list[str] = []

    def write(case: LabelCase, passed: bool) -> None:
        if case.entry_id == "e2":
            raise OSError("tracking server down")
        written.append(case.entry_id)

    with pytest.raises(OSError, match="tracking server down"):
        label_cases([_case(1), _case(2), _case(3)], write, iter(["p", "p", "p"]), io.StringIO())
    assert written == ["e1"]


def test_a_case_carries_what_the_judge_saw_and_no_verdict() -> None:
    assert [f.name for f in fields(LabelCase)] == [
        "entry_id", "test_type", "input", "outputs", "expected", "rubric", "label"]


def test_a_screen_shows_every_section_within_80_columns_and_shortens_long_values() -> None:
    long_text = " ".join(f"word{n}" for n in range(2000))
    case = _case(1, input={"lang": "en", "question": long_text},
                 outputs=("first answer", "", long_text), expected=["a", "b"],
                 rubric="Pass when the answer names the capital.")
    _, _, screen = _session([case], ["q"])
    for text in ('"lang": "en"', "output 1 of 3", "  first answer", "output 2 of 3", '  ""',
                 "output 3 of 3", "expected_output", '    "a",', "rubric",
                 "  Pass when the answer names the capital.", KEY_LINE, "word0 word1"):
        assert text in screen
    assert "\noutput\n" not in screen
    assert "word1999" not in screen
    assert "more lines left out" in screen
    assert max(len(line) for line in screen.splitlines()) == 80


def test_a_single_output_is_titled_output_and_missing_sections_are_left_out() -> None:
    _, _, screen = _session([_case(1, expected=None, rubric=None)], ["q"])
    assert "\noutput\n  answer 1\n" in screen
    assert "expected_output" not in screen and "\nrubric\n" not in screen
    assert RUBRIC_SHOWN not in screen


JUDGE_PROMPT = "\n".join(f"judge rule {n}: be strict about point {n}." for n in range(30))


def test_the_rubric_is_shown_whole_once_then_only_on_r_or_when_it_changes() -> None:
    cases = [_case(n, rubric=JUDGE_PROMPT) for n in (1, 2, 3)] + [_case(4, rubric="other")]
    _, written, screen = _session(cases, ["p", "f", "r", "s"])
    assert written == [("e1", True), ("e2", False)]
    screens = screen.split("─" * 80)[1:]
    assert len(screens) == 5  # e1, e2, e3, e3 again on r, e4
    shown_whole = [n for n, text in enumerate(screens) if "\nrubric\n" in text]
    assert shown_whole == [0, 3, 4]
    # Whole: a judge's prompt is longer than any entry section may be, and is not shortened.
    assert "judge rule 0:" in screens[0] and "judge rule 29:" in screens[0]
    assert "more lines left out" not in screens[0]
    for n in (1, 2):  # the entry's own sections, and a pointer instead of the prompt
        assert "judge rule" not in screens[n]
        assert f"question {n + 1}" in screens[n] and f"answer {n + 1}" in screens[n]
        assert f"expected {n + 1}" in screens[n]
        assert RUBRIC_SHOWN in screens[n]
    assert "entry e3 ·" in screens[3] and "judge rule 29:" in screens[3]
    assert "\nrubric\n  other\n" in screens[4]  # another rubric is shown in full
    # The prompt once, its 30 lines, in three screens of the first type's entries but one.
    assert screen.count("judge rule 29:") == 2


@given(text=st.text(), width=st.integers(min_value=20, max_value=120))
def test_no_line_is_wider_than_the_screen(text: str, width: int) -> None:
    case = _case(1, entry_id=text, input=text, outputs=(text, {text: [text]}), expected=text,
                 rubric=text)
    _, _, screen = _session([case], ["x", "q"], width)
    assert max(len(line) for line in screen.split("\n")) <= width


def test_control_characters_from_the_dataset_and_component_are_escaped() -> None:
    hostile = "ok\x1b[2J\x07\x00\x9b\r\u202ehidden"
    case = _case(1, entry_id="e\x1b]0;title\x07", input={"key\x1b": hostile},
                 outputs=(hostile,), expected=hostile, rubric=hostile)
    _, _, screen = _session([case], ["q"])
    for raw in ("\x1b", "\x07", "\x00", "\x9b", "\r", "\u202e"):
        assert raw not in screen
    assert "ok\\x1b[2J\\x07\\x00\\x9b\\x0d\\u202ehidden" in screen
    assert "entry e\\x1b]0;title\\x07 ·" in screen


def test_windows_line_ends_are_line_breaks_not_escapes() -> None:
    _, _, screen = _session([_case(1, outputs=("one\r\ntwo",))], ["q"])
    assert "\n  one\n  two\n" in screen


def test_keys_from_a_pipe_are_the_first_characters_of_its_non_blank_lines() -> None:
    assert list(terminal_keys(io.StringIO("p\nfail\n\n  s \nq\n"))) == ["p", "f", "s", "q"]


_CHILD = """
import importlib.util, sys, termios

spec = importlib.util.spec_from_file_location("labeller", sys.argv[2])
labeller = sys.modules["labeller"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(labeller)

def write(case, passed):
    with open(sys.argv[1], "a", encoding="utf-8") as labels:
        labels.write(f"{case.entry_id} {passed}\\n")

cases = [labeller.LabelCase(f"e{n}", "classification", f"question {n}", (f"answer {n}",), None,
                            "the judge's prompt", None) for n in (1, 2, 3)]
settings = termios.tcgetattr(sys.stdin)
keys = labeller.terminal_keys(sys.stdin)
outcome = labeller.label_cases(cases, write, keys, sys.stdout)
sys.exit(0 if outcome.quit and termios.tcgetattr(sys.stdin) == settings else 1)
"""


@pytest.mark.parametrize("quit_key", ["q", "\x03"])
def test_single_key_presses_in_a_real_terminal(tmp_path: Path, quit_key: str) -> None:
    """Keys without Enter, Ctrl-C a quit like q (not a traceback), and the terminal's settings
    as they were while the keys are still held. The child loads the module from its file: it
    needs nothing else of evalkit, and importing evalkit (MLflow) would take seconds."""
    labels = tmp_path / "labels.txt"
    child = pexpect.spawn(sys.executable, ["-c", _CHILD, str(labels), inspect.getfile(label_cases)],
                          cwd=str(tmp_path), encoding="utf-8", dimensions=(24, 80), timeout=30)
    for shown, key in (("1 of 3", "p"), ("2 of 3", "r"), ("2 of 3", "f"),
                       ("3 of 3", quit_key)):
        child.expect_exact(shown)
        rubric = child.expect_exact(["the judge's prompt", RUBRIC_SHOWN])
        # The rubric in full on the first screen and on r, a pointer to it on the others.
        assert rubric == (0 if (shown, key) in (("1 of 3", "p"), ("2 of 3", "f")) else 1)
        child.expect_exact(KEY_LINE)
        child.send(key)
    child.expect_exact("labelled 2, skipped 0; 2 of 3 entries have a label")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert labels.read_text(encoding="utf-8") == "e1 True\ne2 False\n"
