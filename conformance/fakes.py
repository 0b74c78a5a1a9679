"""Fake model servers on 127.0.0.1 for driving real hosts offline.

Each records every request body and replays queued replies, one per model request:
a reply is the assistant's text, or an int for that HTTP error status. The Responses
fake follows the event order in hosts.md §2.4 (Codex), the Messages fake speaks
Anthropic's streaming format (Claude Code) and the chat fake speaks chat-completions
SSE (DSH) and the Gemini fake speaks the Gemini API's ``streamGenerateContent`` SSE
(Gemini CLI); all four also take ``{"tool": name, "arguments": {...}}`` for a tool
call (the Responses fake with an optional ``"namespace"``, as Codex names MCP tools).
"""

from __future__ import annotations

import abc
import json
import sys
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet request handler that can answer one JSON document."""

    def log_message(self, *args: object) -> None:  # the fakes run inside tests: no noise
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _json(self, status: int, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _HostServer(ThreadingHTTPServer):
    """The fakes' HTTP server: a host that hangs up mid-reply is no error of ours."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Say nothing when the host went away mid-reply; print anything else.

        A host abandons a request whenever it likes (it exits with a stream still
        open, or cancels one), and the next write to that socket fails with a reset
        or a broken pipe. That is the host's business: printing it as a traceback
        would read, in a conformance run's output, as a failure of the run.
        """
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LoopbackServer(abc.ABC):
    """Records request bodies and replays queued replies; use it as a context manager."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: deque[Any] = deque()
        self._server = _HostServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def reply(self, *replies: Any) -> None:
        """Queue the next replies, one per model request."""
        self.replies.extend(replies)

    @abc.abstractmethod
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler that speaks this fake's wire format."""


class FakeResponses(LoopbackServer):
    """Start with ``with FakeResponses() as fake:``; ``fake.port``, ``fake.requests``."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self._body()
                fake.requests.append(body)
                reply = fake.replies.popleft() if fake.replies else "ok"
                if isinstance(reply, int):
                    error = {"message": "bad request", "type": "invalid_request_error"}
                    self._json(reply, {"error": error})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if isinstance(reply, dict):
                    self._function_call(reply)
                    return
                item = {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply, "annotations": []}],
                }
                events: list[tuple[str, dict[str, Any]]] = [
                    (
                        "response.created",
                        {"type": "response.created", "response": {"id": "resp_1"}},
                    ),
                    (
                        "response.output_item.added",
                        {
                            "type": "response.output_item.added",
                            "output_index": 0,
                            "item": {**item, "status": "in_progress", "content": []},
                        },
                    ),
                    (
                        "response.output_text.delta",
                        {
                            "type": "response.output_text.delta",
                            "item_id": "msg_1",
                            "output_index": 0,
                            "content_index": 0,
                            "delta": reply,
                        },
                    ),
                    (
                        "response.output_item.done",
                        {"type": "response.output_item.done", "output_index": 0, "item": item},
                    ),
                    (
                        "response.completed",
                        {
                            "type": "response.completed",
                            "response": {
                                "id": "resp_1",
                                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
                            },
                        },
                    ),
                ]
                self._events(events)

            def _function_call(self, reply: dict[str, Any]) -> None:
                item = {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "name": reply["tool"],
                    "arguments": json.dumps(reply.get("arguments") or {}),
                    "status": "completed",
                }
                if reply.get("namespace"):
                    item["namespace"] = reply["namespace"]
                usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
                self._events(
                    [
                        ("response.created", {"type": "response.created", "response": {"id": "r"}}),
                        (
                            "response.output_item.done",
                            {"type": "response.output_item.done", "output_index": 0, "item": item},
                        ),
                        (
                            "response.completed",
                            {"type": "response.completed", "response": {"id": "r", "usage": usage}},
                        ),
                    ]
                )

            def _events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

        return Handler


def _message(body: dict[str, Any]) -> dict[str, Any]:
    """An empty assistant message of the Messages API, for the model ``body`` asked."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }


