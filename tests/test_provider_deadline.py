"""No hook call outlives its budget on OpenViking either (issue 15's reliability bug).

``OpenVikingProvider`` used to accept ``timeout=`` and ignore it, so each request had
the client's 30 s and five attempts: a server that accepts and never answers held a
Turn for minutes. These tests use a real loopback socket that does exactly that.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fixtures import f1

from capabilities.providers.client import OpenVikingSettings, ProviderClient
from capabilities.providers.openviking import OpenVikingProvider
from turn_hooks import ProviderUnavailable

ROOT = Path(__file__).parent.parent
LIVENESS = 25.0
"""Seconds after which a call is called hung: far above its budget, far below 5 x 30 s."""


@pytest.fixture
def black_hole():
    """A loopback server that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(timeout=5)
    for connection in held:
        connection.close()
    server.close()


def test_a_call_keeps_its_timeout_retries_included(black_hole):
    provider = OpenVikingProvider(ProviderClient(OpenVikingSettings(url=black_hole)))
    started = time.monotonic()
    with pytest.raises(ProviderUnavailable):
        provider.search(f1.SCOPE_REF, "module tests", limit=5, actor_peer_id=f1.PEER, timeout=1.0)
    assert time.monotonic() - started < LIVENESS
    preflight = provider.preflight(timeout=1.0)
    assert (preflight.ok, preflight.reason_code) == (False, "provider_timeout")


def test_the_pre_turn_hook_goes_on_when_the_server_never_answers(black_hole, tmp_path):
    registry = f1.write_goal(tmp_path, f1.config("openviking"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")}
    env |= {"OPENVIKING_URL": black_hole, "HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "hosts.cli", "host", "generic", "pre-turn"]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT, "--registry", str(registry)]
    result = subprocess.run(
        argv,
        input=json.dumps({"turn_id": "t1", "prompt": "fix the tests"}),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=LIVENESS,
        check=False,
    )
    assert result.returncode == 0
    context = json.loads(result.stdout)["additional_context"]
    assert "reward_memory_reflection_json" in context, "the Turn got its contribution anyway"


def test_one_connection_serves_every_request_and_plain_http_loads_no_certificates(
    monkeypatch, black_hole
):
    loaded = []
    real = ssl.SSLContext.load_verify_locations

    def counting(self, *args, **kwargs):
        loaded.append(args or kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    client = ProviderClient(OpenVikingSettings(url=black_hole, timeout=0.2))
    for _ in range(2):
        with pytest.raises(ProviderUnavailable):
            client.request("GET", "/health", auth=False)
    first = client.client
    with pytest.raises(ProviderUnavailable):
        client.request("GET", "/health", auth=False)
    assert client.client is first, "one httpx client per provider client"
    assert loaded == [], "no certificate store is loaded for a plain-http server"
    client.close()
    secure = ProviderClient(OpenVikingSettings(url="https://127.0.0.1:9", timeout=0.2))
    with pytest.raises(ProviderUnavailable):
        secure.request("GET", "/health", auth=False)
    assert loaded, "https still verifies certificates"
    secure.close()
