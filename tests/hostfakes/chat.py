"""A fake OpenAI-style chat-completions API on loopback for driving the real DSH offline."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from hostfakes.loopback import LoopbackServer


class FakeChat(LoopbackServer):
    """``with FakeChat() as fake:``; ``fake.port``, ``fake.requests``, ``fake.reply()``.

    A reply is the assistant's text, an int (that HTTP error status), or a dict
    ``{"tool": name, "arguments": {...}}`` for one tool call.
    """

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
                chunks = [
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
