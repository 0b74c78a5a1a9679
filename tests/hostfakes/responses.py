"""A fake OpenAI Responses API on loopback for driving the real Codex CLI offline.

Every request body is recorded; each reply streams the next scripted text (or answers
HTTP 400 for a failure test), following the event order in shared/spec/hosts.md §2.4.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from hostfakes.loopback import LoopbackServer


class FakeResponses(LoopbackServer):
    """Start with ``with FakeResponses() as fake:``; ``fake.port``, ``fake.requests``."""

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet tests
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                reply = fake.replies.popleft() if fake.replies else "ok"
                if isinstance(reply, int):
                    payload = json.dumps(
                        {"error": {"message": "bad request", "type": "invalid_request_error"}}
                    ).encode()
                    self.send_response(reply)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                item = {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply, "annotations": []}],
                }
                events = [
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
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

        return Handler