class FakeMessages(LoopbackServer):
    """``with FakeMessages() as fake:``; ``fake.port``, ``fake.requests``, ``fake.reply()``."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self._body()
                if not self.path.startswith("/v1/messages"):
                    self._json(
                        404,
                        {"type": "error", "error": {"type": "not_found_error", "message": "no"}},
                    )
                    return
                if "count_tokens" in self.path:
                    self._json(200, {"input_tokens": 1})
                    return
                fake.requests.append(body)
                text = fake.replies.popleft() if fake.replies else "ok"
                if isinstance(text, dict):
                    self._tool_use(body, text)
                    return
                message = _message(body)
                if not body.get("stream"):
                    self._json(
                        200,
                        {
                            **message,
                            "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn",
                        },
                    )
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                events: list[tuple[str, dict[str, Any]]] = [
                    ("message_start", {"type": "message_start", "message": message}),
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": 0,
                            "content_block": {"type": "text", "text": ""},
                        },
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": text},
                        },
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                            "usage": {"output_tokens": 1},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
                self._events(events)

            def _tool_use(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
                block = {"type": "tool_use", "id": "toolu_1", "name": reply["tool"]}
                arguments = reply.get("arguments") or {}
                message = _message(body)
                if not body.get("stream"):
                    content = [{**block, "input": arguments}]
                    self._json(200, {**message, "content": content, "stop_reason": "tool_use"})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
                stop = {"stop_reason": "tool_use", "stop_sequence": None}
                self._events(
                    [
                        ("message_start", {"type": "message_start", "message": message}),
                        (
                            "content_block_start",
                            {
                                "type": "content_block_start",
                                "index": 0,
                                "content_block": {**block, "input": {}},
                            },
                        ),
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": 0, "delta": delta},
                        ),
                        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                        (
                            "message_delta",
                            {"type": "message_delta", "delta": stop, "usage": {"output_tokens": 1}},
                        ),
                        ("message_stop", {"type": "message_stop"}),
                    ]
                )

            def _events(self, events: list[tuple[str, dict[str, Any]]]) -> None:
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

        return Handler


class FakeChat(LoopbackServer):
    """``with FakeChat() as fake:``; ``fake.port``, ``fake.requests``, ``fake.reply()``.

    A reply is the assistant's text, an int (that HTTP error status), or a dict
    ``{"tool": name, "arguments": {...}}`` for one tool call.
    """

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self._body()
                if not self.path.endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "not found", "type": "not_found"}})
                    return
                fake.requests.append(body)
                reply = fake.replies.popleft() if fake.replies else "ok"
                if isinstance(reply, int):
                    error = {"message": "rejected", "type": "invalid_request_error"}
                    self._json(reply, {"error": error})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                model = body.get("model", "fake")
                if isinstance(reply, dict):
                    call = {
                        "index": 0,
                        "id": f"call_{len(fake.requests)}",
                        "type": "function",
                        "function": {
                            "name": reply["tool"],
                            "arguments": json.dumps(reply["arguments"]),
                        },
                    }
                    delta: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
                    finish = "tool_calls"
                else:
                    delta, finish = {"role": "assistant", "content": reply}, "stop"
                chunks: list[dict[str, Any]] = [
                    {"choices": [{"index": 0, "delta": delta}]},
                    {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                    {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
                ]
                for chunk in chunks:
                    document = {
                        "id": "c1",
                        "object": "chat.completion.chunk",
                        "model": model,
                        **chunk,
                    }
                    self.wfile.write(f"data: {json.dumps(document)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        return Handler


GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
}
"""The Google API error status of an HTTP status (anything else: ``INTERNAL``)."""


class FakeGemini(LoopbackServer):
    """``with FakeGemini() as fake:``; ``fake.port``, ``fake.requests``, ``fake.reply()``.

    Speaks what Gemini CLI 0.61 asks of ``GOOGLE_GEMINI_BASE_URL``:
    ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (a Turn's model
    requests, recorded and answered from the queue) and ``:countTokens``. Its other
    calls (``:generateContent``, the CLI's own side questions such as the next-speaker
    check) are recorded in ``side_requests`` and answered without taking a reply: a
    Turn's replies stay the Turn's.
    """

    def __init__(self) -> None:
        super().__init__()
        self.side_requests: list[dict[str, Any]] = []

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:  # model listings and the like: nothing to offer
                self._json(
                    404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}}
                )

            def do_POST(self) -> None:
                body = self._body()
                path = self.path.split("?", 1)[0]
                if path.endswith(":countTokens"):
                    self._json(200, {"totalTokens": 1})
                    return
                if not path.endswith(":streamGenerateContent"):
                    fake.side_requests.append(body)
                    self._json(200, _gemini_chunk("{}"))
                    return
                fake.requests.append(body)
                reply = fake.replies.popleft() if fake.replies else "ok"
                if isinstance(reply, int):
                    status = GOOGLE_STATUS.get(reply, "INTERNAL")
                    self._json(
                        reply, {"error": {"code": reply, "message": "rejected", "status": status}}
                    )
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if isinstance(reply, dict):
                    call = {"name": reply["tool"], "args": reply.get("arguments") or {}}
                    chunks = [_gemini_chunk(None, parts=[{"functionCall": call}])]
                else:
                    chunks = [_gemini_chunk(reply)]
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                self.wfile.flush()

        return Handler


def _gemini_chunk(text: str | None, *, parts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One complete ``GenerateContentResponse``: a single model candidate that stops."""
    content = {"role": "model", "parts": parts if parts is not None else [{"text": text}]}
    return {
        "candidates": [{"content": content, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "fake-model",
    }
