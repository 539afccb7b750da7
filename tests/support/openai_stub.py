"""A local OpenAI-compatible HTTP server for tests and benchmarks (standard library only).

Usage::

    with OpenAIStub([ok("hello"), rate_limited(2), reset()]) as stub:
        client = openai.OpenAI(base_url=stub.base_url, api_key="sk-test", max_retries=0)
        client.chat.completions.create(model="m", messages=[...])   # -> "hello"
        stub.chat_requests()[0].body["model"]                        # -> "m"

The server binds 127.0.0.1 only, on a free port, and serves each connection in its own daemon
thread (HTTP/1.1 keep-alive, so it works with the openai client's connection pool).

Routes:

* ``POST /v1/chat/completions`` -- answered by the responder: a callable that receives the
  :class:`RecordedRequest` and returns a :class:`Reply`, or a sequence of replies consumed in
  arrival order (one per request) after which ``default`` (``ok("1")``) is used.
* ``GET /v1/models`` -- a fixed one-model list (not scripted).
* anything else -- 404 with an OpenAI-style error body.

Replies are built with :func:`ok`, :func:`status`, :func:`rate_limited`, :func:`timeout`,
:func:`reset` and :func:`malformed`; :func:`fixed_latency` is a responder for benchmarks.

Tool calling: an ``ok`` reply to a request that offers ``tools`` follows one deterministic rule,
so an agent framework (LangGraph's ``ToolNode``, the OpenAI Agents SDK) runs its whole loop
against the stub. The last user message names the calls the model is to make, each written
``tool_name(key=value, ...)`` (keyword arguments only, values Python literals: strings,
numbers, ``True``/``False``/``None``, lists, dicts; no ``)`` inside), in the order they are to
be made; a name that is not an offered tool is plain text. The stub asks for them one per
response, in that order (an assistant message with one ``tool_calls`` entry, ``finish_reason``
``"tool_calls"``), as long as the conversation after that user message holds fewer ``tool``
results than calls named; then it answers with the contents of those results joined by a
space (``finish_reason`` ``"stop"``). A message naming no call is answered with the reply's content,
as without tools. :func:`requested_calls` is the rule itself. Every response reports
``usage``: the prompt's words (every string content) and the answer's (its text, or each
call's name and JSON arguments).
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import json
import re
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

__all__ = [
    "OpenAIStub",
    "RecordedRequest",
    "Reply",
    "fixed_latency",
    "malformed",
    "ok",
    "rate_limited",
    "requested_calls",
    "reset",
    "status",
    "timeout",
]

HOST = "127.0.0.1"
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
STUB_MODEL = "stub-model"

_Kind = Literal["ok", "status", "reset", "malformed"]

# OpenAI's error "type" for the statuses tests usually script; anything else gets a generic one.
_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    409: ("invalid_request_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Reply:
    """One scripted response. Build it with :func:`ok`, :func:`status`, :func:`rate_limited`,
    :func:`timeout`, :func:`reset` or :func:`malformed` rather than directly."""

    kind: _Kind
    status: int = 200
    content: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: dict[str, Any] | None = None
    delay: float = 0.0


def ok(content: str, delay: float = 0.0) -> Reply:
    """200 with a valid ``chat.completion`` whose first choice's content is ``content``, sent after
    ``delay`` seconds."""
    if delay < 0:
        raise ValueError(f"delay must be >= 0, got {delay}")
    return Reply(kind="ok", content=content, delay=delay)


def error_body(code: int, message: str | None = None) -> dict[str, Any]:
    """The OpenAI-style error JSON for an HTTP status code."""
    err_type, err_code = _ERROR_TYPES.get(
        code, ("server_error", None) if code >= 500 else ("invalid_request_error", None)
    )
    if message is None:
        try:
            message = f"stub: {code} {HTTPStatus(code).phrase}"
        except ValueError:
            message = f"stub: {code}"
    return {"error": {"message": message, "type": err_type, "param": None, "code": err_code}}


def status(code: int, headers: dict[str, str] | None = None, body: dict | None = None) -> Reply:
    """An error status with an OpenAI-style error body (``body``, if given, is sent instead)."""
    if not 100 <= code <= 599:
        raise ValueError(f"not an HTTP status code: {code}")
    return Reply(
        kind="status",
        status=code,
        headers=tuple((headers or {}).items()),
        body=error_body(code) if body is None else body,
    )


def _format_seconds(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def rate_limited(retry_after: float | None = 0) -> Reply:
    """429 with ``Retry-After: <seconds>`` (no such header when ``retry_after`` is None)."""
    headers = None if retry_after is None else {"Retry-After": _format_seconds(retry_after)}
    return status(429, headers=headers, body=error_body(429, "stub: rate limit reached"))


def timeout(delay: float) -> Reply:
    """Sleep ``delay`` seconds, then answer ``ok("1")`` -- for exceeding a client's timeout."""
    return ok("1", delay=delay)


