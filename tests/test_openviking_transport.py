"""The plain-http transport of the OpenViking client, against real loopback servers.

A cold hook process on an ``http://`` server must not import httpcore (about a tenth
of its imports); the transport that replaces it keeps one connection per client,
notices a connection the server closed, and raises httpx's transport errors, so the
retry policy and the error mapping behave as before.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from capabilities.providers.client import OpenVikingSettings, ProviderClient
from capabilities.providers.retry import default_retrying
from turn_hooks import ProviderUnavailable

ROOT = Path(__file__).parent.parent


PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    """These servers are reached directly, whatever proxy the machine names."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


class Loopback(ThreadingHTTPServer):
    """Answers every request with ``{"status": "ok", "result": <path>}``; ``mode`` says how."""

    daemon_threads = True

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.connections = 0
        self.closed = threading.Semaphore(0)
        self.requests: list[tuple[str, str, bytes]] = []
        super().__init__(("127.0.0.1", 0), Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.closed.release()  # the socket is closed: its FIN is on its way


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Loopback

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.requests.append((self.command, self.path, body))
        if self.server.mode == "garbage":
            self.wfile.write(b"not http at all\r\n\r\n")
            self.close_connection = True
            return
        data = json.dumps({"status": "ok", "result": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.server.mode == "gzip":
            data = gzip.compress(data)
            self.send_header("Content-Encoding", "gzip")
        if self.server.mode == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (data[:5], data[5:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(data)))
        if self.server.mode == "close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        # "drop": close after the answer without saying so, as an idle keep-alive
        # connection is closed by the server between two requests.
        self.close_connection = self.server.mode in ("close", "drop")

    do_GET = do_POST


@pytest.fixture
def loopback(request: pytest.FixtureRequest) -> Iterator[Loopback]:
    server = Loopback(request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def client_for(server: Loopback, sleeps: list[float]) -> ProviderClient:
    url = f"http://127.0.0.1:{server.server_address[1]}"
    return ProviderClient(
        OpenVikingSettings(url=url, api_key="k", timeout=5.0),
        retrying=default_retrying(sleep=sleeps.append),
    )


def test_a_plain_http_client_imports_no_httpcore():
    code = (
        "import sys\n"
        "from capabilities.providers.client import OpenVikingSettings, ProviderClient\n"
        "client = ProviderClient(OpenVikingSettings(url='http://127.0.0.1:9', timeout=0.2))\n"
        "try:\n"
        "    client.request('GET', '/health', auth=False, timeout=0.2)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__)\n"
        "print(sorted(m for m in ('httpcore', 'h11', 'anyio', 'certifi') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES},
    )
    assert result.stdout.split("\n")[:2] == ["ProviderRetryable", "[]"], result.stdout


@pytest.mark.parametrize("loopback", ["keep-alive"], indirect=True)
def test_every_request_of_a_client_goes_over_one_connection(loopback):
    sleeps: list[float] = []
    client = client_for(loopback, sleeps)
    body = {"query": "ünïcode", "limit": 5}
    answers = [client.request("POST", "/api/v1/search/find", body=body) for _ in range(3)]
    answers.append(client.request("GET", "/api/v1/content/read", params={"uri": "viking://a b"}))
    assert answers == ["/api/v1/search/find"] * 3 + ["/api/v1/content/read?uri=viking%3A%2F%2Fa+b"]
    assert loopback.connections == 1, "one connection for the whole client"
    assert json.loads(loopback.requests[0][2]) == body, "the body arrives as sent"
    assert sleeps == [], "nothing was retried"
    client.close()


@pytest.mark.parametrize("loopback", ["keep-alive"], indirect=True)
def test_threads_sharing_a_client_each_get_a_connection_of_their_own(loopback):
    sleeps: list[float] = []
    client = client_for(loopback, sleeps)
    answers: list[Any] = []
    threads = [
        threading.Thread(target=lambda: answers.append(client.request("GET", "/health")))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert answers == ["/health"] * 8
    assert 1 <= loopback.connections <= 8
    assert sleeps == [], "no request failed on a connection another thread was using"
    client.close()


@pytest.mark.parametrize("loopback", ["drop", "close"], indirect=True)
def test_a_connection_the_server_closed_is_reopened_without_a_retry(loopback):
    sleeps: list[float] = []
    client = client_for(loopback, sleeps)
    for _ in range(3):
        assert client.request("GET", "/health", auth=False) == "/health"
        assert loopback.closed.acquire(timeout=5), "the server closed the connection"
    assert loopback.connections == 3
    assert sleeps == [], "a closed keep-alive connection is not a failure to retry"
    client.close()


@pytest.mark.parametrize("loopback", ["gzip", "chunked"], indirect=True)
def test_compressed_and_chunked_answers_are_decoded(loopback):
    client = client_for(loopback, [])
    assert client.request("GET", "/health", auth=False) == "/health"
    client.close()


@pytest.mark.parametrize("loopback", ["garbage"], indirect=True)
def test_an_answer_that_is_not_http_is_a_retryable_transport_failure(loopback):
    sleeps: list[float] = []
    client = client_for(loopback, sleeps)
    with pytest.raises(ProviderUnavailable) as caught:
        client.request("GET", "/health", auth=False)
    assert caught.value.reason_code == "provider_unreachable"
    assert len(sleeps) == 4, "five attempts, each on a fresh connection"
    assert loopback.connections == 5


def test_a_refused_connection_is_unreachable_and_a_proxy_keeps_httpx_transport(monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again below: nothing listens there
    client = ProviderClient(
        OpenVikingSettings(url=f"http://127.0.0.1:{port}", timeout=1.0),
        retrying=default_retrying(sleep=lambda _: None),
    )
    with pytest.raises(ProviderUnavailable) as caught:
        client.request("GET", "/health", auth=False)
    assert caught.value.reason_code == "provider_unreachable"
    # An HTTP proxy from the environment is still honoured through httpx's own mounts.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    proxied = ProviderClient(OpenVikingSettings(url="http://192.0.2.1", timeout=1.0))._connection()
    transport = proxied._transport_for_url(httpx.URL("http://192.0.2.1/health"))
    assert isinstance(transport, httpx.HTTPTransport), "the proxy's mount, not ours"
    proxied.close()


@pytest.mark.parametrize("loopback", ["keep-alive"], indirect=True)
def test_a_cold_pre_turn_on_openviking_imports_no_httpcore_tenacity_or_embedded_store(
    loopback, tmp_path
):
    from fixtures import f1

    registry = f1.write_goal(tmp_path, f1.config("openviking"))
    argv = ["host", "codex-cli", "pre-turn", "--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    argv += ["--registry", str(registry)]
    code = (
        "import sys, hosts.cli.command\n"
        f"code = hosts.cli.command.main({argv!r})\n"
        # sqlite3 is loaded: the re-rank stems with SQLite's porter tokenizer.
        "names = ('httpcore', 'tenacity', 'capabilities.providers.embedded_sqlite')\n"
        "print(code, sorted(m for m in names if m in sys.modules), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENVIKING_")}
    env = {k: v for k, v in env.items() if k not in PROXY_VARIABLES}
    env |= {
        "OPENVIKING_URL": f"http://127.0.0.1:{loopback.server_address[1]}",
        "HOME": str(tmp_path / "home"),
        "TURN_HOOKS_STATE_DIR": str(tmp_path / "state"),
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps({"turn_id": "t1", "session_id": "s1", "prompt": "fix the tests"}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    assert result.stderr.strip().splitlines()[-1] == "0 []"
    # The corpus's lesson index answers nothing (an empty store, or one written before
    # the index): the records themselves are searched, on the same connection.
    assert [path for _method, path, _body in loopback.requests] == ["/api/v1/search/find"] * 2
    index, records = (json.loads(body)["target_uri"] for _m, _p, body in loopback.requests)
    assert (index, records) == (f1.SCOPE_REF + "-lessons", f1.SCOPE_REF)
