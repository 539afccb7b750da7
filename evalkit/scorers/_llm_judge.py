"""``llm_judge``: an LLM at temperature 0 answers exactly ``0`` or ``1``.

Three uses, each with its own prompt (YAML data files under ``evalkit/prompts``, overridable
with ``JUDGE_PROMPTS`` in eval.py): an output against ``expected_output``; the repeats of a
repeatability entry against each other (one judge call with all of them); the variants of a
bias group against each other.

Every text under judgement is given as a JSON string with ``<`` and ``>`` escaped, inside
``<data>`` delimiters, so nothing inside an output can close the data block or pose as an
instruction outside it. The reply is parsed strictly: after trimming whitespace it must be
``0`` or ``1``. Anything else (``"1."``, ``"yes"``, ``""``, prose) scores 0 and is counted as
an invalid judgement, never as a pass.

Temperature 0 does not make a served model deterministic. With ``JUDGE_REPEATS`` = k > 1 each
unit (a case, a repeatability entry, a bias group) is judged k times in a row with the
identical request (:func:`majority`): the verdict passes only when more than half of the k
votes are ``1``. An invalid reply votes ``0``, so a tie, or no valid vote, fails; a call that
fails after its retries ends the unit's judging and makes it an error, as with one call.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from evalkit._errors import ConfigError, ProviderError
from evalkit.dataset import BIAS, REPEATABILITY
from evalkit.records import JudgeCall, as_text
from evalkit.scorers._base import Case, OutputGroup, ScorerVerdict
from evalkit.scorers._endpoint import ChatEndpoint

_PLACEHOLDERS = {"expected": {"input", "expected", "output"},
                 REPEATABILITY: {"input", "outputs"},
                 BIAS: {"inputs", "outputs"}}


@dataclass(frozen=True)
class JudgePrompt:
    use: str
    """``expected``, ``repeatability`` or ``bias``: which placeholders it may use."""
    source: str
    system: str
    user: str
    digest: str
    """sha256 of the prompt file, logged as an MLflow param."""

    @classmethod
    def load(cls, use: str, path: str | Path | None = None) -> JudgePrompt:
        """The prompt for ``use``: the YAML file at ``path``, or the one shipped with evalkit."""
        import yaml

        if path is None:
            source = f"evalkit/prompts/{use}.yaml"
            raw = resources.files("evalkit").joinpath("prompts", f"{use}.yaml").read_bytes()
        else:
            source = str(path)
            try:
                raw = Path(path).read_bytes()
            except OSError as err:
                raise ConfigError(f"JUDGE_PROMPTS[{use!r}]: cannot read {path}: {err}") from None
        doc = yaml.safe_load(raw)
        if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str)
                                                for k in ("system", "user")):
            raise ConfigError(f"{source}: a judge prompt needs string fields 'system' and "
                              "'user'")
        allowed = _PLACEHOLDERS[use]
        used = {m.group("named") or m.group("braced")
                for m in Template.pattern.finditer(doc["user"])
                if m.group("named") or m.group("braced")}
        if not used <= allowed:
            raise ConfigError(f"{source}: unknown placeholder(s) "
                              + ", ".join(f"${{{u}}}" for u in sorted(used - allowed))
                              + f"; a {use} prompt may use "
                              + ", ".join(f"${{{a}}}" for a in sorted(allowed)))
        return cls(use, source, doc["system"], doc["user"], hashlib.sha256(raw).hexdigest())

    @property
    def registry_name(self) -> str:
        """Its name in MLflow's prompt registry: one per use, one per custom file."""
        if self.source == f"evalkit/prompts/{self.use}.yaml":
            return f"evalkit-judge-{self.use}"
        stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in Path(self.source).stem)
        return f"evalkit-judge-{self.use}-{stem}"

    def registry_template(self) -> list[dict[str, str]]:
        """The chat template in MLflow's ``{{variable}}`` form."""
        user = Template.pattern.sub(
            lambda m: "$" if m.group("escaped") else
            "{{" + (m.group("named") or m.group("braced") or "") + "}}", self.user)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]

    def messages(self, system_in_user: bool = False, **values: str) -> list[dict[str, str]]:
        user = Template(self.user).safe_substitute(values)
        if system_in_user:  # for chat templates that have no system role
            return [{"role": "user", "content": f"{self.system.rstrip()}\n\n{user}"}]
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def quoted(value: Any) -> str:
    """A JSON string literal of a value's text; ``<`` and ``>`` escaped so that no output can
    spell the closing ``</data>`` delimiter."""
    return _escape_angles(json.dumps(as_text(value), ensure_ascii=False))


def quoted_list(values: Sequence[Any]) -> str:
    return _escape_angles(json.dumps([as_text(v) for v in values], ensure_ascii=False))


