"""What each run records about what defines the component, and the "What differs" opening of
``evalkit compare``.

Runs in memory, compared in this process; git checkouts and the prompt registry of a real
local store are tests/e2e/test_what_changed_store.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import mlflow
import pytest

from evalkit import ConfigError, EvalConfig, RunContext, Selection, evaluate
from evalkit.records import names
from evalkit.review import Difference
from evalkit.review._differences import RecordedSource, differences
from evalkit.tracking import Tracker, source_state
from evalkit.tracking._source import component_source_sha256
from tests.support.builders import RecordingComponent, config_for, entry, write_dataset
from tests.support.commands import evalkit_command

TERSE = "You route support tickets.\nAnswer with one word.\nNever apologise."
CHATTY = "You route support tickets.\nAnswer in a friendly sentence.\nNever apologise."


def run_with_prompt(tmp_path: Path, tracker: Tracker, prompt: str, **constants: Any) -> str:
    dataset = tmp_path / "ds"
    if not dataset.exists():
        write_dataset(dataset, {"e1": entry("functional"), "e2": entry("functional")})
    config = config_for(tmp_path, dataset, COMPONENT_PROMPTS={"system": prompt},
                        **{"EXPERIMENT_NAME": "router/golden", **constants})
    return evaluate(config, RecordingComponent(), Selection("all"),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs")).run_id


def compare_output(tracker: Tracker, a: str, b: str, monkeypatch: pytest.MonkeyPatch,
                   capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr("evalkit.cli._main._reachable", lambda: tracker)
    capsys.readouterr()
    status = evalkit_command("compare", a, b)
    return status, capsys.readouterr().out


def test_two_runs_differing_only_in_a_component_prompt_say_so_first(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    a = run_with_prompt(tmp_path, tracker, TERSE)
    b = run_with_prompt(tmp_path, tracker, CHATTY)
    status, out = compare_output(tracker, a, b, monkeypatch, capsys)
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0] == "What differs (A -> B):"
    assert lines[1].startswith("  prompt router-system: sha256 ")
    assert lines[2:5] == ["    @@ -1,3 +1,3 @@", "     You route support tickets.",
                          "    -Answer with one word."]
    assert lines[5] == "    +Answer in a friendly sentence."
    # Nothing else recorded differs: the next line closes the section.
    assert lines[7] == "" and lines[8].startswith("A: ")
    # Each run registered its prompt under <component>-<key> and logged the text it ran.
    assert tracker.backend.prompts[a] == ["router-system"]  # type: ignore[attr-defined]
    logged = tracker.reader.read_json(b, names.COMPONENT_PROMPTS_ARTIFACT)
    assert logged["system"]["name"] == "router-system"
    assert logged["system"]["template"] == CHATTY
    capsys.readouterr()
    assert evalkit_command("compare", a, b, "--json") == 0
    (changed,) = json.loads(capsys.readouterr().out)["differences"]
    assert (changed["section"], changed["name"]) == ("prompt", "router-system")
    assert "+Answer in a friendly sentence." in changed["diff"]


def test_the_same_component_twice_differs_in_nothing_recorded(
        tmp_path: Path, tracker: Tracker, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    a = run_with_prompt(tmp_path, tracker, TERSE)
    b = run_with_prompt(tmp_path, tracker, TERSE)
    status, out = compare_output(tracker, a, b, monkeypatch, capsys)
    assert out.splitlines()[0] == ("What differs: nothing recorded differs (params, prompts, "
                                   "code, dataset, judge, versions)")


def test_every_section_is_listed_in_order_and_unrecorded_values_are_named() -> None:
    a = RecordedSource(
        {"component_prompt.system": "aaaa", "component.model": "m1",
         names.DATASET_DIGEST_PARAM: "d1", "judge_prompt_digest": "j1", "REPEAT_COUNT": "3"},
        {names.GIT_COMMIT_TAG: "c1", names.VERSION_TAG: "1.0", names.MLFLOW_VERSION_TAG: "3.1",
         names.LINKED_PROMPTS_TAG: json.dumps([{"name": "router-system", "version": "1"},
                                               {"name": "evalkit-judge-expected",
                                                "version": "4"}])},
        {"system": {"name": "router-system", "template": "one"}})
    b = RecordedSource(
        {"component_prompt.system": "bbbb", "component.model": "m2",
         names.DATASET_DIGEST_PARAM: "d2", "judge_prompt_digest": "j2", "REPEAT_COUNT": "3"},
        {names.GIT_COMMIT_TAG: "c2", names.VERSION_TAG: "1.0", names.MLFLOW_VERSION_TAG: "3.2",
         names.CODE_DIFF_SHA_TAG: "ff",
         names.LINKED_PROMPTS_TAG: json.dumps([{"name": "router-system", "version": "2"},
                                               {"name": "evalkit-judge-expected",
                                                "version": "5"}])},
        {"system": {"name": "router-system", "template": "two"}})
    found = differences(a, b)
    assert [(d.section, d.name, d.a, d.b) for d in found] == [
        ("prompt", "router-system", "v1 (sha256 aaaa)", "v2 (sha256 bbbb)"),
        ("param", "component.model", "m1", "m2"),
        ("code", names.CODE_DIFF_SHA_TAG, None, "ff"),
        ("code", names.GIT_COMMIT_TAG, "c1", "c2"),
        ("dataset", names.DATASET_DIGEST_PARAM, "d1", "d2"),
        ("judge prompt", "judge_prompt_digest", "j1", "j2"),
        ("judge prompt", "evalkit-judge-expected version", "4", "5"),
        ("version", names.MLFLOW_VERSION_TAG, "3.1", "3.2")]
    assert found[0].diff == ("@@ -1 +1 @@", "-one", "+two")
    assert Difference("param", "x", None, "1").to_json()["a"] is None


@pytest.mark.parametrize(("value", "message"), [
    ("You route tickets.", "must be a dict of key -> prompt text, e.g. COMPONENT_PROMPTS = "
                           "{'system': SYSTEM_PROMPT}"),
    ({"the system": "x"}, "key 'the system' must be letters, digits, '-' or '_'"),
    ({"system": ["x"]}, "COMPONENT_PROMPTS['system'] must be the prompt's text (a non-empty "
                        "string), got list"),
    ({"system": "  "}, "COMPONENT_PROMPTS['system'] must be the prompt's text"),
])
def test_component_prompts_are_checked(tmp_path: Path, value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match="eval.py: ") as raised:
        EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "d",
                                   "COMPONENT_PROMPTS": value}, "eval.py")
    assert message in str(raised.value)


def test_a_misspelt_component_prompts_is_caught() -> None:
    with pytest.raises(ConfigError, match="did you mean COMPONENT_PROMPTS"):
        EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "d",
                                   "COMPONENT_PROMPT": {"system": "x"}}, "eval.py")


def test_prompts_are_params_by_digest_not_by_text() -> None:
    config = EvalConfig.from_constants({"EXPERIMENT_NAME": "a/b", "DATASET_PATH": "d",
                                        "COMPONENT_PROMPTS": {"system": TERSE}}, "eval.py")
    params = config.params()
    assert "COMPONENT_PROMPTS" not in params
    assert len(params["component_prompt.system"]) == 16
    assert TERSE not in "".join(params.values())


def module(name: str, path: Path) -> ModuleType:
    made = ModuleType(name)
    made.__file__ = str(path)
    return made


def test_the_component_source_hash_covers_the_script_and_its_local_modules(
        tmp_path: Path) -> None:
    script, prompts = tmp_path / "eval.py", tmp_path / "mycomp" / "prompts.py"
    prompts.parent.mkdir()
    script.write_text("from mycomp.prompts import SYSTEM\n")
    prompts.write_text("SYSTEM = 'terse'\n")
    outside = tmp_path.parent / "elsewhere.py"
    venv = tmp_path / ".venv" / "lib" / "dep.py"
    venv.parent.mkdir(parents=True)
    venv.write_text("x = 1\n")
    loaded = [module("mycomp.prompts", prompts), module("elsewhere", outside),
              module("dep", venv), module("json", Path(json.__file__))]
    before = component_source_sha256(script, loaded)
    assert before == component_source_sha256(script, [*loaded, module("dep2", venv)])
    venv.write_text("x = 2\n")  # a dependency under a hidden folder: not the component
    assert component_source_sha256(script, loaded) == before
    prompts.write_text("SYSTEM = 'chatty'\n")  # a prompt edited in a local module
    assert component_source_sha256(script, loaded) != before
    assert component_source_sha256(script, loaded[1:]) != component_source_sha256(script,
                                                                                   loaded)


def test_a_run_records_the_versions_it_ran_with(tmp_path: Path) -> None:
    script = tmp_path / "eval.py"
    script.write_text("X = 1\n")
    tags = source_state("eval.py", script, modules=[]).tags
    assert tags[names.PYTHON_VERSION_TAG] == ".".join(map(str, sys.version_info[:3]))
    assert tags[names.MLFLOW_VERSION_TAG] == mlflow.__version__
    assert len(tags[names.COMPONENT_SOURCE_SHA_TAG]) == 64


def test_hashes_are_shown_by_their_head_and_long_values_cut() -> None:
    from evalkit.cli._compare import render_differences

    text = render_differences((
        Difference("code", names.GIT_COMMIT_TAG, "a" * 40, names.NO_COMMIT),
        Difference("param", "component.system_note", "x" * 100, None)))
    assert text.splitlines() == [
        "What differs (A -> B):",
        f"  code git_commit: {'a' * 16} -> none: no commit yet",
        f"  param component.system_note: {'x' * 69}... -> (not recorded)"]


def test_a_series_against_a_plain_run_says_so_once_instead_of_what_only_one_records() -> None:
    linked = json.dumps([{"name": "evalkit-judge-expected", "version": "1"}])
    shared = {"component.model": "m1", "REPEAT_COUNT": "3"}
    series = RecordedSource(
        {**shared, names.REPLICATES_PARAM: "2", names.ROOT_SEED_PARAM: "0",
         names.seed_param(0): "11", names.seed_param(1): "12"},
        {names.MODE_TAG: "replicates", names.GIT_COMMIT_TAG: "c1"}, {})
    plain = RecordedSource({**shared, "component.model": "m2"},
                           {names.GIT_COMMIT_TAG: "c1", names.LINKED_PROMPTS_TAG: linked}, {})
    assert [(d.section, d.name, d.a, d.b) for d in differences(series, plain)] == [
        ("run", names.MODE_TAG, "replicates", "evaluation"),
        ("param", "component.model", "m1", "m2")]
    # Two series differ in their seeds as ever, and two plain runs in their judge versions.
    other = RecordedSource({**series.params, names.seed_param(1): "13"}, series.tags, {})
    assert [(d.name, d.a, d.b) for d in differences(series, other)] == [
        (names.seed_param(1), "12", "13")]
    unlinked = RecordedSource(plain.params, {names.GIT_COMMIT_TAG: "c1"}, {})
    assert [(d.name, d.a, d.b) for d in differences(unlinked, plain)] == [
        ("evalkit-judge-expected version", None, "1")]
