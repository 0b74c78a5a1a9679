"""Start and stop a real ``openviking-server`` on loopback, by recorded pid (providers.md §5)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("TURN_HOOKS_CACHE") or Path.home() / ".cache") / "turn-hooks"
VERSION = "0.5.2"
VENV = Path(os.environ.get("TURN_HOOKS_OPENVIKING_VENV") or CACHE / f"openviking-{VERSION}")
SERVER = VENV / "bin" / "openviking-server"
MPNET_DIR = Path(os.environ.get("TURN_HOOKS_MPNET_DIR") or CACHE / "all-mpnet-base-v2")
EMBEDDERS = {
    # name: (script, model name in ov.conf, dimension, further arguments)
    "fake": (Path(__file__).with_name("fake_embedder.py"), "fake-embed", 256, ()),
    "minilm": (Path(__file__).with_name("minilm_embedder.py"), "all-MiniLM-L6-v2", 384, ()),
    "mpnet": (
        Path(__file__).with_name("minilm_embedder.py"),
        "all-mpnet-base-v2",
        768,
        ("768", "all-mpnet-base-v2", str(MPNET_DIR)),
    ),
}
"""The loopback embedders the server can use: ``fake`` hashes words (deterministic,
stdlib only), ``minilm`` is the real all-MiniLM-L6-v2 (the semantic extra's encoder,
numpy and the model package installed), ``mpnet`` all-mpnet-base-v2 by the same
encoder (``make mpnet``; ``TURN_HOOKS_MPNET_DIR`` or the cache)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class RunningServer:
    """A started server and embedder: base URL, root key, and the processes to stop."""

    url: str
    key: str
    run_dir: Path
    server: subprocess.Popen[bytes]
    embedder: subprocess.Popen[bytes]
    port: int
    embedder_port: int

    def log_tail(self, lines: int = 40) -> str:
        log = self.run_dir / "server.log"
        return (
            "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""
        )


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/ready", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start_server(
    run_dir: Path | None = None,
    *,
    port: int | None = None,
    key: str | None = None,
    embedder_port: int | None = None,
    embedder: str = "fake",
) -> RunningServer:
    """Start embedder (one of :data:`EMBEDDERS`) and server; wait for /ready (≤120 s)
    or fail with the log tail."""
    if not SERVER.exists():
        raise RuntimeError(f"openviking-server is not installed at {SERVER}; run `make test`")
    run_dir = run_dir or Path(tempfile.mkdtemp(prefix="openviking-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    embedder_port = embedder_port or free_port()
    key = key or secrets.token_hex(16)
    script, model, dimension, further = EMBEDDERS[embedder]
    embedding = subprocess.Popen(
        [sys.executable, str(script), str(embedder_port), *further],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # The server embeds at its first write; a model still loading would fail it.
    embedder_ready = time.monotonic() + 60
    while time.monotonic() < embedder_ready and embedding.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{embedder_port}/v1/models", timeout=2)
            break
        except OSError:
            time.sleep(0.2)
    config = {
        "server": {"host": "127.0.0.1", "port": port, "auth_mode": "trusted", "root_api_key": key},
        "storage": {"workspace": str(run_dir / "data")},
        "embedding": {
            "dense": {
                "provider": "openai",
                "model": model,
                "api_base": f"http://127.0.0.1:{embedder_port}/v1",
                "api_key": "dummy",
                "dimension": dimension,
                "input": "text",
                "encoding_format": "float",
            }
        },
    }
    (run_dir / "ov.conf").write_text(json.dumps(config))
    env = {**os.environ, "HOME": str(run_dir), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    with open(run_dir / "server.log", "wb") as log:
        server = subprocess.Popen(
            [str(SERVER), "--config", str(run_dir / "ov.conf")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    running = RunningServer(
        f"http://127.0.0.1:{port}", key, run_dir, server, embedding, port, embedder_port
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if _ready(running.url):
            return running
        if server.poll() is not None:
            break
        time.sleep(0.5)
    tail = running.log_tail()
    stop_server(running, remove=False)
    raise RuntimeError(f"openviking-server did not become ready:\n{tail}")


def stop_server(running: RunningServer, *, remove: bool = True) -> None:
    """TERM the recorded processes (KILL after 30 s), then remove the run directory."""
    for process in (running.server, running.embedder):
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    if remove:
        shutil.rmtree(running.run_dir, ignore_errors=True)
