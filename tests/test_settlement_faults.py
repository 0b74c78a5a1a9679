"""Spooled settlements are carried on, never lost (issue 13, items 2 and 13).

A Stop hook that dies before its validator finished, or meets a journal it cannot
lock or write, leaves its spool entry queued; ``turn-hooks settle --pending`` (run
detached by the next PreTurn, or by hand) carries it to a final receipt. Replaying a
Stop hook after reconciliation completed its journal reports the journal's state.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import filelock
import pytest
from fixtures import f1
from turn_support import (
    DEMO_VALIDATOR,
    RAW,
    attestation,
    bound_goal,
    hook_argv,
    hook_turn,
    start_hook,
)
from turn_support import reflection_message as message
from turn_support import run_process as run

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.reward_memory.binding.registry import load_registry, resolve
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.contract.identities import evidence_digest, source_event_id
from capabilities.reward_memory.turn.journal import journal_files_of, journal_path
from capabilities.reward_memory.turn.reconcile import reconcile
from hosts.settlement.settlement import (
    MAX_SETTLEMENT_ATTEMPTS,
    QUEUE_DIR,
    queued,
    settle,
    settlement_store,
    spool_path,
)
from sidecars import SidecarStore, sidecar_root
from turn_hooks import InvalidInputError, make_plugin_manager, settlement_is_final

ROOT = Path(__file__).parent.parent
EVIDENCE = ROOT / "scripts" / "demo" / "evidence.json"


def settle_argv(registry, goal_id=f1.GOAL):
    return [
        *(sys.executable, "-m", "hosts.cli", "settle", "--pending"),
        *("--goal-id", goal_id, "--agent-id", f1.AGENT, "--registry", str(registry)),
    ]


def settle_pending(registry):
    result = run(settle_argv(registry))
    assert result.returncode == 0
    return json.loads(result.stdout)


def journal_states(registry):
    return [json.loads(p.read_text())["status"] for p in journal_files_of(registry.parent / "repo")]


def stored_records(registry):
    store = EmbeddedSqliteProvider(
        registry.parent / "repo" / ".local" / "turn-hooks" / "memory.sqlite3", read_only=True
    )
    return store.list(f1.SCOPE_REF, limit=100, actor_peer_id=f1.PEER, timeout=5)


def queue(registry):
    return queued(settlement_store(str(registry), f1.GOAL), f1.GOAL, f1.AGENT)


def queue_path(store, spool):
    """Where the queue marker of a spool entry lives (``settlement-queue/...``)."""
    return store.path(QUEUE_DIR, spool.parent.parent.name, spool.parent.name, spool.name)


def private_dirs(directory):
    """Create ``directory`` the way the sidecar store does: every new level 0700."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for created in reversed(missing):
        created.mkdir(mode=0o700)
        created.chmod(0o700)


