"""``evalkit dataset import``: a golden dataset from a CSV or JSONL file, every bad row named in
one error, nothing written until all are right, and the result loadable as any dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalkit.dataset import load_dataset
from tests.support.commands import evalkit_command

CAPITALS = """\
id,question,answer,topic,notes
fr,What is the capital of France?,Paris,europe,easy
jp,What is the capital of Japan?,Tokyo,asia,
pe,"What is the capital of Peru, in South America?",Lima,americas,x
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # problems name files relative to the working folder


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_csv_with_string_answers_imports_lints_clean_and_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("answers.csv").write_text(CAPITALS, encoding="utf-8")
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "datasets/capitals",
                           "--input", "question", "--expected", "answer", "--id", "id",
                           "--group", "topic", "--test-types", "functional,smoke") == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["wrote: datasets/capitals (3 entries; schema inferred: input string, "
                   "expected_output string)", "ignored columns: notes",
                   'next: point eval.py at it: DATASET_PATH = "datasets/capitals"']
    assert _files(tmp_path / "datasets") == [
        "capitals", "capitals/README.md", "capitals/data", "capitals/data/fr.json",
        "capitals/data/jp.json", "capitals/data/pe.json", "capitals/dataset.schema.json"]
    assert json.loads(Path("datasets/capitals/data/pe.json").read_text(encoding="utf-8")) == {
        "$schema": "../dataset.schema.json", "test_types": ["functional", "smoke"],
        "input": "What is the capital of Peru, in South America?", "expected_output": "Lima",
        "group": "americas"}
    schema = json.loads(Path("datasets/capitals/dataset.schema.json").read_text("utf-8"))
    assert schema["properties"]["input"] == {"type": "string"}
    assert schema["properties"]["expected_output"]["type"] == "string"
    assert set(schema["properties"]["expected_output"]) == {"type", "$comment"}  # no enum
    assert evalkit_command("lint", "datasets/capitals") == 0
    dataset = load_dataset("datasets/capitals")
    assert [(e.id, e.input, e.expected_output, e.group, e.test_types)
            for e in dataset.entries] == [
        ("fr", "What is the capital of France?", "Paris", "europe", ("functional", "smoke")),
        ("jp", "What is the capital of Japan?", "Tokyo", "asia", ("functional", "smoke")),
        ("pe", "What is the capital of Peru, in South America?", "Lima", "americas",
         ("functional", "smoke"))]


BAD_ROWS = """\
id,question,answer,meta
a1,What is 2+2?,4,"{""level"": 1}"
a2,   ,5,{}
a1,Duplicate id?,x,{}
a3,Bad json,y,{oops
a4,Short row
a5,No answer?,,{}
"""


def test_every_bad_row_is_named_in_one_error_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("bad.csv").write_text(BAD_ROWS, encoding="utf-8")
    assert evalkit_command("dataset", "import", "bad.csv", "--to", "datasets/bad", "--input",
                           "question", "--expected", "answer", "--id", "id",
                           "--group", "meta", "--parse-json", "meta") == 3
    assert capsys.readouterr().err.splitlines() == [
        "error: bad.csv: 8 problem(s); nothing was written",
        "bad.csv:2: meta: must be string, found an object. Fix: make group string",
        "bad.csv:3: question: empty input. Fix: write the input, or remove the row",
        "bad.csv:4: id: id 'a1' is also on line 2. Fix: keep one row per id",
        "bad.csv:5: meta: not valid JSON (Expecting property name enclosed in double quotes at "
        "line 1 column 2). Fix: write the value as JSON (text in double quotes), or leave the "
        "column out of --parse-json",
        "bad.csv:6: answer: missing. Fix: give this row a value for the column",
        "bad.csv:6: meta: missing. Fix: give this row a value for the column",
        "bad.csv:7: meta: must be string, found an object. Fix: make group string",
        "bad.csv:7: answer: rule B: functional needs a non-null expected_output. Fix: give the "
        "output this entry should produce"]
    assert _files(tmp_path) == ["bad.csv"]  # no dataset, no staging folder, no datasets/


def test_a_header_without_a_mapped_column_is_named_with_the_closest_name(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("answers.csv").write_text(CAPITALS, encoding="utf-8")
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "d", "--input",
                           "questions", "--expected", "reply") == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "answers.csv:1: no column 'questions' in the header: did you mean 'question'?",
        "answers.csv:1: no column 'reply' in the header: the columns are id, question, answer, "
        "topic, notes"]
    assert not Path("d").exists()


