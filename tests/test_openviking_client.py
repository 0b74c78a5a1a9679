"""The OpenViking client and provider on `httpx.MockTransport`: faults a real server
cannot produce on demand (the real-server tests are in test_openviking_real.py)."""

from __future__ import annotations

import json
import os

import httpx
import pytest
import tenacity
from fixtures import f1

from capabilities.providers._errors import ProviderAuthError, ProviderRequestError
from capabilities.providers.base import ProviderPermissionError, ProviderTimeout
from capabilities.providers.client import OpenVikingSettings, ProviderClient
from capabilities.providers.hybrid import CANDIDATES, LEXICAL_WEIGHT
from capabilities.providers.openviking import OpenVikingProvider
from capabilities.providers.retry import default_retrying
from capabilities.providers.sync import sync
from turn_hooks import ProviderUnavailable

KEY = "sk-secret-root-key-0123456789"
URI = f1.SCOPE_REF + "/record.json"


def ok(result):
    return httpx.Response(200, json={"status": "ok", "result": result, "error": None})


def error(status, code, **details):
    return httpx.Response(
        status,
        json={
            "status": "error",
            "result": None,
            "error": {"code": code, "message": "m", "details": details},
        },
    )


def provider(handler, attempts=5):
    settings = OpenVikingSettings(url="http://ov.test", api_key=KEY, account="ci", user="alice")
    client = httpx.Client(transport=httpx.MockTransport(handler))
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        retry=default_retrying().retry,
        reraise=True,
        sleep=lambda _: None,
    )
    return OpenVikingProvider(ProviderClient(settings, client, retrying=retrying))


def test_headers_carry_identity_and_the_actor_peer():
    seen = []

    def handler(request):
        seen.append(request)
        return ok("text")

    provider(handler).read_exact(URI, actor_peer_id=f1.PEER)
    headers = seen[0].headers
    assert (
        headers["X-API-Key"],
        headers["X-OpenViking-Account"],
        headers["X-OpenViking-User"],
        headers["X-OpenViking-Actor-Peer"],
    ) == (KEY, "ci", "alice", f1.PEER)
    assert seen[0].url.params["uri"] == URI


def test_a_503_burst_is_retried_then_succeeds():
    answers = iter([error(503, "UNAVAILABLE"), error(503, "UNAVAILABLE"), ok("text")])
    assert provider(lambda request: next(answers)).read_exact(URI, actor_peer_id=None) == "text"


def test_path_busy_conflicts_are_retried():
    answers = iter([error(409, "CONFLICT", conflict_type="path_busy"), ok({"uri": URI})])
    provider(lambda request: next(answers)).write(URI, "x", actor_peer_id=None)


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (error(400, "INVALID_URI"), ProviderRequestError),
        (error(401, "UNAUTHENTICATED"), ProviderAuthError),
        (error(403, "PERMISSION_DENIED"), ProviderPermissionError),
        (error(409, "CONFLICT"), Exception),
    ],
)
def test_client_errors_are_not_retried(response, kind):
    calls = []

    def handler(request):
        calls.append(request)
        return response

    with pytest.raises(kind) as info:
        provider(handler).write(URI, "x", actor_peer_id=None)
    assert len(calls) == 1
    assert KEY not in str(info.value) and KEY not in repr(info.value.__dict__)


def test_exhausted_retries_are_unavailable_and_never_leak_the_key():
    with pytest.raises(ProviderUnavailable) as info:
        provider(lambda request: error(500, "INTERNAL"), attempts=3).read_exact(
            URI, actor_peer_id=None
        )
    assert info.value.status_code == 500
    assert KEY not in str(info.value)


def test_absent_records_read_as_none():
    assert (
        provider(lambda request: error(404, "NOT_FOUND")).read_exact(URI, actor_peer_id=None)
        is None
    )


def test_a_timeout_after_the_commit_is_decided_by_readback():
    stored = {}

    def handler(request):
        if request.url.path.endswith("/content/write"):
            stored[URI] = json.loads(request.content)["content"]
            raise httpx.ReadTimeout("lost response", request=request)
        if request.url.path.endswith("/health"):
            return httpx.Response(200, json={"status": "ok", "version": "0.5.2"})
        if request.url.path.endswith("/fs/ls"):
            return ok([])
        if URI in stored:
            return ok(stored[URI])
        return error(404, "NOT_FOUND")

    result = sync(
        provider(handler, attempts=1),
        [("body\n", URI)],
        namespace="reward_memory",
        execute=True,
        actor_peer_id=f1.PEER,
        timeout=5,
        observed_at=f1.OBSERVED_AT,
    )
    assert (result.status, result.write_count) == ("completed", 1), (
        "the write landed: readback proves it, nothing is rewritten"
    )