def gated_validator(tmp_path):
    """The demo validator, but it first says it started and waits while ``gate`` exists."""
    script = tmp_path / "gated_validator.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import pathlib, sys, time
            from conformance.validator import main
            here = pathlib.Path({str(tmp_path)!r})
            (here / "started").touch()
            deadline = time.monotonic() + 60
            while (here / "gate").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            sys.exit(main(pathlib.Path({str(EVIDENCE)!r})))
            """
        )
    )
    (tmp_path / "gate").touch()
    return [sys.executable, str(script)]


def kill_during_validation(tmp_path, registry):
    """Kill -9 the process that runs the validator: the hook itself, settling inline
    (by default it forks a settler, which a kill of the hook leaves running)."""
    validator = gated_validator(tmp_path)
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    inline = {**os.environ, "TURN_HOOKS_SETTLE": "inline"}
    process = start_hook(hook_argv(registry, validator=validator), event, env=inline)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the validator never started"
        time.sleep(0.02)
    process.kill()
    process.wait(timeout=10)


def test_a_stop_hook_killed_during_validation_is_carried_on_by_settle(tmp_path):
    registry = bound_goal(tmp_path)
    kill_during_validation(tmp_path, registry)
    assert journal_states(registry) == [], "the validator never finished: nothing ingested"
    assert len(queue(registry)) == 1, "but the spooled evidence is queued"
    [marker] = queue(registry)
    left = marker.parent / "t0-older-version.json.lock"  # a lock its dequeue left behind
    left.touch(mode=0o600)
    (tmp_path / "gate").unlink()
    summary = settle_pending(registry)
    assert (summary["queued_count"], summary["settled_count"]) == (1, 1)
    assert journal_states(registry) == ["completed"]
    assert len(stored_records(registry)) == 1
    assert queue(registry) == []
    queue_dir = tmp_path / "repo" / ".local" / "turn-hooks" / QUEUE_DIR
    assert [p for p in queue_dir.rglob("*") if not p.is_dir()] == [], "nor any lock: none a Turn"
    again = settle_pending(registry)
    assert (again["queued_count"], len(stored_records(registry))) == (0, 1), "never twice"


def test_the_next_pre_turn_starts_the_worker_that_finishes_it(tmp_path):
    registry = bound_goal(tmp_path)
    kill_during_validation(tmp_path, registry)
    (tmp_path / "gate").unlink()
    result = run(
        hook_argv(registry, "pre-turn"),
        json.dumps({"turn_id": "t2", "prompt": "next", "cwd": str(tmp_path / "repo")}),
    )
    assert result.returncode == 0
    deadline = time.monotonic() + 60
    while journal_states(registry) != ["completed"]:
        assert time.monotonic() < deadline, "the detached worker did not finish the Turn"
        time.sleep(0.1)
    while queue(registry):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert len(stored_records(registry)) == 1


def test_an_unwritable_journal_directory_leaves_the_settlement_queued(tmp_path):
    registry = bound_goal(tmp_path)
    blocker = tmp_path / "repo" / ".local" / "turn-hooks" / "reward-memory-outcomes"
    private_dirs(blocker.parent)
    blocker.write_text("not a directory")
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    assert run(hook_argv(registry), json.dumps(event)).returncode == 0
    assert journal_states(registry) == [] and len(queue(registry)) == 1
    blocker.unlink()
    assert settle_pending(registry)["settled_count"] == 1
    assert journal_states(registry) == ["completed"]


def test_a_journal_lock_held_past_its_timeout_leaves_the_settlement_queued(tmp_path):
    registry = bound_goal(tmp_path)
    policy = normalise_config(f1.config("embedded_sqlite"))["corpora"]["experience"]
    event_id = source_event_id(
        f1.GOAL,
        f1.AGENT,
        "t1",
        f1.SURFACE,
        policy["standing_policy"]["policy_id"],
        evidence_digest(f1.REFLECTION["evidence_refs"]),
    )
    store = SidecarStore(sidecar_root(tmp_path / "repo"))
    path = journal_path(store, f1.GOAL, f1.AGENT, event_id)
    private_dirs(path.parent)
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    with filelock.FileLock(str(path) + ".lock", mode=0o600):
        assert run(hook_argv(registry), json.dumps(event)).returncode == 0
    assert journal_states(registry) == [] and len(queue(registry)) == 1
    assert settle_pending(registry)["settled_count"] == 1
    assert journal_states(registry) == ["completed"]


def test_an_entry_that_never_settles_ends_in_a_typed_terminal_state(tmp_path):
    """A validator that always times out: inconclusive, re-run on each delivery, until
    the attempts are spent; the entry then says why, and the queue is empty."""
    registry = bound_goal(tmp_path)
    hang = [sys.executable, "-c", "import time; time.sleep(30)"]
    event = {"turn_id": "t1", "last_assistant_message": message(), "cwd": str(tmp_path / "repo")}
    argv = [*hook_argv(registry, validator=hang), "--validation-timeout-seconds", "1"]
    assert run(argv, json.dumps(event)).returncode == 0
    for _ in range(MAX_SETTLEMENT_ATTEMPTS):
        summary = settle_pending(registry)
        if summary["terminal_count"]:
            break
    assert summary["terminal_count"] == 1 and queue(registry) == []
    [spool] = (tmp_path / "repo" / ".local" / "turn-hooks" / "settlements").rglob("*.json")
    entry = json.loads(spool.read_text())
    assert (entry["settlement_state"], entry["settlement_reason_code"]) == (
        "terminal",
        "settlement_attempts_exhausted",
    )
    assert entry["host_result"]["reward_memory_reflection_json"], "the reflection is kept"


@pytest.mark.usefixtures("no_openviking")
def test_replaying_a_stop_after_reconcile_reports_the_journal_now(tmp_path):
    """Item 13: the journal was pending when Stop ran (provider down); reconciliation
    completed it; a replayed Stop used to return the stale pending receipt."""
    registry = f1.write_goal(tmp_path, f1.config("openviking"))
    turn = hook_turn(registry, tmp_path)
    first = settle(
        make_plugin_manager(), turn, final_message=message(), validation_argv=DEMO_VALIDATOR
    )
    ingest = first["results"]["reward-memory.outcome-ingest"]
    assert (ingest["status"], ingest["reconciliation_state"]) == ("unavailable", "pending")
    store = EmbeddedSqliteProvider(tmp_path / "memory.sqlite3")
    resolution = resolve(load_registry(registry), f1.GOAL, f1.AGENT)
    assert reconcile(resolution, provider_for=lambda binding: store)["completed_count"] == 1
    replay = settle(
        make_plugin_manager(), turn, final_message=message(), validation_argv=DEMO_VALIDATOR
    )
    result = replay["results"]["reward-memory.outcome-ingest"]
    assert (result["status"], result["reconciliation_state"], result["sidecar_receipt_reused"]) == (
        "activated",
        "completed",
        True,
    )


@pytest.fixture
def no_openviking(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("OPENVIKING_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.mark.parametrize("validated", [False, True], ids=["validator-pending", "validated"])
def test_a_spool_entry_from_before_generic_result_fields_still_settles(tmp_path, validated):
    """Older entries kept the reflection at the top level and, once validated, the
    attestation under the reflection-specific key; a replay still learns from both."""
    registry = bound_goal(tmp_path)
    turn = hook_turn(registry, tmp_path, "t-old")
    store = settlement_store(str(registry), f1.GOAL)
    path = spool_path(store, turn)
    entry = {
        "schema_version": "turn_hooks_settlement_v0",
        "host": turn.host,
        "turn_key": turn.turn_key,
        "host_session_id": None,
        "observed_at": turn.observed_at,
        "cwd": turn.cwd,
        "reward_memory_reflection_json": RAW,
        "last_message_sha256": "0" * 64,
        "turn": turn.to_json(),
        "validation_declaration": {"argv": DEMO_VALIDATOR, "timeout_seconds": 20},
        "settlement_attempt_count": 1,
    }
    if validated:
        entry["validation_declaration"] = None
        entry["task_validation"] = {
            "ok": True,
            "status": "passed",
            "validator_kind": "command",
            "reward_memory_reflection_validation": attestation(RAW),
        }
    store.write(queue_path(store, path), {"schema_version": "x", "spool": path.name})
    store.write(path, entry)
    assert settle_pending(registry)["settled_count"] == 1
    assert journal_states(registry) == ["completed"]


# --- what cannot be carried on is never retried for ever (issue 13, later run) ------


def logged():
    """``(source, reason_code)`` of every hook log entry of this test."""
    path = Path(os.environ["TURN_HOOKS_STATE_DIR"]) / "hook-log.json"
    entries = json.loads(path.read_text())["entries"] if path.exists() else []
    return [(entry["source"], entry["reason_code"]) for entry in entries]


def files_below(directory):
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


def test_a_host_result_too_large_to_spool_is_refused_before_anything_is_written(tmp_path):
    registry = bound_goal(tmp_path)
    before = files_below(tmp_path)
    event = {"turn_id": "t1", "last_assistant_message": message("x" * (1024 * 1024 + 1))}
    event["cwd"] = str(tmp_path / "repo")
    result = run(hook_argv(registry), json.dumps(event))
    assert (result.returncode, json.loads(result.stdout)) == (0, {})
    assert ("adapter", "settlement_spool_too_large") in logged()
    assert files_below(tmp_path) == before, "no marker, no entry, no directory"


def test_an_entry_that_would_outgrow_the_sidecar_bound_is_never_queued(tmp_path):
    """It used to be spooled past 4 MiB, then unreadable, and retried on every Turn."""
    registry = bound_goal(tmp_path)
    turn = hook_turn(registry, tmp_path)
    with pytest.raises(InvalidInputError) as info:
        settle(
            make_plugin_manager(),
            turn,
            final_message=message("x" * (4 * 1024 * 1024 + 1)),
            validation_argv=DEMO_VALIDATOR,
        )
    assert info.value.reason_code == "settlement_spool_too_large"
    assert queue(registry) == []


def plant_spool_entry(registry, content):
    """A queued spool entry whose file holds ``content`` (bytes, or ``"fifo"``)."""
    store = settlement_store(str(registry), f1.GOAL)
    turn = hook_turn(registry, None, "t-garbled")
    path = spool_path(store, turn)
    store.write(queue_path(store, path), {"schema_version": "x", "spool": path.name})
    plant(path, content)
    return path


def plant(path, content):
    """``content`` at ``path``, 0600: bytes, or a FIFO for ``"fifo"``."""
    private_dirs(path.parent)
    if content == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.write_bytes(content)
        path.chmod(0o600)


@pytest.mark.parametrize(
    "content",
    [b"{not json", b'{"text": "' + b"x" * (4 * 1024 * 1024) + b'"}', b"\xff\xfe", "fifo"],
    ids=["garbled", "over-4-MiB", "not-utf8", "fifo"],
)
def test_an_unreadable_spool_entry_is_set_aside_once_not_retried_every_turn(tmp_path, content):
    registry = bound_goal(tmp_path)
    path = plant_spool_entry(registry, content)
    summary = settle_pending(registry)
    assert (summary["queued_count"], summary["terminal_count"], summary["failed_count"]) == (
        1,
        1,
        0,
    )
    assert queue(registry) == [], "its marker is gone"
    assert not path.exists() and path.with_name(path.name + ".unreadable").exists(), "kept aside"
    assert ("adapter", "settlement_spool_unreadable") in logged()
    assert settle_pending(registry)["queued_count"] == 0, "never retried"


# --- a binding with no usable Goal writes nothing ------------------------------------


def unbound(tmp_path, case):
    """(registry argument, goal id) for each way a binding names no Goal repository."""
    registry = bound_goal(tmp_path)
    if case == "registry_unreadable":
        return str(tmp_path / "absent.json"), f1.GOAL
    if case == "goal_not_found":
        return str(registry), "goal-not-bound"
    document = json.loads(registry.read_text())
    document["goals"][0].pop("repo")
    registry.write_text(json.dumps(document))
    return str(registry), f1.GOAL


CASES = ["registry_unreadable", "goal_not_found", "goal_repository_missing"]


def with_goal(argv, goal_id):
    argv = list(argv)
    argv[argv.index("--goal-id") + 1] = goal_id
    return argv


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dialect", ["plain", "gemini"])
def test_a_stop_hook_without_a_usable_goal_writes_nothing_anywhere(tmp_path, case, dialect):
    """It used to fall back to the event's cwd (even /etc) and write its state there."""
    registry, goal_id = unbound(tmp_path, case)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = files_below(tmp_path)
    argv = [*with_goal(hook_argv(registry), goal_id), "--dialect", dialect]
    event = {"turn_id": "t1", "cwd": str(elsewhere), "last_assistant_message": message()}
    if dialect == "gemini":
        event = {"session_id": "s", "hook_event_name": "AfterAgent", "cwd": str(elsewhere)}
        event["prompt_response"] = message()
    result = run(argv, json.dumps(event))
    assert (result.returncode, json.loads(result.stdout)) == (0, {})
    assert files_below(tmp_path) == before
    assert logged() == [("adapter", case)]