def test_jsonl_objects_numbers_and_per_row_test_types(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"ticket": "Refund twice?", "channel": "email", "route": {"category": "billing"},
             "types": ["functional"]},
            {"ticket": "Where is my parcel?", "channel": "chat", "route": {"category": "shipping"},
             "types": "functional, smoke"},
            {"ticket": "Same answer each time?", "channel": "chat", "route": None,
             "types": ["repeatability"]}]
    Path("tickets.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                     encoding="utf-8")
    assert evalkit_command("dataset", "import", "tickets.jsonl", "--to", "datasets/tickets",
                           "--input", "ticket", "--input", "channel", "--expected", "route",
                           "--test-types-column", "types") == 0, capsys.readouterr().err
    schema = json.loads(Path("datasets/tickets/dataset.schema.json").read_text("utf-8"))
    assert schema["properties"]["input"] == {
        "type": "object", "required": ["ticket", "channel"],
        "properties": {"ticket": {"type": "string"}, "channel": {"type": "string"}}}
    assert schema["properties"]["expected_output"]["type"] == ["null", "object"]
    entries = {e.input["ticket"]: e for e in load_dataset("datasets/tickets").entries}
    assert entries["Where is my parcel?"].test_types == ("functional", "smoke")
    assert entries["Where is my parcel?"].expected_output == {"category": "shipping"}
    assert entries["Same answer each time?"].expected_output is None
    # ids derive from the input: the same rows in another order give the same ids
    Path("reversed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)),
                                      encoding="utf-8")
    assert evalkit_command("dataset", "import", "reversed.jsonl", "--to", "again", "--input",
                           "ticket", "--input", "channel", "--expected", "route",
                           "--test-types-column", "types") == 0
    assert _files(tmp_path / "again" / "data") == _files(tmp_path / "datasets/tickets/data")


def test_jsonl_bad_lines_and_duplicate_inputs_are_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("rows.jsonl").write_text(
        '{"q": "Hello?", "a": "Hi"}\n\n{"q": "Hello?", "a": "Hey"}\n{"q": 7, "a": "x"}\n'
        '{"a": "no question"}\n{"q": "ok"\n', encoding="utf-8")
    assert evalkit_command("dataset", "import", "rows.jsonl", "--to", "out", "--input", "q",
                           "--expected", "a") == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "rows.jsonl:3: the same input as line 1. Fix: remove the duplicate row, or map an --id "
        "column",
        "rows.jsonl:4: q: an input must be text or an object, found a number. Fix: quote it as "
        "text",
        "rows.jsonl:5: q: missing. Fix: give this row a value for the column",
        "rows.jsonl:6: not valid JSON (Expecting ',' delimiter at column 11): repair the JSON "
        "syntax"]
    assert _files(tmp_path) == ["rows.jsonl"]


def test_an_existing_dataset_is_refused_unless_added_to(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("answers.csv").write_text(CAPITALS, encoding="utf-8")
    mapping = ("--input", "question", "--expected", "answer", "--id", "id")
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "ds", *mapping) == 0
    before = {p: p.read_bytes() for p in Path("ds").rglob("*") if p.is_file()}
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "ds", *mapping) == 2
    assert "--to ds exists and is not empty" in capsys.readouterr().err
    # --add: an id the dataset has already is named, and the dataset is left as it was
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "ds", "--add",
                           *mapping) == 3
    assert "answers.csv:2: id: id 'fr' exists in ds already" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in Path("ds").rglob("*") if p.is_file()} == before
    Path("more.csv").write_text("id,question,answer\nit,Capital of Italy?,Rome\n",
                                encoding="utf-8")
    assert evalkit_command("dataset", "import", "more.csv", "--to", "ds", "--add",
                           *mapping) == 0
    assert [e.id for e in load_dataset("ds").entries] == ["fr", "it", "jp", "pe"]
    assert Path("ds/README.md").read_bytes() == before[Path("ds/README.md")]
    assert not list(tmp_path.glob(".ds.*"))  # no staging or previous folder left behind
    # an entry of the dataset added to that breaks a rule is named by its own file
    Path("ds/data/jp.json").write_text('{"$schema": "../dataset.schema.json", "test_types": '
                                       '["functional"], "input": "x", "expected_output": null}',
                                       encoding="utf-8")
    Path("late.csv").write_text("id,question,answer\nuk,Capital of the UK?,London\n",
                                encoding="utf-8")
    assert evalkit_command("dataset", "import", "late.csv", "--to", "ds", "--add",
                           *mapping) == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "ds/data/jp.json: /expected_output: violates dataset.schema.json: None is not of type "
        "'string'. Fix: make the entry satisfy the dataset's own schema, or correct the schema",
        "ds/data/jp.json: /expected_output: rule B: functional needs a non-null "
        "expected_output. Fix: give the output this entry should produce"]
    assert not Path("ds/data/uk.json").exists()


def test_a_given_schema_is_applied_and_its_violations_named_by_row(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("answers.csv").write_text(CAPITALS, encoding="utf-8")
    Path("schema.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"expected_output": {"enum": ["Paris", "Tokyo"]}}}), encoding="utf-8")
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "ds", "--input",
                           "question", "--expected", "answer", "--schema", "schema.json") == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "answers.csv:4: answer: violates dataset.schema.json: 'Lima' is not one of ['Paris', "
        "'Tokyo']. Fix: make the entry satisfy the dataset's own schema, or correct the schema"]
    assert not Path("ds").exists()


