"""The LLM judge's settings: the ``JUDGE_*`` constants."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit._errors import ConfigError
from evalkit.config._values import integer, mapping, positive_int, positive_number, string
from evalkit.dataset import COMPARATIVE_TYPES, PROMPT_USES, TEST_TYPES


@dataclass(frozen=True)
class JudgeSettings:
    """The LLM judge: ``JUDGE_*`` constants. Temperature is always 0."""

    model: str
    max_tokens: int = 2
    seed: int = 0
    timeout: float = 30.0
    """Seconds per call attempt."""
    max_attempts: int = 6
    max_wait: float = 120.0
    """Seconds after which no further retry of a call starts."""
    prompts: Mapping[str, Path] = field(default_factory=dict)
    """``expected`` / ``repeatability`` / ``bias`` or a test type -> a YAML prompt file."""
    invalid_is_error: bool = False
    system_in_user: bool = False
    """Send the prompt's system text at the head of the user message, for chat templates
    without a system role (Gemma under llama.cpp drops system messages silently)."""
    repeats: int = 1
    """``JUDGE_REPEATS``: how many times the judge is asked, with the identical request,
    about the same outputs; the verdict is the majority of its votes. Temperature 0 does not
    make a served model deterministic: more than 1 measures how stable the judge is."""


def prompt_use(test_type: str) -> str:
    """The judge prompt a test type uses (one of ``PROMPT_USES``): comparing outputs among
    themselves (``repeatability``, ``bias``), or one output against its expected output."""
    return test_type if test_type in COMPARATIVE_TYPES else "expected"


def judge_settings(known: Mapping[str, Any], script: str) -> JudgeSettings | None:
    if "JUDGE_MODEL" not in known:
        stray = sorted(k for k in known if k.startswith("JUDGE_"))
        if stray:
            raise ConfigError(f"{script}: {', '.join(stray)} declared without JUDGE_MODEL: "
                              "name the judge model")
        return None
    prompts = mapping(known, "JUDGE_PROMPTS", script)
    for key, path in prompts.items():
        if key not in (*PROMPT_USES, *TEST_TYPES) or \
                not isinstance(path, str | Path):
            raise ConfigError(f"{script}: JUDGE_PROMPTS maps 'expected', 'repeatability', "
                              f"'bias' or a test type to a YAML file; got {key!r}: {path!r}")
    flags = {name: known.get(name, False)
             for name in ("JUDGE_INVALID_IS_ERROR", "JUDGE_SYSTEM_IN_USER")}
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{script}: {name} must be True or False")
    return JudgeSettings(
        model=string(known, "JUDGE_MODEL", script),
        max_tokens=positive_int(known, "JUDGE_MAX_TOKENS", script, 2),
        seed=integer(known, "JUDGE_SEED", script, 0),
        timeout=positive_number(known, "JUDGE_TIMEOUT", script, 30.0),
        max_attempts=positive_int(known, "JUDGE_MAX_ATTEMPTS", script, 6),
        max_wait=positive_number(known, "JUDGE_MAX_WAIT", script, 120.0),
        prompts={k: Path(v) for k, v in prompts.items()},
        invalid_is_error=flags["JUDGE_INVALID_IS_ERROR"],
        system_in_user=flags["JUDGE_SYSTEM_IN_USER"],
        repeats=judge_repeats(known, script))


def judge_repeats(known: Mapping[str, Any], script: str) -> int:
    """``JUDGE_REPEATS``: an integer of at least 1 (1, the default, asks the judge once)."""
    value = known.get("JUDGE_REPEATS", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{script}: JUDGE_REPEATS={value!r} must be an integer of at least 1 "
                          "(how many times the judge is asked about the same outputs): "
                          "declare e.g. JUDGE_REPEATS = 3, or remove it to ask once")
    return value