def test_a_stop_hook_without_a_registry_names_that_reason(tmp_path):
    argv = [sys.executable, "-m", "hosts.cli", "host", "codex-cli", "post-settlement"]
    argv += ["--goal-id", f1.GOAL, "--agent-id", f1.AGENT]
    event = {"turn_id": "t1", "cwd": str(tmp_path), "last_assistant_message": message()}
    result = run(argv, json.dumps(event))
    assert (result.returncode, json.loads(result.stdout), files_below(tmp_path)) == (0, {}, [])
    assert logged() == [("adapter", "registry_missing")]


@pytest.mark.parametrize("case", CASES)
def test_a_pre_turn_without_a_usable_goal_keeps_no_host_state(tmp_path, case):
    registry, goal_id = unbound(tmp_path, case)
    before = files_below(tmp_path)
    for command, dialect, event in [
        ("codex-cli", None, {"turn_id": "s:1", "session_id": "s", "cwd": str(tmp_path)}),
        (
            "generic",
            "gemini",
            {"session_id": "s", "hook_event_name": "BeforeAgent", "cwd": str(tmp_path)},
        ),
    ]:
        argv = with_goal(hook_argv(registry, "pre-turn"), goal_id)
        argv[argv.index("generic")] = command
        argv += ["--dialect", dialect] if dialect else []
        event = {**event, "timestamp": "2026-11-29T10:00:00Z", "prompt": "p"}
        assert run(argv, json.dumps(event)).returncode == 0
    assert files_below(tmp_path) == before