def _escape_angles(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def parse_judgement(reply: str) -> int | None:
    """``0`` or ``1`` when the trimmed reply is exactly that, else ``None`` (invalid)."""
    stripped = reply.strip()
    return int(stripped) if stripped in ("0", "1") else None


@dataclass(frozen=True)
class JudgeOptions:
    max_tokens: int = 2
    seed: int = 0
    concurrency: int = 8
    invalid_is_error: bool = False
    """Record an invalid reply as a scoring error rather than only counting it."""
    system_in_user: bool = False
    repeats: int = 1
    """Judgements per unit (``JUDGE_REPEATS``), asked one after the other."""


class LLMJudgeScorer:
    """Temperature-0 binary judgements over an OpenAI-compatible endpoint."""

    name = "llm_judge"
    reads_traces = False

    def __init__(self, endpoint: ChatEndpoint, prompt: JudgePrompt,
                 options: JudgeOptions = JudgeOptions()) -> None:
        self.endpoint = endpoint
        self.prompt = prompt
        self.options = options
        self.repeated_invalid = 0
        """Invalid replies among the judgements of units judged more than once (with one
        judgement per unit, the items' ``invalid_judgement`` counts them)."""
        self._lock = threading.Lock()

    def against_expected(self, cases: Sequence[Case]) -> list[ScorerVerdict]:
        return self._judge_all([
            {"input": quoted(c.input), "expected": quoted(c.expected), "output": quoted(c.output)}
            for c in cases])

    def among_outputs(self, groups: Sequence[OutputGroup]) -> list[ScorerVerdict]:
        return self._judge_all([
            {"input": quoted(g.inputs[0]), "inputs": quoted_list(g.inputs),
             "outputs": quoted_list(g.outputs)} for g in groups])

    def _judge_all(self, values: Sequence[Mapping[str, str]]) -> list[ScorerVerdict]:
        if not values:
            return []
        # Each judgement runs in the context it was asked from, as it would on this thread:
        # a tracing context among others (the run lets go of what the judge's requests trace).
        contexts = [contextvars.copy_context() for _ in values]
        with ThreadPoolExecutor(max_workers=self.options.concurrency,
                                thread_name_prefix="evalkit-judge") as pool:
            return list(pool.map(lambda context, unit: context.run(self._judge, unit),
                                 contexts, values))

    def _judge(self, values: Mapping[str, str]) -> ScorerVerdict:
        """One unit's verdict: ``repeats`` judgements in a row inside this unit's job (so
        ``concurrency`` bounds the calls in flight); a failed call ends them. The verdict
        keeps the messages sent and every call made."""
        messages = self.prompt.messages(self.options.system_in_user, **values)
        if self.options.repeats == 1:
            return replace(self._ask(messages), judge_messages=tuple(messages))
        judgements: list[ScorerVerdict] = []
        while len(judgements) < self.options.repeats:
            judgements.append(self._ask(messages))
            if judgements[-1].reply is None:  # the judge failed: the unit is an error anyway
                break
        with self._lock:
            self.repeated_invalid += sum(j.invalid for j in judgements)
        return replace(majority(judgements), judge_messages=tuple(messages))

    def _ask(self, messages: Sequence[Mapping[str, str]]) -> ScorerVerdict:
        try:
            answer = self.endpoint.chat(messages, temperature=0,
                                        max_tokens=self.options.max_tokens,
                                        seed=self.options.seed)
        except ProviderError as err:
            failure = f"judge failed: {err}"
            return ScorerVerdict(False, error=failure, judge_calls=(JudgeCall(None, failure),))
        reply, usage = answer.text, answer.usage
        judgement = parse_judgement(reply)
        if judgement is None:
            error = (f"invalid judgement {reply[:80]!r}: the judge must reply exactly 0 or 1"
                     if self.options.invalid_is_error else None)
            return ScorerVerdict(False, reply=reply[:200], invalid=True, error=error,
                                 judge_calls=(JudgeCall(reply[:200], None, usage),))
        return ScorerVerdict(judgement == 1, reply=reply.strip(),
                             judge_calls=(JudgeCall(reply.strip(), None, usage),))


REPLY_SEPARATOR = " / "
"""Between the replies of one unit's judgements in its verdict's ``reply``."""


def majority(judgements: Sequence[ScorerVerdict]) -> ScorerVerdict:
    """The verdict of one unit judged several times: a pass when more than half of the
    judgements are a valid ``1`` (a tie fails; an invalid reply is a ``0`` vote) and none
    failed. ``votes`` holds each judgement given (a failed call gives none), ``reply`` their
    replies joined by :data:`REPLY_SEPARATOR`, ``invalid`` whether any was invalid, ``error``
    the first error (a failed call, or an invalid reply with ``JUDGE_INVALID_IS_ERROR``)."""
    given = [j for j in judgements if j.reply is not None]
    votes = tuple(j.passed for j in given)
    error = next((j.error for j in judgements if j.error is not None), None)
    return ScorerVerdict(
        2 * sum(votes) > len(votes) and error is None,
        reply=REPLY_SEPARATOR.join(str(j.reply) for j in given) or None,
        invalid=any(j.invalid for j in given), error=error, votes=votes,
        judge_calls=tuple(c for j in judgements for c in j.judge_calls))
