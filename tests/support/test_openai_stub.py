"""The local OpenAI stub, exercised with the real ``openai`` client over real HTTP.

Observed with openai 3.57 (httpx2 transport), ``max_retries=0``:

=================  ==============================================================
stub reply         exception raised by ``client.chat.completions.create``
=================  ==============================================================
status(400)        openai.BadRequestError
status(401)        openai.AuthenticationError
status(404)        openai.NotFoundError
status(500)        openai.InternalServerError
status(503)        openai.InternalServerError (every status >= 500; an APIStatusError)
rate_limited(2)    openai.RateLimitError, ``.response.headers["retry-after"] == "2"``
timeout(2)         openai.APITimeoutError (client timeout 0.5 s; cause httpx2.ReadTimeout)
reset()            openai.APIConnectionError (cause httpx2.ReadError, ECONNRESET)
malformed()        json.JSONDecodeError -- NOT wrapped, not an openai.OpenAIError
=================  ==============================================================
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest

from tests.support.openai_stub import (
    OpenAIStub,
    RecordedRequest,
    Reply,
    malformed,
    ok,
    rate_limited,
    requested_calls,
    reset,
    status,
    timeout,
)

MESSAGES: Any = [
    {"role": "system", "content": "Answer with one digit."},
    {"role": "user", "content": "What is 0 + 1?"},
]


@contextmanager
def client_for(stub: OpenAIStub, timeout: float = 5.0) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(
        base_url=stub.base_url, api_key="sk-test", max_retries=0, timeout=timeout
    )
    try:
        yield client
    finally:
        client.close()


def ask(client: openai.OpenAI, content: str = "What is 0 + 1?", **kwargs: Any) -> str | None:
    messages: Any = [{"role": "user", "content": content}]
    response = client.chat.completions.create(model="gpt-test", messages=messages, **kwargs)
    return response.choices[0].message.content


def test_ok_round_trip_and_request_is_recorded() -> None:
    with OpenAIStub([ok("hello world")]) as stub, client_for(stub) as client:
        response = client.chat.completions.create(
            model="gpt-test", messages=MESSAGES, temperature=0.0, seed=42, max_tokens=7
        )
        assert response.choices[0].message.content == "hello world"
        assert response.choices[0].message.role == "assistant"
        assert response.choices[0].finish_reason == "stop"
        assert response.object == "chat.completion"
        assert response.model == "gpt-test"  # echoed from the request
        assert response.usage is not None
        assert response.usage.completion_tokens == 2
        assert response.usage.total_tokens == (
            response.usage.prompt_tokens + response.usage.completion_tokens
        )

        [recorded] = stub.chat_requests()
        assert recorded.path == "/v1/chat/completions"
        assert recorded.method == "POST"
        assert recorded.headers["authorization"] == "Bearer sk-test"
        assert recorded.body == {
            "model": "gpt-test",
            "messages": MESSAGES,
            "temperature": 0.0,
            "seed": 42,
            "max_tokens": 7,
        }


@pytest.mark.parametrize(
    ("code", "exc_type"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (500, openai.InternalServerError),
    ],
)
def test_status_maps_to_openai_exception(code: int, exc_type: type[openai.APIStatusError]) -> None:
    with OpenAIStub([status(code)]) as stub, client_for(stub) as client:
        with pytest.raises(exc_type) as info:
            ask(client)
        assert type(info.value) is exc_type
        assert info.value.status_code == code
        # the client unwraps {"error": {...}} into .body / .type / .code
        assert isinstance(info.value.body, dict)
        assert "message" in info.value.body


def test_status_503_is_an_api_status_error() -> None:
    with OpenAIStub([status(503)]) as stub, client_for(stub) as client:
        with pytest.raises(openai.APIStatusError) as info:
            ask(client)
        assert info.value.status_code == 503
        assert type(info.value) is openai.InternalServerError  # what openai 3.x picks for 5xx


def test_status_custom_headers_and_body() -> None:
    body = {"error": {"message": "nope", "type": "custom_type", "code": "custom_code"}}
    reply = status(403, headers={"X-Stub": "yes"}, body=body)
    with OpenAIStub([reply]) as stub, client_for(stub) as client:
        with pytest.raises(openai.PermissionDeniedError) as info:
            ask(client)
        assert info.value.response.headers["x-stub"] == "yes"
        assert info.value.type == "custom_type"
        assert info.value.code == "custom_code"
        assert "nope" in str(info.value)


def test_rate_limited_sends_retry_after() -> None:
    with OpenAIStub([rate_limited(2), rate_limited(None)]) as stub, client_for(stub) as client:
        with pytest.raises(openai.RateLimitError) as info:
            ask(client)
        assert info.value.status_code == 429
        assert info.value.response.headers["retry-after"] == "2"

        with pytest.raises(openai.RateLimitError) as info:
            ask(client)
        assert "retry-after" not in info.value.response.headers


def test_timeout_raises_api_timeout_error() -> None:
    # The stub holds the reply for 30 s; the client gives up at its own 0.5 s timeout.
    with OpenAIStub([timeout(30)]) as stub, client_for(stub, timeout=0.5) as client:
        with pytest.raises(openai.APITimeoutError):
            ask(client)
        assert len(stub.chat_requests()) == 1


def test_reset_raises_api_connection_error_and_later_requests_work() -> None:
    with OpenAIStub([reset(), ok("after")]) as stub, client_for(stub) as client:
        with pytest.raises(openai.APIConnectionError) as info:
            ask(client)
        assert type(info.value) is openai.APIConnectionError  # not the APITimeoutError subclass
        assert isinstance(info.value.__cause__, Exception)
        assert "reset" in str(info.value.__cause__).lower()
        assert ask(client) == "after"


def test_reset_does_not_disturb_other_connections() -> None:
    def responder(request: RecordedRequest) -> Reply:
        content = (request.body or {})["messages"][0]["content"]
        if content == "boom":
            return reset()
        return ok(content, delay=0.3 if content == "slow" else 0.0)

    results: list[str | None] = []
    with OpenAIStub(responder) as stub, client_for(stub) as client:
        slow = threading.Thread(target=lambda: results.append(ask(client, "slow")))
        slow.start()
        time.sleep(0.05)  # the slow request is in flight on its own connection
        with pytest.raises(openai.APIConnectionError):
            ask(client, "boom")
        slow.join(timeout=5)
        assert results == ["slow"]
        assert ask(client, "again") == "again"


def test_malformed_json_raises_json_decode_error() -> None:
    # openai 3.x does not wrap this: response.json() raises straight through the client.
    with OpenAIStub([malformed(), ok("fine")]) as stub, client_for(stub) as client:
        with pytest.raises(json.JSONDecodeError) as info:
            ask(client)
        assert not isinstance(info.value, openai.OpenAIError)
        assert ask(client) == "fine"  # the connection / server are still usable


def test_sequence_is_consumed_in_order_then_default() -> None:
    script = [ok("a"), status(500), ok("b")]
    with OpenAIStub(script, default=ok("z")) as stub, client_for(stub) as client:
        assert ask(client) == "a"
        with pytest.raises(openai.InternalServerError):
            ask(client)
        assert ask(client) == "b"
        assert [ask(client) for _ in range(3)] == ["z", "z", "z"]
        assert len(stub.chat_requests()) == 6

    with OpenAIStub([ok("only")]) as stub, client_for(stub) as client:
        assert ask(client) == "only"
        assert ask(client) == "1"  # default default


def test_callable_responder_sees_the_request() -> None:
    def echo(request: RecordedRequest) -> Reply:
        body = request.body or {}
        return ok(f"{body['model']}:{body['messages'][-1]['content']}")

    with OpenAIStub(echo) as stub, client_for(stub) as client:
        assert ask(client, "ping") == "gpt-test:ping"


def test_failing_responder_is_a_500() -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise RuntimeError("responder bug")

    with (
        OpenAIStub(broken) as stub,
        client_for(stub) as client,
        pytest.raises(openai.InternalServerError, match="responder bug"),
    ):
        ask(client)


def test_concurrent_requests_run_in_parallel() -> None:
    # Every request is held until all 16 are in the server at once: a server that served
    # them one at a time would leave the barrier broken.
    n = 16
    together = threading.Barrier(n, timeout=30)
    results: list[str | None] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def all_at_once(request: RecordedRequest) -> Reply:
        together.wait()
        return ok("x")

    with OpenAIStub(all_at_once) as stub, client_for(stub) as client:

        def worker() -> None:
            try:
                answer = ask(client)
            except BaseException as exc:  # surfaced in the main thread below
                with lock:
                    errors.append(exc)
            else:
                with lock:
                    results.append(answer)

        threads = [threading.Thread(target=worker) for _ in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

        assert errors == []
        assert results == ["x"] * n
        assert len(stub.chat_requests()) == n
        assert not together.broken


def test_models_endpoint_and_unknown_paths() -> None:
    with OpenAIStub([status(500)]) as stub, client_for(stub) as client:
        models = client.models.list()
        assert [m.id for m in models.data] == ["stub-model"]

        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{stub.base_url}/nope", timeout=5)
        assert info.value.code == 404
        error = json.loads(info.value.read())["error"]
        assert set(error) >= {"message", "type", "code"}

        # neither touched the script: the first chat request still gets status(500)
        with pytest.raises(openai.InternalServerError):
            ask(client)
        assert [r.path for r in stub.requests] == [
            "/v1/models",
            "/v1/nope",
            "/v1/chat/completions",
        ]
        assert len(stub.chat_requests()) == 1


def test_binds_loopback_only() -> None:
    with OpenAIStub() as stub:
        host, port = stub.server_address
        assert host == "127.0.0.1"
        assert stub.base_url == f"http://127.0.0.1:{port}/v1"
        if sys.platform.startswith("linux"):
            # all of 127/8 is local on Linux; a wildcard bind would accept here
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.2", port), timeout=2).close()


def test_exit_does_not_wait_for_a_handler_that_sleeps() -> None:
    # Leaving the block wakes the handler held in a 300 s delay instead of waiting for it:
    # the exit, on a thread of its own, ends long before that delay would.
    stub = OpenAIStub([timeout(300)])
    exited = threading.Event()

    def use_and_leave() -> None:
        with stub, client_for(stub, timeout=0.2) as client, \
                pytest.raises(openai.APITimeoutError):
            ask(client)
        exited.set()

    threading.Thread(target=use_and_leave, daemon=True).start()
    assert exited.wait(60), "leaving the stub waited for its sleeping handler"
    with pytest.raises(RuntimeError):
        _ = stub.server_address  # stopped


# --------------------------------------------------------------------------- tool calling

TOOLS: Any = [
    {"type": "function", "function": {
        "name": name, "description": f"the {name} tool",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": True}}}
    for name in ("lookup_order", "refund_order")
]


def chat(client: openai.OpenAI, messages: list[Any], tools: Any = TOOLS) -> Any:
    return client.chat.completions.create(model="gpt-test", messages=messages, tools=tools)


def test_the_calls_named_are_asked_for_one_at_a_time_then_answered_from_their_results(
        ) -> None:
    question = ('Order A-17 came broken: lookup_order(order_id="A-17") then '
                'refund_order(order_id="A-17", amount=40.5, items=["mug"], notify=True)')
    messages: list[Any] = [{"role": "system", "content": "You handle orders."},
                           {"role": "user", "content": question}]
    with OpenAIStub() as stub, client_for(stub) as client:
        first = chat(client, messages)
        [choice] = first.choices
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content is None
        [call] = choice.message.tool_calls
        assert call.type == "function"
        assert call.function.name == "lookup_order"
        assert json.loads(call.function.arguments) == {"order_id": "A-17"}
        # prompt: every string content's words (3 + 10); answer: the name and its JSON arguments
        assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (13, 3)
        assert first.usage.total_tokens == 16

        messages += [choice.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "A-17: delivered"}]
        second = chat(client, messages)
        [call2] = second.choices[0].message.tool_calls
        assert second.choices[0].finish_reason == "tool_calls"
        assert call2.function.name == "refund_order"
        assert json.loads(call2.function.arguments) == {
            "order_id": "A-17", "amount": 40.5, "items": ["mug"], "notify": True}
        assert call2.id != call.id
        assert second.usage.prompt_tokens == 13 + 2

        messages += [second.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call2.id, "content": "refunded 40.5"}]
        final = chat(client, messages)
        assert final.choices[0].finish_reason == "stop"
        assert final.choices[0].message.tool_calls is None
        assert final.choices[0].message.content == "A-17: delivered refunded 40.5"
        assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (13 + 2 + 2, 4)
        # the tools reach the stub as sent
        assert [t["function"]["name"] for t in stub.chat_requests()[0].body["tools"]] == [
            "lookup_order", "refund_order"]


def test_a_message_naming_no_call_is_answered_with_the_replys_content() -> None:
    plain = [{"role": "user", "content": "What are your opening hours? lookup_order"}]
    with OpenAIStub([ok("nine to five")]) as stub, client_for(stub) as client:
        answer = chat(client, plain)
        assert answer.choices[0].finish_reason == "stop"
        assert answer.choices[0].message.content == "nine to five"
        assert answer.choices[0].message.tool_calls is None
        assert answer.usage.completion_tokens == 3
        # without tools a named call is only text: the reply's content
        named = [{"role": "user", "content": 'lookup_order(order_id="A-17")'}]
        assert client.chat.completions.create(
            model="m", messages=named).choices[0].message.content == "1"


def test_only_the_last_user_message_names_the_calls() -> None:
    # an earlier turn's calls were answered already: the new question names none of its own
    messages = [{"role": "user", "content": 'lookup_order(order_id="A-17")'},
                {"role": "assistant", "content": "A-17: delivered"},
                {"role": "user", "content": "thanks"}]
    with OpenAIStub(default=ok("welcome")) as stub, client_for(stub) as client:
        assert chat(client, messages).choices[0].message.content == "welcome"


def test_a_call_the_rule_cannot_read_is_a_400_naming_it() -> None:
    messages = [{"role": "user", "content": "lookup_order(A-17)"}]
    with OpenAIStub() as stub, client_for(stub) as client:
        with pytest.raises(openai.BadRequestError, match=r"lookup_order\(A-17\)"):
            chat(client, messages)
        assert chat(client, [{"role": "user", "content": "fine"}]).choices[0].message.content \
            == "1"  # the stub serves on


@pytest.mark.parametrize(("text", "calls"), [
    ("", []),
    ("no calls here", []),
    ("lookup_order()", [("lookup_order", {})]),
    ("unknown_tool(x=1) then lookup_order(id=2)", [("lookup_order", {"id": 2})]),
    ("refund_order(a=None, b={'k': [1, 2.5]}) lookup_order(s='x, y')",
     [("refund_order", {"a": None, "b": {"k": [1, 2.5]}}), ("lookup_order", {"s": "x, y"})]),
    ("lookup_order(n=1) lookup_order(n=2)",
     [("lookup_order", {"n": 1}), ("lookup_order", {"n": 2})]),
    ("xlookup_order(n=1)", []),  # a name must be whole
])
def test_requested_calls(text: str, calls: list[Any]) -> None:
    assert requested_calls(text, {"lookup_order", "refund_order"}) == calls


@pytest.mark.parametrize("text", ["lookup_order(1)", "lookup_order(n=len(x))",
                                  "lookup_order(**kw)", "lookup_order(n=)"])
def test_requested_calls_refuses_what_is_not_keyword_literals(text: str) -> None:
    with pytest.raises(ValueError, match="cannot read the tool call"):
        requested_calls(text, {"lookup_order"})
