"""A fake Anthropic Messages API on loopback for driving the real Claude Code offline."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from hostfakes.loopback import LoopbackServer


class FakeMessages(LoopbackServer):
    """``with FakeMessages() as fake:``; ``fake.port``, ``fake.requests``, ``fake.reply()``."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, status: int, document: dict[str, Any]) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
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
                message = {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "fake"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 0},
                }
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
                events = [
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
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

        return Handler