def test_a_timeout_with_nothing_stored_is_safe_to_retry():
    def handler(request):
        if request.url.path.endswith("/content/write"):
            raise httpx.ReadTimeout("lost", request=request)
        if request.url.path.endswith("/health"):
            return httpx.Response(200, json={"status": "ok"})
        if request.url.path.endswith("/fs/ls"):
            return ok([])
        return error(404, "NOT_FOUND")

    result = sync(
        provider(handler, attempts=1),
        [("body", URI)],
        namespace="reward_memory",
        execute=True,
        actor_peer_id=None,
        timeout=5,
        observed_at=f1.OBSERVED_AT,
    )
    assert (result.status, result.reason_code, result.retry_disposition) == (
        "partial",
        "provider_sync_write_timeout_absent",
        "safe_to_retry",
    )


def test_transport_failure_is_unavailable():
    def handler(request):
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ProviderUnavailable):
        provider(handler, attempts=2).read_exact(URI, actor_peer_id=None)
    preflight = provider(handler, attempts=1).preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "provider_unreachable")


def test_timeouts_map_to_provider_timeout():
    def handler(request):
        raise httpx.ConnectTimeout("slow", request=request)

    with pytest.raises(ProviderTimeout):
        provider(handler, attempts=1).read_exact(URI, actor_peer_id=None)


def test_search_keeps_record_rows_only():
    rows = {
        "memories": [
            {"uri": URI, "level": 2, "score": 0.9, "abstract": "Rotate the signing key."},
            {"uri": f1.SCOPE_REF, "level": 1, "score": 0.5, "abstract": "Rotate the key."},
        ],
        "resources": [],
        "total": 2,
    }
    hits = provider(lambda request: ok(rows)).search(
        f1.SCOPE_REF, "rotate the signing key", limit=5, actor_peer_id=f1.PEER
    )
    # The record holds every word of the query: its score gains the whole lexical share.
    assert [(hit.uri, hit.score) for hit in hits] == [(URI, 0.9 + LEXICAL_WEIGHT)]


@pytest.mark.parametrize("returned", [CANDIDATES - 1, CANDIDATES])
def test_a_full_page_of_candidates_is_gated_as_a_sample_of_the_store(returned, monkeypatch):
    from capabilities.providers import openviking

    seen = []
    monkeypatch.setattr(
        openviking, "rerank", lambda query, rows, *, sample, floor=None: seen.append(sample) or []
    )
    page = [{"uri": f"{URI}{i}", "level": 2, "score": 0.5} for i in range(returned)]
    provider(lambda request: ok({"memories": page, "resources": []})).search(
        f1.SCOPE_REF, "rotate the key", limit=5, actor_peer_id=f1.PEER
    )
    assert seen == [returned == CANDIDATES], "a short page is the whole store"


def test_settings_resolution_order(monkeypatch, tmp_path):
    conf = tmp_path / "ovcli.conf"
    conf.write_text(json.dumps({"url": "http://from-conf", "api_key": "conf-key", "user": "u"}))
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(conf))
    monkeypatch.delenv("OPENVIKING_URL", raising=False)
    settings = OpenVikingSettings.resolve()
    assert (settings.url, settings.api_key, settings.user) == ("http://from-conf", "conf-key", "u")
    monkeypatch.setenv("OPENVIKING_URL", "http://from-env/")
    assert OpenVikingSettings.resolve().url == "http://from-env"
    assert OpenVikingSettings.resolve(url="http://explicit").url == "http://explicit"
    assert "conf-key" not in repr(settings)
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("OPENVIKING_URL")
    assert OpenVikingSettings.resolve() is None


def test_factory_reports_an_unconfigured_endpoint(monkeypatch, tmp_path):
    from capabilities.providers.factory import build_provider

    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("OPENVIKING_URL", raising=False)
    unavailable = build_provider({"provider_id": "openviking"}, repo=tmp_path)
    assert unavailable.preflight(timeout=1).reason_code == "provider_endpoint_unconfigured"


@pytest.mark.parametrize("kind", ["fifo", "huge", "deep"])
def test_an_unusable_ovcli_conf_is_as_good_as_none(monkeypatch, tmp_path, kind):
    """A FIFO must not hold the Turn, nor /dev/zero-sized or deep JSON fill memory."""
    conf = tmp_path / "ovcli.conf"
    if kind == "fifo":
        os.mkfifo(conf)
    elif kind == "huge":
        conf.write_bytes(b'{"url": "' + b"x" * (5 << 20) + b'"}')
    else:
        conf.write_text('{"url": "http://deep", "a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    monkeypatch.setenv("OPENVIKING_CLI_CONFIG_FILE", str(conf))
    monkeypatch.delenv("OPENVIKING_URL", raising=False)
    assert OpenVikingSettings.resolve() is None
