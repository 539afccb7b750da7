"""One component call, made safe: whatever the component does is that call's result.

A component is foreign code. Whatever it returns or raises becomes a :class:`CallRecord`: an
output that is plain JSON (bounded in size and depth, finite numbers, valid Unicode), or an
error message that can always be rendered and written. Only ``KeyboardInterrupt`` escapes: an
interrupt stays an interrupt.

The spans the component makes while it runs (its tools, its LLM requests) are recorded with
the call, redacted as its output is, by a :data:`SpanCapture` the run gives the engine
(MLflow's, from :mod:`evalkit.tracking`); the engine itself knows no tracing library.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from evalkit._secrets import Redactor
from evalkit.dataset import Entry
from evalkit.records import (
    CallRecord,
    SpanRecord,
    TokenUsage,
    checked_usage,
    merged,
    usage_of,
    usage_of_spans,
)

MAX_OUTPUT_CHARS = 1_000_000
"""Longest output kept, as JSON text; a larger one is recorded as an error."""
MAX_OUTPUT_DEPTH = 100
"""Deepest nesting of lists and objects kept; scorers and reports recurse over outputs."""
MAX_MESSAGE_CHARS = 4000
"""Longest error message kept; the rest is cut, saying how much."""


class UsageMeter:
    """The tokens one call's LLM requests used, as the component reports them (from any
    thread)."""

    def __init__(self) -> None:
        self._usages: list[TokenUsage] = []
        self._lock = threading.Lock()

    def add(self, usage: TokenUsage) -> None:
        with self._lock:
            self._usages.append(usage)

    def recorded(self) -> tuple[TokenUsage, ...]:
        """One usage per model, summed."""
        with self._lock:
            return merged(self._usages)


Response = TypeVar("Response")


@dataclass(frozen=True)
class Call:
    """What the component receives besides the entry: fresh mocks, which repeat this is, and
    where to report the tokens its LLM requests use."""

    mocks: Mapping[str, Any]
    """Adapter name -> adapter built from this entry's ``mock_fixtures`` for this call only."""
    repeat: int
    """0-based index of this call among the entry's calls."""
    repeats: int
    """How many calls the entry gets in this run (1, or ``REPEAT_COUNT``)."""
    seed: int | None = None
    """The replicate's seed in replicate mode (derive per-call randomness from it together
    with the entry id and ``repeat``); ``None`` in an ordinary run."""
    replicate: int | None = None
    """0-based replicate index in replicate mode; ``None`` in an ordinary run."""
    meter: UsageMeter = field(default_factory=UsageMeter, repr=False, compare=False)
    """This call's reported usage (a new :class:`Call`, a new meter: one per call)."""

    def record_usage(self, *, input_tokens: int, output_tokens: int,
                     model: str | None = None) -> None:
        """Report the tokens one LLM request of this call used (once per request; they add
        up). They go on the call's trace (MLflow's Token Usage), into the run's metrics and,
        for a model ``TOKEN_PRICES`` prices, its cost. Raises ``ValueError`` for a count that
        is not a whole number of at least 0."""
        self.meter.add(checked_usage(input_tokens, output_tokens, model))

    def record_llm_response(self, response: Response, model: str | None = None) -> Response:
        """Report the usage an OpenAI-compatible response carries (``response.usage``, or
        ``response["usage"]`` of a dict; a :class:`~evalkit.ChatEndpoint` reply too), named
        for ``model`` or else the response's ``model``; returns ``response``. A response
        without usage reports nothing; counts that are not whole numbers of at least 0 raise
        ``ValueError``, as with :meth:`record_usage`."""
        usage = usage_of(response, model)
        if usage is not None:
            self.meter.add(usage)
        return response


Component = Callable[[Entry, Call], Any]

SpanCapture = Callable[[], AbstractContextManager[list[SpanRecord]]]
"""Records the spans a component makes during one call: entered around the call (in the
thread, or the task, the component runs in), its list holds them, in the order they started,
once it has exited."""


def no_capture() -> AbstractContextManager[list[SpanRecord]]:
    """The capture of a run that keeps no spans."""
    return nullcontext([])


def invoke(component: Component, entry: Entry, call: Call,
           adapters: Mapping[str, Callable[[Any], Any]], redactor: Redactor,
           capture: SpanCapture = no_capture) -> CallRecord:
    """One call, given everything of ``call`` but its mocks, which are built fresh here.

    Raises only ``KeyboardInterrupt``; everything else the component does is recorded."""
    started = time.perf_counter()
    failure: BaseException | None = None
    output: Any = None
    with capture() as spans:
        try:
            output = component(entry, with_fresh_mocks(call, entry, adapters))
        except KeyboardInterrupt:
            raise
        # A component failure of any kind (SystemExit, GeneratorExit included) is a result,
        # not a crash of the run.
        except BaseException as err:  # noqa: BLE001
            failure = err
    return call_record(entry, call, started, redactor, spans, output, failure)


def with_fresh_mocks(call: Call, entry: Entry,
                     adapters: Mapping[str, Callable[[Any], Any]]) -> Call:
    """``call`` with a fresh mock adapter per fixture of the entry (never shared by calls);
    its usage meter stays the same, so what the component reports reaches the record."""
    return replace(call, mocks={name: adapters[name](fixture)
                                for name, fixture in entry.mock_fixtures.items()})


