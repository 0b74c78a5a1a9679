"""A deterministic OpenAI-compatible embedder on loopback, stdlib only (providers.md §5.2).

Run: ``python fake_embedder.py PORT [DIM]``. Each lower-cased word hashes into one
bucket with a sign, and the vector is L2-normalised, so texts sharing words are close.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import signal
import struct
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from conformance.fakes import JsonHandler

WORD = re.compile(r"\w+")


def embed(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    for token in WORD.findall(text.lower()):
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dim
        vector[bucket] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def handler_for(
    dim: int,
    embed_all: Callable[[list[str]], list[list[float]]] | None = None,
    model: str = "fake-embed",
) -> type[BaseHTTPRequestHandler]:
    """The request handler: ``embed_all`` (a batch of texts to their vectors, each of
    ``dim`` floats) answers ``/embeddings``; by default :func:`embed` per text."""
    batch = embed_all or (lambda texts: [embed(text, dim) for text in texts])

    class Handler(JsonHandler):
        def do_GET(self):
            if self.path.rstrip("/").endswith("/v1/models"):
                self._json(200, {"object": "list", "data": [{"id": model}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            request = self._body()
            if self.path.endswith("/embeddings"):
                inputs = request.get("input")
                inputs = inputs if isinstance(inputs, list) else [inputs]
                data = []
                for index, vector in enumerate(batch([str(text) for text in inputs])):
                    if request.get("encoding_format") == "base64":
                        packed = struct.pack(f"<{dim}f", *vector)
                        vector = base64.b64encode(packed).decode()
                    data.append({"object": "embedding", "index": index, "embedding": vector})
                self._json(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": request.get("model"),
                        "usage": {"prompt_tokens": 0, "total_tokens": 0},
                    },
                )
            elif self.path.endswith("/chat/completions"):
                self._json(
                    200,
                    {
                        "id": "fake",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "ok"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
                    },
                )
            else:
                self._json(404, {"error": {"message": "not found"}})

    return Handler


def serve(port: int, handler: type[BaseHTTPRequestHandler]) -> None:
    """Serve ``handler`` on loopback ``port`` until SIGTERM."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    # Without this handler the serving thread ignores SIGTERM.
    signal.signal(
        signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start()
    )
    server.serve_forever()


def main() -> None:
    port = int(sys.argv[1])
    dim = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    serve(port, handler_for(dim))


if __name__ == "__main__":
    main()