def test_help_names_the_mapping_options_and_a_misspelt_type_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert evalkit_command("dataset", "import", "--help") == 0
    text = capsys.readouterr().out
    for option in ("--to DIR", "--input COL", "--expected COL", "--id COL", "--group COL",
                   "--test-types TYPES", "--test-types-column COL", "--parse-json COL",
                   "--schema FILE", "--add"):
        assert option in text, option
    assert evalkit_command("--help") == 0
    assert "dataset" in capsys.readouterr().out
    assert evalkit_command("dataset", "import", "answers.csv", "--to", "ds", "--input", "q",
                           "--expected", "a", "--test-types", "functional,smok") == 2
    assert "unknown test type 'smok'" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["mlflow-dataset:no-such", "traces:no/such"])
def test_an_mlflow_source_without_a_store_creates_none_and_prints_nothing_of_mlflows(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        source: str) -> None:
    """Reading must not create a store: MLflow would make an empty mlflow.db (printing its
    table creation) only to find nothing in it."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert evalkit_command("dataset", "import", source, "--to", "out") == 2
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", (
        f"error: there is no MLflow store at {tmp_path / 'mlflow.db'} to import from "
        "(MLFLOW_TRACKING_URI is not set): set MLFLOW_TRACKING_URI to the store that holds "
        "the dataset or traces, or run the command in the folder whose mlflow.db holds them\n"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///stores/team.db")
    assert evalkit_command("dataset", "import", source, "--to", "out") == 2
    assert "no MLflow store at stores/team.db to import from (MLFLOW_TRACKING_URI names " \
           "sqlite:///stores/team.db)" in capfd.readouterr().err
    for folder_store in ("./mlruns", f"file://{tmp_path / 'mlruns'}", "file:./mlruns"):
        monkeypatch.setenv("MLFLOW_TRACKING_URI", folder_store)
        assert evalkit_command("dataset", "import", source, "--to", "out") == 2
        assert "to import from (MLFLOW_TRACKING_URI names " in capfd.readouterr().err
    assert _files(tmp_path) == []  # no store, no lock beside it, no folder for one


def test_the_id_derived_from_an_object_input_is_pinned_and_ignores_key_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --id an entry's id is "item-" and the first 10 hex digits of the SHA-256 of its
    input as canonical JSON (keys sorted): pinned here, since a change would give every
    imported dataset new ids (and orphan the labels given under the old ones)."""
    row = {"q": {"question": "What is the capital of France?", "lang": "en"}, "a": "Paris"}
    Path("one.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    mapping = ("--input", "q", "--expected", "a")
    assert evalkit_command("dataset", "import", "one.jsonl", "--to", "ds", *mapping) == 0
    assert _files(tmp_path / "ds" / "data") == ["item-8f0b350e04.json"]
    # the same object, its keys reordered: the same entry, so a duplicate, never a second one
    reordered = {"q": {"lang": "en", "question": "What is the capital of France?"},
                 "a": "Paris"}
    Path("both.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(reordered) + "\n",
                                  encoding="utf-8")
    capsys.readouterr()
    assert evalkit_command("dataset", "import", "both.jsonl", "--to", "ds2", *mapping) == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "both.jsonl:2: the same input as line 1. Fix: remove the duplicate row, or map an --id "
        "column"]
    Path("again.jsonl").write_text(json.dumps(reordered) + "\n", encoding="utf-8")
    assert evalkit_command("dataset", "import", "again.jsonl", "--to", "ds", "--add",
                           *mapping) == 3
    assert "again.jsonl:1: id 'item-8f0b350e04' exists in ds" in capsys.readouterr().err
    assert _files(tmp_path / "ds" / "data") == ["item-8f0b350e04.json"]


def test_a_tool_calls_column_becomes_the_expected_trajectory_and_is_linted(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"q": "Book Rome", "a": "booked", "calls": [
                {"name": "lookup", "arguments": {"city": "Rome"}}, {"name": "book"}]},
            {"q": "Say hi", "a": "hi", "calls": []},
            {"q": "Book Oslo", "a": "booked", "calls": [{"tool": "lookup"}]}]
    Path("agent.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    command = ("dataset", "import", "agent.jsonl", "--input", "q", "--expected", "a",
               "--tool-calls", "calls")
    assert evalkit_command(*command, "--to", "bad") == 3
    assert capsys.readouterr().err.splitlines()[1:] == [
        "agent.jsonl:3: calls: required field is missing. Fix: add \"name\"",
        "agent.jsonl:3: calls: a tool call has unknown key(s) 'tool'. Fix: use only name, "
        "arguments"]
    assert not Path("bad").exists()

    Path("agent.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]), "utf-8")
    assert evalkit_command(*command, "--to", "agent") == 0, capsys.readouterr().err
    trajectories = {e.input: e.expected_trajectory for e in load_dataset("agent").entries}
    assert trajectories == {"Book Rome": {"tool_calls": rows[0]["calls"]},
                            "Say hi": {"tool_calls": []}}
    assert "expected tool calls from `calls`" in Path("agent/README.md").read_text("utf-8")
