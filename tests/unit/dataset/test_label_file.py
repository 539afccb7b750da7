"""A file of people's labels (``evalkit label RUN_ID --from FILE``): CSV or JSONL read to labels,
or one error naming every bad row, line and field, so that nothing is imported from a bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import EvalkitError, LabelFileInvalid
from evalkit.cli._exit import ExitStatus, exit_status_of
from evalkit.dataset import read_label_file
from evalkit.dataset._rows import RowProblem
from evalkit.records import HumanLabel

KNOWN = {"functional": ["e1", "e2", "entry-10"], "smoke": ["e1"]}
HEADER = "entry_id,type,verdict,reviewer,comment\n"


def read(path: Path, content: str | bytes) -> tuple[HumanLabel, ...]:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return read_label_file(path, KNOWN, "ann")


def problems(path: Path, content: str | bytes) -> list[tuple[int, str | None, str]]:
    with pytest.raises(LabelFileInvalid) as raised:
        read(path, content)
    return [(p.line, p.field, p.message) for p in raised.value.problems]


def test_a_csv_reads_to_labels_in_file_order(tmp_path: Path) -> None:
    content = (" Entry_ID ,TYPE, Verdict ,Reviewer,comment\n"
               "e2,functional,FAIL,bob,\"too long, and rude\"\n"
               "e1,smoke,pass,,\n"
               " e1 , functional , yes , , \n")
    assert read(tmp_path / "labels.csv", content) == (
        HumanLabel("e2", "functional", False, "bob", 0, "too long, and rude"),
        HumanLabel("e1", "smoke", True, "ann", 0, None),
        HumanLabel("e1", "functional", True, "ann", 0, None),
    )


def test_a_jsonl_reads_to_labels_in_file_order(tmp_path: Path) -> None:
    content = ('{"entry_id": "e1", "type": "functional", "verdict": true, "reviewer": "bob"}\n'
               "\n"
               '{"entry_id": "e2", "type": "functional", "verdict": "Failed", "comment": ""}\n'
               '{"entry_id": "e1", "type": "smoke", "verdict": 0, "reviewer": null,'
               ' "comment": "off topic"}\n')
    assert read(tmp_path / "labels.jsonl", content) == (
        HumanLabel("e1", "functional", True, "bob", 0, None),
        HumanLabel("e2", "functional", False, "ann", 0, None),
        HumanLabel("e1", "smoke", False, "ann", 0, "off topic"),
    )


def test_an_integer_entry_id_in_jsonl_is_its_text(tmp_path: Path) -> None:
    known = {"functional": ["7"]}
    (tmp_path / "labels.jsonl").write_text('{"entry_id": 7, "type": "functional", "verdict": 1}')
    assert read_label_file(tmp_path / "labels.jsonl", known, "ann") == (
        HumanLabel("7", "functional", True, "ann"),)


def test_a_csv_saved_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    content = "entry_id,type,verdict\ne1,smoke,fail\n".encode("utf-8-sig")
    assert read(tmp_path / "labels.csv", content) == (HumanLabel("e1", "smoke", False, "ann"),)


def test_a_value_quoted_across_lines_keeps_the_line_numbers_of_later_rows(tmp_path: Path) -> None:
    content = HEADER + 'e1,smoke,pass,,"first line\nsecond line"\ne2,functional,maybe\n'
    assert problems(tmp_path / "labels.csv", content) == [
        (4, "verdict", "'maybe' is neither pass nor fail: write pass or fail")]


@pytest.mark.parametrize(("verdict", "message"), [
    ("maybe", "'maybe' is neither pass nor fail: write pass or fail"),
    ("", "empty or missing: write pass or fail"),
    ("  ", "empty or missing: write pass or fail"),
])
def test_a_verdict_that_is_neither_pass_nor_fail_is_named(tmp_path: Path, verdict: str,
                                                          message: str) -> None:
    content = f"{HEADER}e1,smoke,pass\ne2,functional,{verdict}\n"
    assert problems(tmp_path / "labels.csv", content) == [(3, "verdict", message)]


def test_each_missing_required_field_is_a_problem_of_its_own(tmp_path: Path) -> None:
    assert problems(tmp_path / "labels.csv", HEADER + " ,,,bob,why\n") == [
        (2, "entry_id", "empty or missing: write the id of the labelled entry"),
        (2, "type", "empty or missing: write the test type labelled"),
        (2, "verdict", "empty or missing: write pass or fail"),
    ]
    assert problems(tmp_path / "labels.jsonl", '{"reviewer": "bob"}\n') == [
        (1, "entry_id", "empty or missing: write the id of the labelled entry"),
        (1, "type", "empty or missing: write the test type labelled"),
        (1, "verdict", "empty or missing: write pass or fail"),
    ]


def test_an_unknown_type_suggests_the_closest_or_lists_them_all(tmp_path: Path) -> None:
    content = HEADER + "e1,functonal,pass\ne1,judge,pass\n"
    assert problems(tmp_path / "labels.csv", content) == [
        (2, "type", "'functonal' is not a known test type: did you mean 'functional'?"),
        (3, "type", "'judge' is not a known test type: use one of 'functional', 'smoke'"),
    ]


def test_an_entry_the_type_did_not_score_is_named(tmp_path: Path) -> None:
    content = HEADER + "entry-1,functional,pass\ne2,smoke,pass\n"
    assert problems(tmp_path / "labels.csv", content) == [
        (2, "entry_id", "no 'functional' entry has the id 'entry-1': did you mean 'entry-10'?"),
        (3, "entry_id", "no 'smoke' entry has the id 'e2': use the id of a 'smoke' entry"),
    ]


def test_the_same_label_twice_is_named_on_its_second_line(tmp_path: Path) -> None:
    content = HEADER + "e1,smoke,pass\ne1,smoke,fail,bob\ne1,smoke,fail, ann \n"
    assert problems(tmp_path / "labels.csv", content) == [
        (4, None, "'e1' of 'smoke' by 'ann' is already labelled on line 2: keep one")]


def test_unknown_and_repeated_columns_are_named(tmp_path: Path) -> None:
    content = "entry_id,type,verdict,verdit,notes,Type\ne1,smoke,pass,,,\n"
    assert problems(tmp_path / "labels.csv", content) == [
        (1, None, "column 'type' appears twice: keep one"),
        (1, None, "unknown column 'verdit': did you mean 'verdict'?"),
        (1, None, "unknown column 'notes': the columns are entry_id, type, verdict, reviewer, "
                  "comment"),
    ]


def test_a_csv_without_its_header_is_told_to_name_the_columns(tmp_path: Path) -> None:
    found = problems(tmp_path / "labels.csv", "e1,smoke,pass\n")
    assert found[-1] == (1, None, "the header lacks entry_id, type, verdict: the first line must "
                                  "name the columns, e.g. entry_id,type,verdict,reviewer,comment")
    assert [line for line, _, _ in found] == [1, 1, 1, 1]


def test_cells_beyond_the_header_are_a_problem(tmp_path: Path) -> None:
    content = "entry_id,type,verdict,comment\ne1,smoke,pass,short, and rude\ne2,functional,no,,\n"
    assert problems(tmp_path / "labels.csv", content) == [
        (2, None, "5 cells under 4 columns: quote a value that holds a comma, or name the extra "
                  "column")]


def test_a_csv_that_cannot_be_parsed_is_named_at_its_line(tmp_path: Path) -> None:
    content = HEADER + 'e1,smoke,pass\ne2,functional,"pass\n'
    assert problems(tmp_path / "labels.csv", content) == [
        (3, None, "not valid CSV (unexpected end of data): quote a value that holds a comma, "
                  "quote or line break, and double the quotes inside it")]


def test_jsonl_lines_that_are_no_label_object_are_named(tmp_path: Path) -> None:
    content = ('{"entry_id": "e1", "type": "smoke", "verdict": "pass"\n'
               '["e1", "smoke", "pass"]\n'
               '{"entry_id": "e1", "type": "smoke", "verdict": "pass", "reviwer": "bob"}\n'
               '{"entry_id": true, "type": ["smoke"], "verdict": "pass"}\n'
               '{"entry_id": "e\\ud800", "type": "functional", "verdict": "no"}\n')
    assert problems(tmp_path / "labels.jsonl", content) == [
        (1, None, "not valid JSON (Expecting ',' delimiter at column 54): repair the JSON syntax"),
        (2, None, "a line must be a JSON object, found an array: write one object per line"),
        (3, None, "unknown key 'reviwer': did you mean 'reviewer'?"),
        (4, "entry_id", "must be a string, found a boolean: quote it"),
        (4, "type", "must be a string, found an array: quote it"),
        (5, "entry_id", "string holds an unpaired surrogate escape \\ud800, which is not Unicode "
                       "text and cannot be written as UTF-8: remove the escape, or give both "
                       "halves of the pair (e.g. \\ud83d\\ude00)"),
    ]


@pytest.mark.parametrize(("name", "content"), [
    ("labels.csv", ""),
    ("labels.csv", HEADER),
    ("labels.csv", HEADER + ",,,,\n\n"),
    ("labels.jsonl", "\n  \n"),
])
def test_a_file_without_labels_is_a_problem(tmp_path: Path, name: str, content: str) -> None:
    assert problems(tmp_path / name, content) == [
        (0, None, "holds no labels: write one row per label")]


def test_a_file_that_cannot_be_read_is_one_whole_file_problem(tmp_path: Path) -> None:
    assert problems(tmp_path / "labels.txt", HEADER) == [
        (0, None, "'labels.txt' is neither .csv nor .jsonl: name it .csv (with a header row) or "
                  ".jsonl (one JSON object per line)")]
    assert problems(tmp_path / "latin1.csv", HEADER.encode() + b"e1,smoke,pass,,caf\xe9\n") == [
        (0, None, "not UTF-8 (invalid continuation byte at byte 57): save it as UTF-8")]
    with pytest.raises(LabelFileInvalid) as raised:
        read_label_file(tmp_path / "missing.csv", KNOWN, "ann")
    assert str(raised.value) == ("missing.csv: 1 problem(s); nothing was imported\n"
                                 "missing.csv: cannot be read (No such file or directory): "
                                 "check the path")


def test_every_bad_row_is_reported_in_one_error(tmp_path: Path) -> None:
    content = (HEADER + "e1,smoke,pass\ne1,smoke,maybe,bob\ne9,functional,pass\n"
               "e2,functional,no\n,x,y\n")
    with pytest.raises(LabelFileInvalid) as raised:
        read(tmp_path / "labels.csv", content)
    error = raised.value
    assert [(p.line, p.field) for p in error.problems] == [
        (3, "verdict"), (4, "entry_id"), (6, "entry_id"), (6, "type"), (6, "verdict")]
    assert str(error) == (
        "labels.csv: 5 problem(s); nothing was imported\n"
        "labels.csv:3: verdict: 'maybe' is neither pass nor fail: write pass or fail\n"
        "labels.csv:4: entry_id: no 'functional' entry has the id 'e9': use the id of a "
        "'functional' entry\n"
        "labels.csv:6: entry_id: empty or missing: write the id of the labelled entry\n"
        "labels.csv:6: type: 'x' is not a known test type: use one of 'functional', 'smoke'\n"
        "labels.csv:6: verdict: 'y' is neither pass nor fail: write pass or fail")


@pytest.mark.parametrize(("rows", "last"), [
    (50, "labels.csv:51: verdict: 'maybe' is neither pass nor fail: write pass or fail"),
    (51, "... and 1 more"),
    (60, "... and 10 more"),
])
def test_the_message_lists_fifty_problems_and_counts_the_rest(tmp_path: Path, rows: int,
                                                              last: str) -> None:
    bad_rows = "".join(f"e1,smoke,maybe,reviewer{i}\n" for i in range(rows))
    with pytest.raises(LabelFileInvalid) as raised:
        read(tmp_path / "labels.csv", HEADER + bad_rows)
    lines = str(raised.value).splitlines()
    assert len(raised.value.problems) == rows
    assert lines[0] == f"labels.csv: {rows} problem(s); nothing was imported"
    assert len(lines) == (51 if rows == 50 else 52)
    assert lines[-1] == last


def test_a_problem_renders_its_file_line_and_field() -> None:
    assert RowProblem(4, "verdict", "'a\x1bb' is neither").render("labels.csv") == \
        "labels.csv:4: verdict: 'a\\u001bb' is neither"
    assert RowProblem(3, None, "twice").render(Path("l.csv")) == "l.csv:3: twice"
    assert RowProblem(0, None, "empty").render("l.csv") == "l.csv: empty"


def test_a_bad_label_file_exits_with_the_usage_status(tmp_path: Path) -> None:
    with pytest.raises(EvalkitError) as raised:
        read(tmp_path / "labels.csv", HEADER)
    assert isinstance(raised.value, LabelFileInvalid)
    assert exit_status_of(raised.value) == ExitStatus.USAGE == 2


def test_stale_ids_get_a_bounded_number_of_suggestions_and_the_rest_are_counted(
        tmp_path: Path) -> None:
    """Each "did you mean" compares an id with every entry's: a file whose ids all went stale
    (entries renamed) gets one for its first few rows only, and the count of the rest first,
    with the likely cause (benchmarks/stale_labels.py measures the time)."""
    known = {"functional": [f"billing/ticket-{i:03d}" for i in range(200)]}
    path = tmp_path / "labels.csv"
    path.write_text(HEADER + "".join(f"billing/old-ticket-{i:03d},functional,pass,,\n"
                                     for i in range(120)), encoding="utf-8")
    with pytest.raises(LabelFileInvalid) as raised:
        read_label_file(path, known, "ann")
    found = raised.value.problems
    assert len(found) == 121 and found[0] == RowProblem(0, None, (
        "120 rows name an entry id the dataset does not have (the closest id is suggested for "
        "the first 5 only): if the entries were renamed or the labels were written for another "
        "dataset, write the labels again against this one's ids"))
    assert [p.message for p in found[1:6]] == [
        f"no 'functional' entry has the id 'billing/old-ticket-{i:03d}': did you mean "
        f"'billing/ticket-{i:03d}'?" for i in range(5)]
    assert [p.message for p in found[6:]] == [
        f"no 'functional' entry has the id 'billing/old-ticket-{i:03d}': use the id of a "
        "'functional' entry" for i in range(5, 120)]
    message = str(raised.value).splitlines()
    assert message[0] == "labels.csv: 121 problem(s); nothing was imported"
    assert message[1].startswith("labels.csv: 120 rows name an entry id")
    assert message[-1] == "... and 71 more" and sum("did you mean" in m for m in message) == 5
    # a few unknown ids: each gets its suggestion and no count
    path.write_text(HEADER + "billing/tiket-042,functional,pass,,\n", encoding="utf-8")
    with pytest.raises(LabelFileInvalid) as raised:
        read_label_file(path, known, "ann")
    assert [p.message for p in raised.value.problems] == [
        "no 'functional' entry has the id 'billing/tiket-042': did you mean "
        "'billing/ticket-042'?"]
