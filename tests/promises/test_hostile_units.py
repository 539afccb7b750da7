"""The pieces behind the hostile corpus, in process: CALL_TIMEOUT validation, the call
wrapper's rendering, raw results with a torn last line, the run lock, and the exact scorer
on pathological JSON strings."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, EvalConfig, EvalkitError
from evalkit._secrets import Redactor
from evalkit.calls import CallWindow, Selection, plan_run
from evalkit.calls._call import MAX_MESSAGE_CHARS, Call, error_message, plain_output
from evalkit.cli._common import TRACEBACK_VARIABLE, guarded
from evalkit.dataset import load_dataset
from evalkit.records import CallRecord
from evalkit.scorers._exact import matches
from evalkit.tracking import RawResultsLog, read_raw_results
from evalkit.tracking._raw import lock_run, repair_raw_results
from tests.support.builders import entry, write_dataset

BASE = {"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "ds", "EVAL_MIN_ACCURACY": 0.5}


@pytest.mark.parametrize("value", [0, -1, True, "10", math.nan, math.inf, None])
def test_call_timeout_must_be_a_positive_finite_number(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"CALL_TIMEOUT=.* must be a positive, finite number"):
        EvalConfig.from_constants({**BASE, "CALL_TIMEOUT": value}, "eval.py")


def test_call_timeout_defaults_to_ten_minutes_and_is_logged_when_declared() -> None:
    assert EvalConfig.from_constants(BASE, "eval.py").call_timeout == 600
    config = EvalConfig.from_constants({**BASE, "CALL_TIMEOUT": 2.5}, "eval.py")
    assert config.call_timeout == 2.5 and config.params()["CALL_TIMEOUT"] == "2.5"
    with pytest.raises(ConfigError, match="did you mean CALL_TIMEOUT"):
        EvalConfig.from_constants({**BASE, "CALL_TIMEOUTS": 3}, "eval.py")


def test_error_messages_render_whatever_the_exception_does() -> None:
    class Loud(Exception):
        def __str__(self) -> str:
            raise RuntimeError

    redactor = Redactor((("MY_TOKEN", "s3cr3t-value"),))
    assert error_message(Loud(), redactor) == \
        "Loud: <the message could not be rendered: RuntimeError>"
    assert error_message(ValueError("a \udc80 b"), redactor) == "ValueError: a \\udc80 b"
    assert error_message(ValueError("k=s3cr3t-value"), redactor) == \
        "ValueError: k=[REDACTED:MY_TOKEN]"
    long = error_message(ValueError("x" * 10_000), redactor)
    assert long.startswith("ValueError: xxx") and long.endswith(
        f"... ({10_000 + len('ValueError: ') - MAX_MESSAGE_CHARS} more characters cut)")


def test_plain_output_keeps_json_and_names_what_it_refuses() -> None:
    assert plain_output({"a": [1, 2.5, None, True]}) == ({"a": [1, 2.5, None, True]}, None)
    assert plain_output((1, 2)) == ([1, 2], None)  # a tuple is a JSON array
    deep: Any = "x"
    for _ in range(100):
        deep = [deep]
    assert plain_output(deep)[1] is None  # 100 lists deep: the limit
    assert plain_output([deep])[1] == "nested deeper than 100 levels"


def raw_file(tmp_path: Path, *records: CallRecord, tail: str = "") -> Path:
    path = tmp_path / "raw-results.jsonl"
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in records) + tail)
    return path


def test_a_torn_last_line_is_dropped_and_repaired(tmp_path: Path) -> None:
    kept = CallRecord("e1", 0, "a", None, 1.0)
    path = raw_file(tmp_path, kept, tail='{"entry_id": "e2", "rep')
    raw = repair_raw_results(path)
    assert raw.records == [kept] and raw.torn == '{"entry_id": "e2", "rep'
    assert path.read_text() == json.dumps(kept.to_json()) + "\n"  # appending goes on cleanly
    assert read_raw_results(path).torn is None


def test_a_torn_multibyte_character_is_a_torn_line_too(tmp_path: Path) -> None:
    kept = CallRecord("e1", 0, "a", None, 1.0)
    path = raw_file(tmp_path, kept)
    path.write_bytes(path.read_bytes() + '{"output": "é'.encode()[:-1])
    assert read_raw_results(path).records == [kept]


def test_a_damaged_line_before_the_last_is_refused_naming_it(tmp_path: Path) -> None:
    path = raw_file(tmp_path, CallRecord("e1", 0, "a", None, 1.0), tail="garbage\n")
    path.write_text(path.read_text() + json.dumps(CallRecord("e2", 0, "a", None, 1).to_json())
                    + "\n")
    with pytest.raises(EvalkitError, match=r"raw-results.jsonl: line 2 is not a call record"):
        read_raw_results(path)


def test_a_second_process_on_the_same_run_is_refused(tmp_path: Path) -> None:
    # flock locks belong to the open file: a second open, as another process makes, fails
    first = lock_run(tmp_path / "run", "r1")
    with pytest.raises(ConfigError, match="run r1 is being worked on by another process"):
        lock_run(tmp_path / "run", "r1")
    first.release()
    lock_run(tmp_path / "run", "r1").release()  # free again once the first one let go


def test_a_hung_call_is_recorded_as_a_timeout_and_the_others_go_on(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", {f"e{i}": entry("functional") for i in range(4)})
    config = EvalConfig.from_constants({**BASE, "DATASET_PATH": str(dataset)}, "eval.py")
    plan = plan_run(load_dataset(dataset), Selection("functional"), config)
    release = threading.Event()

    def component(e: Any, call: Call) -> str:
        if e.id == "e1":
            release.wait()
        return "a"

    with RawResultsLog(tmp_path / "raw.jsonl") as log:
        outputs = CallWindow.of(component, {}, Redactor(), concurrency=2,
                                call_timeout=0.5).run(plan, log)
    release.set()
    errors = {o.entry.id: o.first.error for o in outputs}
    assert errors["e1"].startswith("CallTimeout: no result within CALL_TIMEOUT = 0.5 s")
    assert [errors[e] for e in ("e0", "e2", "e3")] == [None, None, None]
    assert [r.entry_id for r in read_raw_results(tmp_path / "raw.jsonl").records] == \
        ["e0", "e1", "e2", "e3"]


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"a":' * 5000 + "1" + "}" * 5000,
                                  "1" * 5000, "1e999", "-" * 10, "\ud800"])
def test_exact_scores_pathological_json_strings_as_a_miss(text: str) -> None:
    assert matches(text, {"a": 1}) is False


def test_an_unexpected_error_is_one_redacted_line_without_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "tok-abcdef123456")
    monkeypatch.delenv(TRACEBACK_VARIABLE, raising=False)

    def broken() -> int:
        raise KeyError("tok-abcdef123456 at http://ann:pw-Secret1@127.0.0.1:1/api")

    assert guarded(broken) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: unexpected KeyError: ")
    assert "tok-abcdef123456" not in err and "[REDACTED:SERVICE_TOKEN]" in err
    assert "pw-Secret1" not in err and "ann:***@127.0.0.1" in err
    monkeypatch.setenv(TRACEBACK_VARIABLE, "1")
    assert guarded(broken) == 4
    assert "Traceback" in capsys.readouterr().err