@pytest.mark.parametrize("case", CASES)
def test_settle_pending_without_a_usable_goal_is_a_typed_error_that_writes_nothing(tmp_path, case):
    registry, goal_id = unbound(tmp_path, case)
    before = files_below(tmp_path)
    result = run(settle_argv(registry, goal_id))
    error = json.loads(result.stdout)
    assert (result.returncode, error["ok"], error["reason_code"]) == (2, False, case)
    assert files_below(tmp_path) == before


# --- a queue or spool that cannot be written costs durability, not the settlement ----


def block(registry, directory):
    """A regular file where the settlement directory would be: it cannot be written."""
    root = Path(registry).parent / "repo" / ".local" / "turn-hooks"
    private_dirs(root)
    (root / directory).write_text("in the way")


def test_an_unwritable_queue_still_settles_inline_and_says_why(tmp_path):
    registry = bound_goal(tmp_path)
    block(registry, QUEUE_DIR)
    event = {"turn_id": "t1", "cwd": str(tmp_path / "repo"), "last_assistant_message": message()}
    result = run(hook_argv(registry), json.dumps(event))
    assert result.returncode == 0
    assert ("adapter", "settlement_queue_unwritable") in logged()
    assert journal_states(registry) == ["completed"], "the reflection had its chance"
    assert len(stored_records(registry)) == 1


