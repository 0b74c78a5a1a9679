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

from capabilities.providers.budget import EXHAUSTED
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


def log_entries(state_dir):
    log = state_dir / "hook-log.json"
    return json.loads(log.read_text())["entries"] if log.exists() else []


@pytest.mark.parametrize(
    ("host", "event"),
    [
        ("generic", "pre-turn"),
        ("generic", "post-settlement"),
        ("codex-cli", "pre-turn"),
        ("codex-cli", "post-settlement"),
    ],
)
def test_a_whole_hook_process_ends_within_its_budget_and_logs_why(
    black_hole, tmp_path, host, event
):
    """Each host hook, as its host runs it, on an OpenViking binding whose server hangs.

    The settlement hooks carry a validated reflection, so the generic one ingests
    inline (preflight, reads and the write all meet the hanging server) and Codex's
    hands it to its detached child. Exit 0 within the liveness bound, and the hook
    log names a typed reason for what the Turn went without.
    """
    from turn_support import hook_argv, reflection_message

    registry = f1.write_goal(tmp_path, f1.config("openviking"))
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")}
    env |= {
        "OPENVIKING_URL": black_hole,
        "HOME": str(tmp_path / "home"),
        "TURN_HOOKS_STATE_DIR": str(state),
    }
    argv = hook_argv(registry, event)
    argv[argv.index("generic")] = host
    payload = {"turn_id": "t1", "prompt": "fix the tests"}
    if event == "post-settlement":
        payload = {"turn_id": "t1", "last_assistant_message": reflection_message()}
    started = time.monotonic()
    result = subprocess.run(
        argv,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=LIVENESS,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    # Codex settles in a detached child: its entry lands after the hook returned, and
    # within the same bound (the child has the same budget).
    limit = time.monotonic() + LIVENESS
    while not (reasons := provider_reasons(state)) and time.monotonic() < limit:
        time.sleep(0.2)
    assert reasons, f"the hook log says why: {log_entries(state)}"
    assert time.monotonic() - started < LIVENESS


PROVIDER_REASONS = {"provider_search_failed", "provider_timeout", EXHAUSTED}


def provider_reasons(state_dir):
    return {e["reason_code"] for e in log_entries(state_dir)} & PROVIDER_REASONS
