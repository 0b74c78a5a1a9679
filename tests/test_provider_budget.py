"""One hook call's provider work shares one deadline (capabilities/providers/budget.py)."""

from __future__ import annotations

import sqlite3
import time

import pytest

from capabilities.providers.budget import EXHAUSTED, Budgeted, budgeted
from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from turn_hooks import ProviderUnavailable


def test_a_busy_store_costs_the_budget_not_the_binding_timeout(tmp_path):
    path = tmp_path / "memory.sqlite3"
    EmbeddedSqliteProvider(path).preflight(timeout=1.0)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the store
    try:
        build = budgeted(lambda binding: EmbeddedSqliteProvider(path), seconds=0.6)
        provider = build({})
        started = time.monotonic()
        assert provider.preflight(timeout=30.0).ok is False
        with pytest.raises(ProviderUnavailable) as raised:
            provider.read_exact("viking://user/u/x.json", actor_peer_id=None, timeout=30.0)
        assert raised.value.reason_code == EXHAUSTED
        assert build({}).preflight(timeout=30.0).reason_code == EXHAUSTED, "one shared deadline"
        assert time.monotonic() - started < 5, "30 s per call would have been spent"
    finally:
        holder.close()


def test_within_the_budget_calls_pass_through_unchanged(tmp_path):
    provider = Budgeted(EmbeddedSqliteProvider(tmp_path / "m.sqlite3"), time.monotonic() + 60)
    assert provider.provider_id == "embedded_sqlite"
    assert provider.preflight(timeout=5.0).ok
    uri = "viking://user/u/peers/p/memories/x.json"
    provider.write(uri, '{"a": 1}', actor_peer_id="p", timeout=5.0)
    assert provider.read_exact(uri, actor_peer_id="p", timeout=5.0) == '{"a": 1}'
    assert provider.path == tmp_path / "m.sqlite3", "plain attributes are forwarded"