def test_an_unwritable_spool_still_delivers_inline_with_honest_evidence(tmp_path):
    registry = bound_goal(tmp_path)
    block(registry, "settlements")
    event = {"turn_id": "t1", "cwd": str(tmp_path / "repo"), "last_assistant_message": message()}
    result = run(hook_argv(registry), json.dumps(event))
    receipt = json.loads(result.stdout)
    assert (result.returncode, receipt["status"]) == (0, "observed")
    assert "reward-memory.outcome-ingest" in receipt["results"], "the plugins were called"
    assert ("adapter", "settlement_spool_unwritable") in logged()


def test_a_lone_surrogate_reflection_is_rejected_for_good_not_retried(tmp_path):
    """An in-process host can hand over text that is not UTF-8; it can never become a
    memory, so it is the final reflection_rejected, not a retryable failure."""
    registry = bound_goal(tmp_path)
    turn = hook_turn(registry, tmp_path)
    broken = RAW.replace('"content_summary": "', '"content_summary": "\udcff', 1)
    receipt = settle(
        make_plugin_manager(), turn, final_message=message(broken), validation_argv=DEMO_VALIDATOR
    )
    ingest = receipt["results"]["reward-memory.outcome-ingest"]
    assert (ingest["status"], ingest["reason_code"]) == (
        "reflection_rejected",
        "reflection_not_utf8",
    )
    assert settlement_is_final(receipt)
    assert queue(registry) == [], "nothing left to retry"
