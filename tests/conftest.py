"""Shared fixtures for the package's own tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
import resident_support
from hypothesis import settings

from turn_hooks import TurnContext, make_plugin_manager

# CI runs the property tests with a fixed derandomised search so a green main stays
# green; a developer's run explores new examples every time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


# Why autouse: a developer's shell may export TURN_HOOKS_* (say, a block-list);
# every test must see the documented defaults instead, and hooks run by a test (also
# in subprocesses) must log into the test's own state directory, not the user's.
# The same holds for the default registry under $XDG_CONFIG_HOME/turn-hooks.
@pytest.fixture(autouse=True)
def _isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("TURN_HOOKS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    # The resident hook server is on by default for users. Here it stays off but in
    # the tests of it, which turn it on with their own socket directory; any server
    # that still starts uses this session's directory, where the check below finds it.
    monkeypatch.setenv("TURN_HOOKS_RESIDENT", "0")
    monkeypatch.setenv("TURN_HOOKS_RESIDENT_DIR", str(resident_support.BASE / "default"))
    # The bound counts every server of this user, on the whole machine: servers of a
    # person's own hooks or another test run must not refuse a test's. The test of
    # the bound sets its own.
    monkeypatch.setenv("TURN_HOOKS_RESIDENT_MAX_SERVERS", "1000")
    yield


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No resident server outlives the suite: one left running fails the session."""
    leaked = resident_support.servers()
    resident_support.stop(leaked, seconds=5)
    shutil.rmtree(resident_support.BASE, ignore_errors=True)
    if leaked:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nresident hook servers left running (killed): {leaked}")


@pytest.fixture
def pm():
    """A fresh plugin manager with the specs and no plugins (pluggy's `pm` fixture)."""
    return make_plugin_manager(autoload=False)


@pytest.fixture
def turn() -> TurnContext:
    """A minimal Turn whose envelope names a Goal and an Agent."""
    envelope = {
        "goal_id": "g",
        "agent_id": "a",
        "boundary": {"capabilities": {"reward_memory": {"automatic_recall": True}}},
    }
    return TurnContext(
        host="generic_cli",
        host_turn_id="turn-1",
        goal_id="g",
        agent_id="a",
        observed_at="2026-08-15T00:00:00+00:00",
        turn_envelope=envelope,
        payload={"turn_envelope": envelope},
    )