def call_record(entry: Entry, call: Call, started: float, redactor: Redactor,
                spans: Sequence[SpanRecord], output: Any, failure: BaseException | None
                ) -> CallRecord:
    """The record of a call begun at ``started`` (``time.perf_counter``) that raised
    ``failure``, or else returned ``output``, having made ``spans``."""
    if failure is not None:
        return _failed_call(entry, call, failure, started, redactor, spans)
    return _settled_call(entry, call, output, started, redactor, spans)


def _failed_call(entry: Entry, call: Call, err: BaseException, started: float,
                 redactor: Redactor, spans: Sequence[SpanRecord]) -> CallRecord:
    """The record of a call that raised ``err`` (with the tokens it reported and the spans it
    made: they were spent)."""
    latency = (time.perf_counter() - started) * 1000
    kept = redacted_spans(spans, redactor)
    return CallRecord(entry.id, call.repeat, None, error_message(err, redactor), latency,
                      _call_usage(call, kept), kept)


def _settled_call(entry: Entry, call: Call, output: Any, started: float,
                  redactor: Redactor, spans: Sequence[SpanRecord]) -> CallRecord:
    """The record of a call that returned ``output``: kept as a plain JSON value, redacted,
    or an ``OutputNotKept`` error saying why it cannot be."""
    latency = (time.perf_counter() - started) * 1000
    kept_spans = redacted_spans(spans, redactor)
    usage = _call_usage(call, kept_spans)
    try:
        kept, problem = plain_output(output)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - an output whose methods raise while read
        kept, problem = None, f"reading it raised {error_message(err, redactor)}"
    if problem is not None:
        return CallRecord(entry.id, call.repeat, None, redactor.text(
            f"OutputNotKept: the component returned {_type_name(output)}: {problem}"), latency,
            usage, kept_spans)
    return CallRecord(entry.id, call.repeat, redactor.value(kept), None, latency, usage,
                      kept_spans)


def redacted_spans(spans: Sequence[SpanRecord], redactor: Redactor) -> tuple[SpanRecord, ...]:
    """The component's spans as the record keeps them: redacted, a secret in a tool's
    arguments or an LLM request's headers included."""
    return tuple(SpanRecord.from_json(redactor.value(s.to_json())) for s in spans)


def _call_usage(call: Call, spans: Sequence[SpanRecord]) -> tuple[TokenUsage, ...]:
    """The call's tokens: those its own spans carry (autologged LLM requests) when any do,
    else those the component reported. Never both: a component that autologs and also
    reports its responses would count each request twice."""
    return usage_of_spans(spans) or call.meter.recorded()


def timed_out(entry: Entry, call: Call, seconds: float) -> CallRecord:
    """The record of a call that did not return within ``CALL_TIMEOUT`` (with the tokens it
    reported until then)."""
    return CallRecord(entry.id, call.repeat, None,
                      f"CallTimeout: no result within CALL_TIMEOUT = {seconds:g} s; the call "
                      "was abandoned (raise CALL_TIMEOUT if the component is just slow)",
                      seconds * 1000, call.meter.recorded())


def error_message(err: BaseException, redactor: Redactor) -> str:
    """``Type: message`` of an exception, rendered whatever its ``__str__`` does."""
    name = _type_name(err)
    try:
        text = str(err)
    except KeyboardInterrupt:
        raise
    except BaseException as failure:  # noqa: BLE001 - a message that cannot be rendered
        text = f"<the message could not be rendered: {_type_name(failure)}>"
    return redactor.text(safe_text(f"{name}: {text}" if text else name, MAX_MESSAGE_CHARS))


def safe_text(text: str, limit: int) -> str:
    """``text`` as valid UTF-8 (unpaired surrogates shown as ``\\udcxx``), at most ``limit``
    characters plus a note of how many were cut."""
    text = str.__str__(text).encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters cut)"
    return text


def plain_output(output: Any) -> tuple[Any, str | None]:
    """The output as a plain JSON value, or ``(None, why it cannot be kept)``."""
    try:
        text = json.dumps(output, ensure_ascii=False, allow_nan=False)
    except RecursionError:
        return None, f"nested deeper than {MAX_OUTPUT_DEPTH} levels"
    except (TypeError, ValueError) as err:
        return None, (f"{safe_text(str(err), 300)}; return a string, number, boolean, list or "
                      "dict of them (finite numbers only)")
    if len(text) > MAX_OUTPUT_CHARS:
        return None, (f"{len(text):,} characters of JSON; at most {MAX_OUTPUT_CHARS:,} are "
                      "kept: return a summary, or log the full output yourself")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None, ("text with unpaired surrogates (not valid Unicode); decode bytes with "
                      "errors='replace' before returning them")
    value = json.loads(text)
    if _depth(value) > MAX_OUTPUT_DEPTH:
        return None, f"nested deeper than {MAX_OUTPUT_DEPTH} levels"
    return value, None


def _depth(value: Any) -> int:
    """How many lists and objects are nested in a JSON value, at the deepest; no recursion."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node \
            if isinstance(node, list) else None
        if children is not None:
            deepest = max(deepest, level + 1)
            stack += [(child, level + 1) for child in children]
    return deepest


def _type_name(value: Any) -> str:
    return type(value).__name__
