"""Choosing where calls run, in-process: the options and the constant, Ray asked without the
extra, and the setup hook. (A window whose executor loses its calls, a cluster gone, is
tested with the window: tests/unit/calls/test_window.py.)

The Ray cluster itself is tested in tests/e2e/test_ray.py (make test-ray)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from evalkit import EvalConfig, run_eval_script
from evalkit._errors import ConfigError
from evalkit._secrets import Redactor
from evalkit.calls import CallWindow, InProcess, RaySettings, Selection, plan_run
from evalkit.dataset import load_dataset
from evalkit.tracking import RawResultsLog
from tests.support.builders import RecordingComponent, entry, write_dataset

BASE = {"EXPERIMENT_NAME": "ray/tests", "EVAL_MIN_ACCURACY": 0.5}


def without_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """This Python as a base install: ``ray`` cannot be found."""
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else find_spec(name, *a))


@pytest.mark.parametrize("options", [["--executor=ray"], ["--ray-address=127.0.0.1:6379"]])
def test_ray_asked_without_the_extra_stops_before_any_call_with_the_install_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        options: list[str]) -> None:
    without_ray(monkeypatch)
    dataset = write_dataset(tmp_path / "ds", {"e0": entry("functional")})
    component = RecordingComponent()
    status = run_eval_script({**BASE, "DATASET_PATH": str(dataset)}, component,
                             ["--type=functional", *options], script="eval.py")
    err = capsys.readouterr().err
    assert status == 2 and component.calls == []
    assert "--executor=ray needs Ray, which is not installed" in err
    assert "pip install 'evalkit-mlflow[ray]'" in err and "Traceback" not in err


@pytest.mark.parametrize(("options", "message"), [
    (["--call-resources=CPU=2"], "--ray-address and --call-resources apply to --executor=ray"),
    (["--executor=ray", "--call-resources=CPU"], "'CPU' must read NAME=AMOUNT"),
    (["--executor=ray", "--call-resources=GPU=-1"], "has 'GPU': -1.0: each resource needs"),
])
def test_bad_executor_options_are_usage_errors_naming_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        options: list[str], message: str) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())  # "installed"
    dataset = write_dataset(tmp_path / "ds", {"e0": entry("functional")})
    component = RecordingComponent()
    constants = {**BASE, "DATASET_PATH": str(dataset), "invoke_component": component}
    status = run_eval_script(constants, component, ["--type=functional", *options],
                             script="eval.py")
    assert status == 2 and component.calls == []
    assert message in capsys.readouterr().err


def test_a_component_that_is_not_a_function_of_the_script_cannot_go_to_ray(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    dataset = write_dataset(tmp_path / "ds", {"e0": entry("functional")})
    component = RecordingComponent()  # an object, not a name the workers can load
    status = run_eval_script({**BASE, "DATASET_PATH": str(dataset)}, component,
                             ["--type=functional", "--executor=ray"], script="eval.py")
    assert status == 2 and component.calls == []
    assert "must be a function defined at the top level" in capsys.readouterr().err


def test_call_resources_default_to_one_cpu_and_are_not_a_setting_of_the_run(
        tmp_path: Path) -> None:
    constants = {**BASE, "DATASET_PATH": "ds"}
    assert EvalConfig.from_constants(constants, "eval.py").call_resources == {"CPU": 1.0}
    declared = EvalConfig.from_constants({**constants, "CALL_RESOURCES": {"CPU": 2, "GPU": 1}},
                                         "eval.py")
    assert declared.call_resources == {"CPU": 2.0, "GPU": 1.0}
    # a resumed run may move between executors: where calls run is no param
    assert "CALL_RESOURCES" not in declared.params()


@pytest.mark.parametrize(("resources", "at_once"), [
    ({"CPU": 1}, 1), ({"CPU": 0.25}, 1), ({"CPU": 0, "GPU": 1}, 1), ({"accelerator": 2}, 1),
    ({"CPU": 0}, 6), ({"CPU": 0, "GPU": 0}, 6)])
def test_a_slot_makes_one_call_at_a_time_unless_calls_ask_for_nothing(
        resources: dict[str, float], at_once: int) -> None:
    settings = RaySettings(None, "/project", "eval.py", "invoke_component", resources, 6)
    assert settings.calls_per_slot == at_once


@pytest.mark.parametrize(("resources", "slots"), [
    ({"CPU": 1}, 2), ({"CPU": 0.5}, 3), ({"CPU": 2}, 1), ({"CPU": 0}, 1),
    ({"CPU": 1, "GPU": 0}, 2)])
def test_a_cluster_holds_as_many_slots_as_fit_one_call_at_most_max_concurrency(
        resources: dict[str, float], slots: int) -> None:
    settings = RaySettings(None, "/project", "eval.py", "invoke_component", resources, 3)
    assert settings.slots({"CPU": 2.0, "memory": 1e9}) == slots


def test_a_call_asking_more_than_the_cluster_has_is_refused_naming_the_fix() -> None:
    settings = RaySettings(None, "/project", "eval.py", "invoke_component", {"GPU": 1}, 3)
    with pytest.raises(ConfigError, match=r"each call asks 1 GPU and the cluster has 0: lower "
                                          r"CALL_RESOURCES \(or --call-resources\)"):
        settings.slots({"CPU": 2.0})


@pytest.mark.parametrize("value", [{}, {"CPU": "one"}, {"CPU": True}, {"": 1}, [1],
                                   {"GPU": float("inf")}])
def test_bad_call_resources_are_named_with_an_example(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"eval.py: CALL_RESOURCES .*e\.g\. \{'CPU': 1\}"):
        EvalConfig.from_constants({**BASE, "DATASET_PATH": "ds", "CALL_RESOURCES": value},
                                  "eval.py")


def test_call_resource_is_a_reserved_prefix_so_a_typo_is_caught() -> None:
    with pytest.raises(ConfigError, match="unknown constant CALL_RESOURCE: did you mean "
                                          "CALL_RESOURCES"):
        EvalConfig.from_constants({**BASE, "DATASET_PATH": "ds", "CALL_RESOURCE": {"CPU": 1}},
                                  "eval.py")


def plan_and_log(tmp_path: Path, count: int) -> Any:
    dataset = write_dataset(tmp_path / "ds", {f"e{i}": entry("functional") for i in range(count)})
    config = EvalConfig.from_constants({**BASE, "DATASET_PATH": str(dataset)}, "eval.py")
    return plan_run(load_dataset(dataset), Selection("functional"), config)


def test_the_setup_hook_runs_once_in_process_before_the_first_call(tmp_path: Path) -> None:
    plan = plan_and_log(tmp_path, 3)
    order: list[str] = []
    executor = InProcess(lambda: order.append("setup"))
    for window in range(2):  # two windows of one run: a replicate series
        with RawResultsLog(tmp_path / f"raw{window}.jsonl") as log:
            CallWindow.of(lambda e, c: order.append(e.id) or "a", {}, Redactor(), executor,
                          concurrency=1).run(plan, log)
    assert order == ["setup", "e0", "e1", "e2", "e0", "e1", "e2"]
