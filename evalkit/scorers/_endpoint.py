"""Chat calls to an OpenAI-compatible endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp), with
retries that survive a misbehaving provider and counters for the run's metrics.

Transient failures are retried by ``tenacity`` with exponential backoff and full jitter,
honouring ``Retry-After`` (and ``retry-after-ms``) on 429 and 503 replies, within a bounded
number of attempts and a bounded total time: 429, 5xx, timeouts, connection errors, and
replies that are not valid JSON. Permanent errors fail at once: 400, 401, 403, 404 (an
unknown model), 409, 422. The ``openai`` client's own retries are switched off so that one
policy, counted, applies. The preflight follows the same rules within a tighter bound.

A provider's error message can quote the key it refused: every message is redacted (the key
given, and every secret-named environment variable) before it is cut to length or shown.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from evalkit._errors import ConfigError, ProviderError
from evalkit._secrets import Redactor
from evalkit.records import TokenUsage, usage_of
from evalkit.stats import latency_percentiles


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    """Attempts per call, the first included."""
    max_total_seconds: float = 120.0
    """No retry starts once this much time has passed since the first attempt."""
    initial_wait: float = 0.5
    max_wait: float = 20.0
    """Longest single wait, a Retry-After included."""


PREFLIGHT_RETRY = RetryPolicy(max_attempts=3, max_total_seconds=10.0, initial_wait=0.5,
                              max_wait=3.0)
"""The preflight rides out a rate limit or a restarting server, and still fails in seconds."""
PREFLIGHT_TIMEOUT = 5.0


@dataclass
class EndpointStats:
    """Thread-safe counters of one endpoint over a run."""

    calls: int = 0
    retries: int = 0
    failures: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    waits_s: list[float] = field(default_factory=list)
    """The wait before each retry, as chosen (a Retry-After, capped, or the backoff)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, latency_ms: float | None = None, *, wait_s: float | None = None,
               failure: bool = False) -> None:
        """A call that succeeded in ``latency_ms``, a retry after ``wait_s``, or a failure."""
        with self._lock:
            if latency_ms is not None:
                self.calls += 1
                self.latencies_ms.append(latency_ms)
            if wait_s is not None:
                self.retries += 1
                self.waits_s.append(wait_s)
            self.failures += failure

    def percentiles(self) -> dict[str, float]:
        """p50, p90 and p99 of successful call latency, in milliseconds."""
        with self._lock:
            return latency_percentiles(self.latencies_ms)


def is_transient(error: BaseException) -> bool:
    import openai

    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return isinstance(error, openai.APIConnectionError | openai.APIResponseValidationError
                      | ValueError)  # APITimeoutError is an APIConnectionError


