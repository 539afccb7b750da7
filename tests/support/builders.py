"""What tests build: datasets on disk, entries, eval scripts, configs, plans, and a component
that records its calls. Plain functions; the fixtures are in ``conftest.py``."""

from __future__ import annotations

import json
import os
import re
import textwrap
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalkit import Call, Entry, EvalConfig, RunContext, Selection
from evalkit.calls import RunPlan, plan_run
from evalkit.dataset import load_dataset

REPO = Path(__file__).resolve().parents[2]
PERMISSIVE_SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}


def write_dataset(root: Path, entries: Mapping[str, Mapping[str, Any]],
                  schema: Mapping[str, Any] = PERMISSIVE_SCHEMA) -> Path:
    """A valid dataset folder: README, schema, and one file per entry id (``$schema`` added)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "README.md").write_text("# test dataset\n", encoding="utf-8")
    (root / "dataset.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    for entry_id, doc in entries.items():
        path = root / "data" / f"{entry_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        reference = os.path.relpath(root / "dataset.schema.json", path.parent)
        path.write_text(json.dumps({"$schema": reference, **doc}), encoding="utf-8")
    return root


def entry(*types: str, input: Any = "q", expected: Any = "a", **fields: Any) -> dict[str, Any]:
    """An entry document; ``expected`` defaults to null for bias/repeatability-only types."""
    if set(types) <= {"bias", "repeatability"} and expected == "a":
        expected = None
    return {"test_types": list(types), "input": input, "expected_output": expected, **fields}


MIXED_ENTRIES = {
    "f1": entry("functional"),
    "f2": entry("functional", "smoke"),
    "r1": entry("repeatability"),
    "r2": entry("functional", "repeatability"),
    "b1": entry("bias", bias_group="g", input="variant one"),
    "b2": entry("bias", bias_group="g", input="variant two"),
    "hr": entry("functional", human_review=True, human_instructions="check tone"),
}
"""Every test type, a bias group and a human_review entry: one evaluation that covers all."""


def assert_mixed_run_logged(tags: Mapping[str, str], params: Mapping[str, str],
                            metrics: Mapping[str, float], run_url: str, dataset: Path) -> None:
    """What a run of :data:`MIXED_ENTRIES` (with ``EVAL_MIN_F1=0.7``) logs, whatever its store."""
    assert tags["test_types"] == "bias,functional,smoke,repeatability"  # canonical order
    assert tags["groups_filter"] == "all"
    assert tags["git_commit"]
    assert tags["verdict"] == "PASS" and tags["run_url"] == run_url
    assert params["EVAL_MIN_ACCURACY"] == "0.5" and params["REPEAT_COUNT"] == "4"
    assert params["EVAL_MIN_F1"] == "0.7" and params["functional_min_f1"] == "0.7"
    assert params["DATASET_PATH"] == str(dataset)
    assert re.fullmatch(r"[0-9a-f]{64}", params["dataset_digest"])
    for key in ("functional_accuracy", "functional_f1", "functional_precision",
                "functional_recall", "functional_accuracy_ci_lower",
                "functional_accuracy_ci_upper", "functional_samples", "repeatability_accuracy",
                "bias_accuracy", "smoke_accuracy", "repeat_count"):
        assert key in metrics, key


def write_eval_script(folder: Path, constants: Mapping[str, Any], component: str,
                      epilogue: str = "") -> Path:
    """An eval.py in ``folder``: the constants, ``component`` (the body of invoke_component
    source, defining ``invoke_component(entry, call)``), and the standard entry point."""
    lines = ["import evalkit", *(f"{k} = {v!r}" for k, v in constants.items()), "",
             textwrap.dedent(component).strip(), "", "if __name__ == '__main__':",
             "    status = evalkit.run_eval_script(globals(), invoke_component)"]
    lines += [f"    {line}" for line in textwrap.dedent(epilogue).strip().splitlines()]
    lines.append("    raise SystemExit(status)")
    script = folder / "eval.py"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return script


def config_for(tmp_path: Path, dataset: Path, **constants: Any) -> EvalConfig:
    """The constants of a test evaluation: thresholds of 0.5, ``REPEAT_COUNT = 4``, reports in
    ``tmp_path/reports``, an experiment of its own; ``constants`` override or add."""
    base = {"EXPERIMENT_NAME": f"tests/{uuid.uuid4().hex[:12]}", "DATASET_PATH": str(dataset),
            "REPORTS_DIR": str(tmp_path / "reports"), "EVAL_MIN_ACCURACY": 0.5,
            "REPEAT_COUNT": 4, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5}
    return EvalConfig.from_constants({**base, **constants}, script="test_eval.py")


def plan_of(tmp_path: Path, entries: Mapping[str, Mapping[str, Any]], repeats: int = 3,
            selection: str = "all", groups: str | None = None, **constants: Any) -> RunPlan:
    """The run plan of a dataset written from ``entries``, with thresholds of 0.5,
    ``REPEAT_COUNT = repeats`` and ``constants``."""
    dataset = write_dataset(tmp_path / "ds", entries)
    config = EvalConfig.from_constants({
        "EXPERIMENT_NAME": "plan/tests", "DATASET_PATH": str(dataset), "EVAL_MIN_ACCURACY": 0.5,
        "REPEAT_COUNT": repeats, "EVAL_MIN_ACCURACY_REPEATABILITY": 0.5, **constants},
        "test_eval.py")
    return plan_run(load_dataset(dataset), Selection.parse(selection, groups), config)


class RecordingComponent:
    """A stand-in for the user's component: answers from a table (entry id -> output, or a
    function of the entry and call) and records every call it gets."""

    def __init__(self, answers: dict[str, Any] | None = None, default: Any = "a") -> None:
        self.answers = answers or {}
        self.default = default
        self.calls: list[tuple[str, int]] = []

    def __call__(self, entry: Entry, call: Call) -> Any:
        self.calls.append((entry.id, call.repeat))
        answer = self.answers.get(entry.id, self.default)
        return answer(entry, call) if callable(answer) else answer

    def count(self) -> Counter[str]:
        return Counter(entry_id for entry_id, _ in self.calls)


def evaluation_with_a_secret(tmp_path: Path, tracker: Any, secret: str) -> Any:
    """An evaluation whose component puts ``secret`` (also exported as PROVIDER_API_KEY by
    the caller) in an output, in an error message and in a component param."""
    from evalkit import evaluate

    def leak(item: Entry, call: Call) -> Any:
        if item.id == "boom":
            raise PermissionError(f"401 for key {secret}")
        return {"echo": f"using {secret}"}

    dataset = write_dataset(tmp_path / "ds", {"e": entry("functional"),
                                              "boom": entry("functional")})
    config = config_for(tmp_path, dataset, COMPONENT_PARAMS={"key": secret})
    return evaluate(config, leak, Selection.parse("all", None, False),
                    RunContext(tracker=tracker, runs_dir=tmp_path / ".evalkit" / "runs"))


def local_texts(tmp_path: Path, outcome: Any) -> list[str]:
    """What an evaluation left on local disk: its reports and its raw results."""
    return [*(p.read_text() for p in (tmp_path / "reports").glob("*.md")),
            outcome.raw_results.read_text()]
