"""Hostile datasets git cannot carry portably, built at test time, each linted and run through
eval.py's command line (in-process).

Symlinks that dangle, loop, point at a folder or outside the dataset; named pipes (a read of one
blocks for ever, so a test that passes proves the file was never opened); a ``$ref`` to a local
server that accepts connections and never answers (its accept count proves lint never
connected). Each case: a named violation (file, pointer, fix), no traceback, exit 3, no call,
no MLflow run. The control: a symlink that stays inside the dataset is followed and called.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import evalkit
from evalkit.tracking import Tracker
from tests.promises.lint_corpus_expected import Expected
from tests.support.builders import config_for, entry, write_dataset
from tests.support.lint import (
    EvalDone,
    assert_listed,
    assert_nothing_run,
    assert_violations,
    run_eval_in_process,
    violation_lines,
)
from tests.support.servers import SilentServer

S = "dataset.schema.json"


def _base(tmp_path: Path) -> Path:
    """A valid dataset (one functional entry) in tmp_path/dataset; the cases add one defect."""
    (tmp_path / "outside").mkdir()
    return write_dataset(tmp_path / "dataset", {"ok": entry("functional")})


def _pipe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _schema_ref(root: Path, ref: str) -> None:
    (root / S).write_text(json.dumps({"type": "object",
                                      "properties": {"input": {"$ref": ref}}}), encoding="utf-8")


def dangling(root: Path) -> list[Expected]:
    (root / "data" / "gone.json").symlink_to("nowhere.json")
    return [("data/gone.json", "", "dangling symlink to 'nowhere.json'")]


def looping(root: Path) -> list[Expected]:
    (root / "data" / "a.json").symlink_to("b.json")
    (root / "data" / "b.json").symlink_to("a.json")
    return [("data/a.json", "", "symlink loop"), ("data/b.json", "", "symlink loop")]


def to_folder(root: Path) -> list[Expected]:
    write_dataset(root / "shared", {"x": entry("functional")})
    (root / "data" / "sub.json").symlink_to(root / "shared" / "data")
    return [("data/sub.json", "", "a symlink to a folder, not followed for an entry file")]


def symlinked_folder(root: Path) -> list[Expected]:
    write_dataset(root / "shared", {"x": entry("functional")})
    (root / "data" / "more").symlink_to(Path("..", "shared", "data"))
    return [("data/more", "", "a symlink to a folder, not followed for a folder of entries")]


def to_outside(root: Path) -> list[Expected]:
    (root / "data" / "leak.json").symlink_to(_pipe(root.parent / "outside" / "leak.json"))
    return [("data/leak.json", "", "symlink to a file outside the dataset folder (not read)")]


def data_to_outside(root: Path) -> list[Expected]:
    (root / "data").rename(root.parent / "outside" / "data")
    (root / "data").symlink_to(root.parent / "outside" / "data")
    return [("data", "", "a symlink to a folder outside the dataset folder (not read)")]


def name_not_utf8(root: Path) -> list[Expected]:
    (root / "data" / os.fsdecode(b"caf\xe9.json")).write_text(json.dumps(entry("functional")))
    return [("data/caf\\udce9.json", "", "the file name is not UTF-8")]


def pipe_entry(root: Path) -> list[Expected]:
    _pipe(root / "data" / "pipe.json")
    return [("data/pipe.json", "", "not a regular file")]


def schema_to_outside(root: Path) -> list[Expected]:
    (root / S).unlink()
    (root / S).symlink_to(_pipe(root.parent / "outside" / S))
    return [(S, "", "dataset.schema.json is a symlink to a file outside the dataset folder")]


def ref_file_outside(root: Path) -> list[Expected]:
    _schema_ref(root, _pipe(root.parent / "outside" / "text.json").as_uri())
    return [(S, "/properties/input/$ref", "points outside the dataset folder")]


CASES: dict[str, Callable[[Path], list[Expected]]] = {
    f.__name__: f for f in (dangling, looping, to_folder, symlinked_folder, to_outside,
                            data_to_outside, name_not_utf8, pipe_entry, schema_to_outside,
                            ref_file_outside)}


def _assert_refused(tmp_path: Path, done: EvalDone, expected: list[Expected]) -> None:
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert_listed(done.stderr, "dataset/", expected)
    assert len(violation_lines(done.stderr)) == len(expected), done.stderr
    assert "no component was called and no MLflow run was created" in done.stderr
    assert_nothing_run(tmp_path, done)


@pytest.mark.parametrize("case", sorted(CASES))
def test_lint_names_the_hostile_file(case: str, tmp_path: Path) -> None:
    root = _base(tmp_path)
    expected = CASES[case](root)
    assert_violations(evalkit.lint_dataset(root).violations, root, expected)


@pytest.mark.parametrize("case", sorted(CASES))
def test_eval_refuses_the_hostile_dataset(case: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = _base(tmp_path)
    expected = CASES[case](root)
    _assert_refused(tmp_path, run_eval_in_process(capsys, root.relative_to(tmp_path), "--type=all"),
                    expected)


def test_ref_to_a_silent_server_fails_fast_without_connecting(
        tmp_path: Path, silent_server: SilentServer, capsys: pytest.CaptureFixture[str]) -> None:
    """Were lint to fetch the $ref, it would hang on the server (the test fails when eval.py
    has not returned in 60 s) or at least be counted by it."""
    root = _base(tmp_path)
    ref = f"http://127.0.0.1:{silent_server.port}/text.schema.json"
    _schema_ref(root, ref)
    expected = [(S, "/properties/input/$ref", f"$ref {ref!r} points to the network")]
    finished: list[EvalDone] = []
    worker = threading.Thread(target=lambda: finished.append(
        run_eval_in_process(capsys, root.relative_to(tmp_path), "--type=all")), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert finished, "eval.py hung: lint fetched the $ref from the silent server"
    _assert_refused(tmp_path, finished[0], expected)
    assert_violations(evalkit.lint_dataset(root).violations, root, expected)
    assert silent_server.accepted == 0
    with socket.create_connection(("127.0.0.1", silent_server.port), timeout=5):
        pass  # the server does accept, so a fetch would have been seen
    for _ in range(100):
        if silent_server.accepted:
            break
        time.sleep(0.05)
    assert silent_server.accepted == 1


def test_symlink_inside_the_dataset_is_followed_and_called(tmp_path: Path,
                                                           tracker: Tracker) -> None:
    root = _base(tmp_path)
    write_dataset(root / "shared", {"real": entry("functional")})
    (root / "data" / "alias.json").symlink_to(Path("..", "shared", "data", "real.json"))
    loaded = evalkit.load_dataset(root)
    assert [e.id for e in loaded.entries] == ["alias", "ok"]
    calls: list[str] = []
    config = config_for(tmp_path, root)
    outcome = evalkit.evaluate(config, lambda e, c: calls.append(e.id) or "a",
                               evalkit.Selection("functional"),
                               evalkit.RunContext(tracker=tracker, runs_dir=tmp_path / "runs"))
    assert sorted(calls) == ["alias", "ok"]
    assert outcome.passed
    assert [r.run_id for r in tracker.reader.runs(config.experiment_name)] == [outcome.run_id]


def test_refs_within_the_schema_the_envelope_and_the_metaschemas_resolve(
        tmp_path: Path) -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "$defs": {"text": {"type": "string"},
                  "embedded": {"$id": "urn:example:embedded", "type": "string"}},
        "properties": {
            "input": {"$ref": "#/$defs/text"},
            "group": {"$ref": "urn:example:embedded"},
            "envelope_copy": {"$ref": "https://evalkit.dev/schemas/entry-envelope.json"},
            "a_schema": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    root = write_dataset(tmp_path / "ds", {"ok": entry("functional", group="g")}, schema)
    assert evalkit.lint_dataset(root).ok
    bad = write_dataset(tmp_path / "bad", {"ok": entry("functional", input=3)}, schema)
    assert [(v.pointer, v.message) for v in evalkit.lint_dataset(bad).violations] == [
        ("/input", "must be string or object, found a number"),
        ("/input", "violates dataset.schema.json: 3 is not of type 'string'")]


def test_a_boolean_schema_has_no_refs_to_check(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds", {"ok": entry("functional")}, True)  # type: ignore
    assert evalkit.lint_dataset(root).ok