def retry_after_seconds(error: BaseException) -> float | None:
    """The wait a 429/503 reply asks for: ``retry-after-ms``, or ``Retry-After`` in seconds or
    as an HTTP date; ``None`` when the reply gives none."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        moment = email.utils.parsedate_to_datetime(value)
        return None if moment is None else max(0.0, moment.timestamp() - time.time())


def safe_url(url: str | None) -> str:
    """A base URL without credentials, fit to log."""
    if not url:
        return "https://api.openai.com/v1 (default)"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


@dataclass(frozen=True)
class ChatReply:
    """One chat completion: the reply text, and the tokens it used when the endpoint says."""

    text: str
    usage: TokenUsage | None
    """Named for the model asked for (what ``TOKEN_PRICES`` prices)."""


class ChatEndpoint:
    """One model behind an OpenAI-compatible ``/chat/completions``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 30.0, retry: RetryPolicy = RetryPolicy()) -> None:
        import openai  # imported when an LLM is used, not at evalkit import

        self.model = model
        self.timeout = timeout
        self.retry = retry
        self.stats = EndpointStats()
        given = {"api_key": api_key} if api_key else {}
        self._redactor = Redactor.from_environment({**os.environ, **given})
        try:
            self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout,
                                         max_retries=0)
        except openai.OpenAIError as err:
            raise ConfigError(f"cannot create the OpenAI client: {err}. Export OPENAI_API_KEY "
                              "(any non-empty value for a local server) and, for another "
                              "endpoint, OPENAI_BASE_URL") from None
        self.base_url = safe_url(str(self._client.base_url))

    def complete(self, messages: Sequence[Mapping[str, str]], *, temperature: float,
                 max_tokens: int | None = None, seed: int | None = None,
                 extra_body: Mapping[str, Any] | None = None,
                 extra_headers: Mapping[str, str] | None = None) -> str:
        """The reply text of one chat completion, retried as the policy says.

        Raises :class:`ProviderError` after the last attempt, or at once on a permanent
        error."""
        return self.chat(messages, temperature=temperature, max_tokens=max_tokens, seed=seed,
                         extra_body=extra_body, extra_headers=extra_headers).text

    def chat(self, messages: Sequence[Mapping[str, str]], *, temperature: float,
             max_tokens: int | None = None, seed: int | None = None,
             extra_body: Mapping[str, Any] | None = None,
             extra_headers: Mapping[str, str] | None = None) -> ChatReply:
        """:meth:`complete`, with the tokens the completion used (give it to
        ``call.record_llm_response`` in a component)."""
        try:
            for attempt in self._retrying(self.retry):
                with attempt:
                    started = time.perf_counter()
                    reply = self._once(messages, temperature, max_tokens, seed, extra_body,
                                       extra_headers)
                    self.stats.record((time.perf_counter() - started) * 1000)
                    return reply
        except Exception as err:
            self.stats.record(failure=True)
            kind = "transient, retries exhausted" if is_transient(err) else "permanent"
            raise ProviderError(f"{self.model} at {self.base_url}: {self._describe(err)} "
                                f"({kind})") from err
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _retrying(self, policy: RetryPolicy, counted: bool = True) -> Any:
        """A tenacity ``Retrying`` for ``policy``: transient errors only, Retry-After honoured
        up to ``policy.max_wait``; retries counted in :attr:`stats` when ``counted``."""
        from tenacity import (
            RetryCallState,
            Retrying,
            retry_if_exception,
            stop_after_attempt,
            stop_after_delay,
            wait_random_exponential,
        )

        backoff = wait_random_exponential(multiplier=policy.initial_wait, max=policy.max_wait)

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            asked = retry_after_seconds(error) if error is not None else None
            return min(asked, policy.max_wait) if asked is not None else backoff(state)

        return Retrying(
            stop=stop_after_attempt(policy.max_attempts)
            | stop_after_delay(policy.max_total_seconds),
            wait=wait, retry=retry_if_exception(is_transient), reraise=True,
            before_sleep=self._count_retry if counted else None)

    def _count_retry(self, state: Any) -> None:
        self.stats.record(wait_s=state.next_action.sleep if state.next_action else 0.0)

    def _once(self, messages: Sequence[Mapping[str, str]], temperature: float,
              max_tokens: int | None, seed: int | None, extra_body: Mapping[str, Any] | None,
              extra_headers: Mapping[str, str] | None) -> ChatReply:
        params: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                  "temperature": temperature}
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if seed is not None:
            params["seed"] = seed
        if extra_body:
            params["extra_body"] = dict(extra_body)
        if extra_headers:
            params["extra_headers"] = dict(extra_headers)
        reply = self._client.chat.completions.create(**params)
        if not reply.choices:
            raise ValueError("the reply has no choices")
        try:
            usage = usage_of(reply, self.model)
        except ValueError:  # counts a provider got wrong cost the reply nothing
            usage = None
        return ChatReply(reply.choices[0].message.content or "", usage)

    def preflight(self) -> None:
        """One tiny completion with a short timeout, retried within :data:`PREFLIGHT_RETRY`:
        fails in seconds on a wrong key, URL or model, before any paid component call. Raises
        :class:`ConfigError` for a permanent error and :class:`ProviderError` when the
        endpoint cannot be reached or keeps failing."""
        import openai

        client = self._client.with_options(timeout=min(self.timeout, PREFLIGHT_TIMEOUT))
        try:
            for attempt in self._retrying(PREFLIGHT_RETRY, counted=False):
                with attempt:
                    client.chat.completions.create(
                        model=self.model, messages=[{"role": "user", "content": "Reply 1."}],
                        temperature=0, max_tokens=1)
        except openai.APIStatusError as err:
            if is_transient(err):
                raise ProviderError(f"judge preflight: {self.model} at {self.base_url} "
                                    f"kept answering {self._describe(err)}; try again "
                                    "later") from None
            raise ConfigError(f"judge preflight: {self.model} at {self.base_url} refused the "
                              f"request: {self._describe(err)}. Check OPENAI_API_KEY, "
                              "OPENAI_BASE_URL and JUDGE_MODEL") from None
        except (openai.APIConnectionError, openai.APIResponseValidationError, ValueError) as err:
            raise ProviderError(f"judge preflight: cannot reach {self.base_url}: "
                                f"{self._describe(err)}. Check OPENAI_BASE_URL and that the "
                                "server is up") from None

    def _describe(self, error: BaseException) -> str:
        """The error as one line: type, status and the provider's message, redacted, then
        cut to length (cutting first could leave part of a key)."""
        status = getattr(error, "status_code", None)
        text = f"{type(error).__name__}" + (f" {status}" if status else "")
        message = getattr(error, "message", None) or str(error)
        return self._redactor.text(f"{text}: {message}")[:300]
