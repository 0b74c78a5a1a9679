"""The shared shape of the fake model servers: a threaded HTTP server on 127.0.0.1."""

from __future__ import annotations

import abc
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer(abc.ABC):
    """Records request bodies and replays queued replies; use it as a context manager."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: deque[Any] = deque()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
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