def reset() -> Reply:
    """Close the TCP connection abruptly (RST, via SO_LINGER 0) without any HTTP response."""
    return Reply(kind="reset", status=0)


def malformed() -> Reply:
    """200 with ``Content-Type: application/json`` and a body that is not valid JSON."""
    return Reply(kind="malformed")


def fixed_latency(seconds: float, content: str = "1") -> Callable[[RecordedRequest], Reply]:
    """A responder answering every request with ``ok(content, delay=seconds)``."""
    reply = ok(content, delay=seconds)

    def responder(request: RecordedRequest) -> Reply:
        return reply

    return responder


# --------------------------------------------------------------------------- recording


@dataclass
class RecordedRequest:
    """One request as the stub received it. Header names are lower-cased."""

    path: str
    headers: dict[str, str]
    body: dict | None  # parsed JSON body (None if absent or not a JSON object)
    method: str = "POST"
    raw_body: bytes = field(default=b"", repr=False)


Responder = Callable[[RecordedRequest], Reply]


_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\)")
"""``name(...)`` up to the first closing parenthesis: a tool call as a user message names it."""


def requested_calls(text: str, tools: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls ``text`` names, in order: each ``name(key=value, ...)`` whose name is one
    of ``tools``, with its keyword arguments (Python literals). ValueError names a call of an
    offered tool that is not written that way."""
    calls = []
    for match in _CALL.finditer(text):
        if match.group(1) not in tools:
            continue
        try:
            call = ast.parse(match.group(0), mode="eval").body
            if not isinstance(call, ast.Call) or call.args or any(
                    keyword.arg is None for keyword in call.keywords):
                raise ValueError("positional arguments")
            arguments = {str(k.arg): ast.literal_eval(k.value) for k in call.keywords}
        except (SyntaxError, ValueError) as err:
            raise ValueError(f"stub: cannot read the tool call {match.group(0)!r} ({err}): "
                             "write it tool_name(key=value, ...) with literal values") from None
        calls.append((match.group(1), arguments))
    return calls


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part["text"] for part in content
                        if isinstance(part, dict) and isinstance(part.get("text"), str))
    return ""


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools") or []
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
            and isinstance(tool["function"].get("name"), str)]


def _answer(content: str, body: dict[str, Any], number: int) -> tuple[dict[str, Any], str, int]:
    """The assistant message, its finish reason and its words: ``content``, or, when the
    request offers tools, what the tool rule says (the module's docstring)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    tools = _tool_names(body)
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not tools or not users:
        return message, "stop", len(content.split())
    wanted = requested_calls(_text(messages[users[-1]].get("content")), tools)
    results = [_text(m.get("content")) for m in messages[users[-1] + 1:]
               if m.get("role") == "tool"]
    if len(results) < len(wanted):
        name, arguments = wanted[len(results)]
        encoded = json.dumps(arguments)
        message.update(content=None, tool_calls=[{
            "id": f"call_stub_{number}", "type": "function",
            "function": {"name": name, "arguments": encoded}}])
        return message, "tool_calls", len(f"{name} {encoded}".split())
    if wanted:
        message["content"] = " ".join(results)
    return message, "stop", len(message["content"].split())


def _completion(content: str, request: RecordedRequest, number: int) -> dict[str, Any]:
    body = request.body or {}
    model = body.get("model")
    prompt_tokens = sum(len(_text(m.get("content")).split()) for m in body.get("messages") or []
                        if isinstance(m, dict))
    message, finish_reason, completion_tokens = _answer(content, body, number)
    return {
        "id": f"chatcmpl-stub-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model if isinstance(model, str) else STUB_MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
        "system_fingerprint": "fp_stub",
    }


# --------------------------------------------------------------------------- server


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # never wait for a handler on close (e.g. one sleeping in a delay)
    block_on_close = False
    allow_reuse_address = False
    request_queue_size = 256  # many concurrent connects must not overflow the listen backlog

    def __init__(self, stub: OpenAIStub) -> None:
        self.stub = stub
        super().__init__((HOST, 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would call socket.getfqdn(), a possibly slow reverse lookup.
        TCPServer.server_bind(self)
        host, port = self.socket.getsockname()[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, pool shutdown) and our own stop are not errors.
        if isinstance(sys.exc_info()[1], OSError) or self.stub.stopping:
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive; every response carries Content-Length
    server_version = "OpenAIStub/1.0"
    sys_version = ""
    timeout = 60  # an idle keep-alive connection is dropped after this long
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms stall
    server: _Server

    # -- plumbing

    def setup(self) -> None:
        super().setup()
        self.server.stub._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.stub._untrack(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # the peer went away (or we are stopping): just drop the socket
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base-class signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET  # noqa: N815

    # -- request handling

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        raw = self._read_body()
        try:
            parsed = json.loads(raw) if raw else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        request = RecordedRequest(
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=parsed if isinstance(parsed, dict) else None,
            method=self.command,
            raw_body=raw,
        )
        stub = self.server.stub
        stub._record(request)
        route = urlsplit(self.path).path.rstrip("/")

        if self.command == "POST" and route == CHAT_PATH:
            try:
                reply = stub._reply_for(request)
            except Exception as exc:  # a broken responder shows up as a 500, not a hang
                self._send_json(500, error_body(500, f"stub responder failed: {exc!r}"))
                return
            self._send_reply(reply, request)
        elif self.command == "GET" and route == MODELS_PATH:
            models = {
                "object": "list",
                "data": [{"id": STUB_MODEL, "object": "model", "created": 0, "owned_by": "stub"}],
            }
            self._send_json(200, models)
        else:
            self._send_json(404, error_body(404, f"stub: no route for {self.command} {self.path}"))

    def _send_reply(self, reply: Reply, request: RecordedRequest) -> None:
        if reply.delay > 0 and self.server.stub._stop.wait(reply.delay):
            self._abort()  # stopping: give up on this response
            return
        if reply.kind == "ok":
            number = self.server.stub._next_id()
            try:
                completion = _completion(reply.content or "", request, number)
            except ValueError as err:  # a tool call the rule cannot read: the request's fault
                self._send_json(400, error_body(400, str(err)))
                return
            self._send_json(200, completion)
        elif reply.kind == "status":
            self._send_json(reply.status, reply.body or {}, reply.headers)
        elif reply.kind == "malformed":
            self._send_raw(200, b'{"id": "chatcmpl-stub", "choices": [', "application/json")
        elif reply.kind == "reset":
            self._abort()
        else:  # pragma: no cover - Reply is only built by the helpers above
            raise ValueError(f"unknown reply kind {reply.kind!r}")

    def _send_json(self, code: int, payload: dict, headers: Sequence[tuple[str, str]] = ()) -> None:
        self._send_raw(code, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(
        self,
        code: int,
        data: bytes,
        content_type: str,
        headers: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_stub_{self.server.stub._next_id()}")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _abort(self) -> None:
        """Close the connection with a TCP RST and no response bytes at all."""
        self.close_connection = True
        sock = self.connection
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # rfile (a makefile) holds a reference to the socket: the fd is only really closed, and
        # the RST sent, once both are closed. wfile writes straight to the socket and may stay
        # open (handle_one_request flushes it); finish()/shutdown_request() cope with the rest.
        with contextlib.suppress(OSError):
            self.rfile.close()
        with contextlib.suppress(OSError):
            sock.close()


class OpenAIStub:
    """A local OpenAI-compatible server. ``with OpenAIStub(responder) as stub:`` starts it in a
    daemon thread; leaving the block stops it promptly (even mid-delay) and joins the thread.

    ``responder`` is a callable ``RecordedRequest -> Reply`` deciding every chat completion, or a
    sequence of replies consumed in order (one per request, thread-safe) after which ``default``
    (``ok("1")`` unless given) answers; ``None`` means always ``default``.
    """

    def __init__(
        self,
        responder: Responder | Sequence[Reply] | None = None,
        default: Reply | None = None,
    ) -> None:
        self.default = default if default is not None else ok("1")
        self._responder: Responder | None = None
        self._script: deque[Reply] = deque()
        if callable(responder):
            self._responder = responder
        elif isinstance(responder, Reply):
            self._script = deque([responder])
        elif responder is not None:
            self._script = deque(responder)
            if not all(isinstance(reply, Reply) for reply in self._script):
                raise TypeError("a scripted responder must be a sequence of Reply objects")
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stop = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.host = HOST
        self.port = 0
        self.base_url = ""

    # -- lifecycle

    def start(self) -> OpenAIStub:
        if self._server is not None:
            raise RuntimeError("OpenAIStub already started")
        self._stop.clear()
        self._server = _Server(self)
        self.host, self.port = self._server.server_name, self._server.server_port
        self.base_url = f"http://{self.host}:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"OpenAIStub:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stop.set()  # wakes handlers sleeping in a delay
        server.shutdown()  # returns once serve_forever has left its loop
        with self._lock:  # wake handlers blocked reading an idle keep-alive connection
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- inspection

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def server_address(self) -> tuple[str, int]:
        """The (host, port) the listening socket is actually bound to."""
        if self._server is None:
            raise RuntimeError("OpenAIStub is not running")
        host, port = self._server.socket.getsockname()[:2]
        return host, port

    def chat_requests(self) -> list[RecordedRequest]:
        """The ``POST /v1/chat/completions`` requests, in arrival order."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.method == "POST" and urlsplit(r.path).path.rstrip("/") == CHAT_PATH
            ]

    # -- used by the handler threads

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _reply_for(self, request: RecordedRequest) -> Reply:
        if self._responder is not None:
            reply = self._responder(request)
            if not isinstance(reply, Reply):
                raise TypeError(f"responder returned {type(reply).__name__}, not Reply")
            return reply
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def _next_id(self) -> int:
        return next(self._ids)  # itertools.count is atomic under the GIL

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)
