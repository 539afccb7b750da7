"""What differs between two runs, as recorded: the first thing ``evalkit compare`` shows.

A gap between two runs means something only next to what changed between them. Each run
records what defines the component (its params, the prompts it declares in
``COMPONENT_PROMPTS``, the git commit, a hash of the uncommitted diff and of the script's own
modules), the dataset's digest, the judge's prompts and the versions it ran with; this module
lists every one of those that is not the same in both runs, the prompts with a short unified
diff of their text.

A replicate series and a plain run record different things by their kind alone: the series its
seeds and replicate count, each replicate (not the series) the judge prompt versions it linked.
Compared with each other, those are not listed one by one; one line says that the runs are of
different kinds instead.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.records import Mode, names
from evalkit.tracking import RunReader

MAX_DIFF_LINES = 12
MAX_VALUE = 72
"""Characters of a recorded value shown: a long param stays one line."""
_HASH = re.compile(r"[0-9a-f]{40,64}")
PROMPT_SECTION = "prompt"
_CODE_TAGS = (names.GIT_COMMIT_TAG, names.CODE_DIFF_SHA_TAG, names.COMPONENT_SOURCE_SHA_TAG)
_VERSION_TAGS = (names.VERSION_TAG, names.MLFLOW_VERSION_TAG, names.PYTHON_VERSION_TAG)


@dataclass(frozen=True)
class Difference:
    """One recorded thing that is not the same in A and B (``None``: not recorded)."""

    section: str
    """``prompt``, ``param``, ``code``, ``dataset``, ``judge prompt`` or ``version``."""
    name: str
    a: str | None
    b: str | None
    diff: tuple[str, ...] = ()
    """For a prompt: the unified diff of its text from A to B, cut to a few lines."""

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "name": self.name, "a": self.a, "b": self.b,
                "diff": list(self.diff)}


@dataclass(frozen=True)
class RecordedSource:
    """What a run recorded about its source."""

    params: Mapping[str, str]
    tags: Mapping[str, str]
    prompts: Mapping[str, Mapping[str, str]]
    """``COMPONENT_PROMPTS`` as run: key -> {name, sha256, template}."""

    @classmethod
    def read(cls, reader: RunReader, run_id: str) -> RecordedSource:
        stored = reader.stored(run_id)
        declares = any(k.startswith(names.COMPONENT_PROMPT_PARAM_PREFIX) for k in stored.params)
        prompts = reader.read_json(run_id, names.COMPONENT_PROMPTS_ARTIFACT) if declares else {}
        return cls(stored.params, stored.tags, prompts)

    def linked_versions(self) -> dict[str, str]:
        """Prompt registry name -> the version linked to the run (MLflow stores only)."""
        try:
            linked = json.loads(self.tags.get(names.LINKED_PROMPTS_TAG, "[]"))
        except ValueError:
            return {}
        return {str(p["name"]): str(p["version"]) for p in linked
                if isinstance(p, dict) and "name" in p and "version" in p}


def shown_value(value: str | None) -> str:
    """A recorded value as a comparison shows it: a commit or sha256 by its head (it tells two
    apart), anything else cut to :data:`MAX_VALUE` characters."""
    if value is None:
        return "(not recorded)"
    if _HASH.fullmatch(value):
        return value[:16]
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 3] + "..."


def what_differs(reader: RunReader, a_run_id: str, b_run_id: str) -> tuple[Difference, ...]:
    return differences(RecordedSource.read(reader, a_run_id),
                       RecordedSource.read(reader, b_run_id))


def differences(a: RecordedSource, b: RecordedSource) -> tuple[Difference, ...]:
    """Every recorded difference: the kind of run, prompts, params, code, dataset, judge
    prompts, versions."""
    kind_a, kind_b = _kind(a), _kind(b)
    one_series = (kind_a == Mode.REPLICATES) != (kind_b == Mode.REPLICATES)
    found = [Difference("run", names.MODE_TAG, kind_a, kind_b)] if kind_a != kind_b else []
    found += _prompt_differences(a, b)
    judged = {k for k in (*a.params, *b.params) if "judge_prompt" in k}
    elsewhere = {names.DATASET_DIGEST_PARAM, *judged}
    found += _changed("param", a.params, b.params, lambda k: not (
        k in elsewhere or k.startswith(names.COMPONENT_PROMPT_PARAM_PREFIX)
        or (one_series and _series_param(k))))
    found += _changed("code", a.tags, b.tags, lambda k: k in _CODE_TAGS)
    found += _changed("dataset", a.params, b.params, lambda k: k == names.DATASET_DIGEST_PARAM)
    found += _changed("judge prompt", a.params, b.params, lambda k: k in judged)
    versions_a, versions_b = _judge_versions(a), _judge_versions(b)
    found += _changed("judge prompt", versions_a, versions_b, lambda k: not one_series or (
        k in versions_a and k in versions_b))
    found += _changed("version", a.tags, b.tags, lambda k: k in _VERSION_TAGS)
    return tuple(found)


def _kind(run: RecordedSource) -> str:
    """The run's mode as its tag says (``evaluation`` without one)."""
    return str(Mode.declared(run.tags) or run.tags[names.MODE_TAG])


def _series_param(key: str) -> bool:
    """A param only a replicate series records: its replicate count, root seed and seeds."""
    return key in (names.REPLICATES_PARAM, names.ROOT_SEED_PARAM) or names.is_seed_param(key)


def _prompt_differences(a: RecordedSource, b: RecordedSource) -> list[Difference]:
    found = []
    prefix = names.COMPONENT_PROMPT_PARAM_PREFIX
    keys = sorted({k[len(prefix):] for k in (*a.params, *b.params) if k.startswith(prefix)})
    for key in keys:
        digest_a, digest_b = a.params.get(prefix + key), b.params.get(prefix + key)
        if digest_a == digest_b:
            continue
        doc_a, doc_b = a.prompts.get(key, {}), b.prompts.get(key, {})
        name = doc_b.get("name") or doc_a.get("name") or key
        lines = difflib.unified_diff(doc_a.get("template", "").splitlines(),
                                     doc_b.get("template", "").splitlines(), "A", "B", n=1,
                                     lineterm="")
        shown = [line for line in lines if not line.startswith(("---", "+++"))]
        if len(shown) > MAX_DIFF_LINES:
            shown = [*shown[:MAX_DIFF_LINES], f"... ({len(shown) - MAX_DIFF_LINES} more lines)"]
        found.append(Difference(PROMPT_SECTION, name, _prompt_label(a, name, digest_a),
                                _prompt_label(b, name, digest_b), tuple(shown)))
    return found


def _prompt_label(run: RecordedSource, name: str, digest: str | None) -> str | None:
    if digest is None:
        return None
    version = run.linked_versions().get(name)
    return f"v{version} (sha256 {digest})" if version else f"sha256 {digest}"


def _judge_versions(run: RecordedSource) -> dict[str, str]:
    return {f"{name} version": version for name, version in run.linked_versions().items()
            if name.startswith("evalkit-judge-")}


def _changed(section: str, a: Mapping[str, str], b: Mapping[str, str],
             wanted: Any) -> list[Difference]:
    return [Difference(section, key, a.get(key), b.get(key))
            for key in sorted({*a, *b}) if wanted(key) and a.get(key) != b.get(key)]
