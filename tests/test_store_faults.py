"""Issue 13's file-system and store faults, each reproduced as it was found.

FIFOs at sidecar paths (#6), links and modes around the embedded store (#10, #12),
its companion files (#3), a corrupt store (#7), the fixture dry run that wrote a
store into the working directory (#11) and the hook log's silent refusal of a
widened state directory (#12).

The tests run as root on the build machine, where mode bits do not stop reads or
writes. So they assert what the code checks (a mode refused, a mode set back to
0600), and where a failure needs an ordinary user to appear at all (#3) the
scenario runs in a child process that has dropped to an unprivileged uid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fixtures import f1
from turn_support import bound_goal

from capabilities.providers.embedded_sqlite import EmbeddedSqliteProvider
from capabilities.providers.factory import build_provider
from capabilities.reward_memory.contract.config import normalise_config
from capabilities.reward_memory.turn.journal import JOURNAL_DIR
from hosts.settlement import hook_log
from sidecars import SidecarStore, goal_agent_parts, sidecar_root
from turn_hooks import (
    ProviderUnavailable,
    SidecarCorrupt,
    SidecarPathError,
)

ROOT = Path(__file__).parent.parent
VALIDATOR = [sys.executable, str(ROOT / "scripts" / "demo" / "validator.py")]
HOOK_TIMEOUT = 20
URI = "viking://user/alice/peers/peer-a/memories/goals/g/experience/r.json"
EMBEDDED = {"provider_id": "embedded_sqlite"}


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def promptly(call: Callable[[], Any], *fifos: Path, seconds: float = 5.0) -> dict[str, Any]:
    """Run ``call`` in a thread and fail if it has not returned within ``seconds``.

    A call blocked in ``open()`` of a FIFO is released afterwards by opening the FIFO
    for writing, so a failing run leaves no thread behind.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # the test asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(seconds)
        pytest.fail("the call blocked on a FIFO")
    return outcome


def refused(outcome: dict[str, Any], error: type[Exception], reason: str) -> None:
    assert isinstance(outcome.get("error"), error), outcome
    assert outcome["error"].reason_code == reason


def turn_hooks(
    *args: str, stdin: str = "", cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``turn-hooks ARGS`` in a new process, as a host runs it, killed after 20 s."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "hosts.cli", *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
            env={**os.environ, **(env or {})},
            timeout=HOOK_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`turn-hooks {' '.join(args[:3])}` hung for {HOOK_TIMEOUT} s")
    assert "Traceback" not in result.stdout + result.stderr
    return result


def binding_args(registry: Path) -> tuple[str, ...]:
    return ("--registry", str(registry), "--goal-id", f1.GOAL, "--agent-id", f1.AGENT)


# --- #6: a FIFO at a sidecar path never blocks --------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> SidecarStore:
    store = SidecarStore(sidecar_root(tmp_path / "repo"), lock_timeout=0.5)
    store.write(store.path("seed.json"), {})
    return store


OPERATIONS = {
    "read": lambda store, path: store.read(path),
    "update": lambda store, path: store.update(path, lambda doc: {"replaced": True}),
    "write": lambda store, path: store.write(path, {"replaced": True}),
    "transaction": lambda store, path: store.transaction(path).__enter__(),
    "delete": lambda store, path: store.delete(path),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_fifo_sidecar_is_refused_promptly(store, operation):
    path = store.path("spool.json")
    os.mkfifo(path, 0o600)
    outcome = promptly(lambda: OPERATIONS[operation](store, path), path)
    refused(outcome, SidecarCorrupt, "sidecar_not_regular")
    assert stat.S_ISFIFO(os.lstat(path).st_mode), "refused, never replaced or removed"


@pytest.mark.parametrize("operation", ["update", "write", "transaction", "delete"])
def test_a_fifo_lock_file_is_refused_promptly(store, operation):
    path = store.path("journal.json")
    store.write(path, {"kept": True})
    os.unlink(path.with_name("journal.json.lock"))
    os.mkfifo(path.with_name("journal.json.lock"), 0o600)
    outcome = promptly(lambda: OPERATIONS[operation](store, path), path)
    refused(outcome, SidecarCorrupt, "sidecar_not_regular")
    assert store.read(path) == {"kept": True}


def test_a_symlinked_lock_file_is_refused_and_its_target_untouched(store, tmp_path):
    """filelock opens ``<file>.lock`` for writing: through a link it could create or
    truncate any file the user can write."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = store.path("journal.json")
    path.with_name("journal.json.lock").symlink_to(victim)
    with pytest.raises(SidecarPathError) as info:
        store.write(path, {"a": 1})
    assert info.value.reason_code == "sidecar_symlink"
    assert victim.read_text() == "precious"
    assert not path.exists()


def test_check_reports_a_fifo_and_never_repairs_its_mode(store):
    path = store.path("fifo.json")
    os.mkfifo(path, 0o600)
    os.chmod(path, 0o644)
    outcome = promptly(lambda: store.check(path, repair=True), path)
    assert outcome["value"].status == "sidecar_not_regular"
    assert mode(path) == 0o644, "--repair narrows sidecar files only"


def test_a_socket_at_a_sidecar_path_is_not_regular(store, monkeypatch):
    import socket

    monkeypatch.chdir(store.root)  # a relative name keeps under the 108-byte socket limit
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind("socket.json")
        outcome = promptly(lambda: store.read(store.path("socket.json")))
    finally:
        server.close()
    refused(outcome, SidecarCorrupt, "sidecar_not_regular")


def test_iter_documents_yields_regular_files_only_so_a_scan_never_blocks(store, tmp_path):
    """reconcile() lists a binding's journals with iter_documents, then reads each."""
    directory = store.path("journal")
    store.write(store.path("journal", "a.json"), {"status": "pending"})
    os.mkfifo(directory / "b.json", 0o600)
    (directory / "c.json").mkdir(mode=0o700)
    (directory / "d.json").symlink_to(tmp_path)
    store.write(store.path("journal", "e.json"), {"status": "pending"})

    def scan():
        return [(p.name, store.read(p)) for p in store.iter_documents("journal")]

    outcome = promptly(scan, directory / "b.json")
    assert outcome["value"] == [
        ("a.json", {"status": "pending"}),
        ("e.json", {"status": "pending"}),
    ]


def test_the_pre_turn_hook_exits_promptly_with_a_fifo_hook_log(tmp_path):
    """The hook log was the first sidecar a hook touched: a FIFO there hung the Turn."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "hook-log.json", 0o600)
    result = turn_hooks(
        "host",
        "generic",
        "pre-turn",
        *binding_args(tmp_path / "no-registry.json"),
        stdin="not json",  # bad stdin: the hook logs a reason, so it opens the log
        env={"TURN_HOOKS_STATE_DIR": str(state)},
    )
    assert result.returncode == 0
    assert "reason_code=sidecar_not_regular" in result.stderr
    assert stat.S_ISFIFO(os.lstat(state / "hook-log.json").st_mode)


def _settle(registry: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    message = (
        "Done.\n<reward_memory_reflection_json>"
        f"{json.dumps(f1.REFLECTION)}</reward_memory_reflection_json>"
    )
    return turn_hooks(
        "host",
        "generic",
        "post-settlement",
        *binding_args(registry),
        "--validation-command-json",
        json.dumps(VALIDATOR),
        stdin=json.dumps(
            {"turn_id": "t1", "last_assistant_message": message, "cwd": str(tmp_path / "repo")}
        ),
    )


@pytest.mark.parametrize("kind", ["settlements", JOURNAL_DIR])
def test_the_settlement_hook_exits_promptly_with_a_fifo_spool_or_journal(tmp_path, kind):
    """The same Turn settled again meets a FIFO where its spool or journal was."""
    registry = bound_goal(tmp_path)
    assert _settle(registry, tmp_path).returncode == 0
    root = sidecar_root(tmp_path / "repo")
    written = sorted((root / kind).rglob("*.json"))
    assert written, f"the first settlement wrote its {kind} sidecar"
    if kind == JOURNAL_DIR:  # without its spool the Turn is settled anew, journal and all
        for spool in (root / "settlements").rglob("*.json"):
            spool.unlink()
    for path in written:
        path.unlink()
        os.mkfifo(path, 0o600)
    assert _settle(registry, tmp_path).returncode == 0
    if kind == "settlements":  # set aside unopened, for a person; the Turn spooled anew
        written = [path.with_name(path.name + ".unreadable") for path in written]
    assert all(stat.S_ISFIFO(os.lstat(path).st_mode) for path in written)


def test_a_fifo_in_the_journal_directory_blocks_neither_reconcile_nor_pre_turn(tmp_path):
    registry = bound_goal(tmp_path)
    store = SidecarStore(sidecar_root(tmp_path / "repo"))
    journal = store.path(*goal_agent_parts(JOURNAL_DIR, f1.GOAL, f1.AGENT), "stuck.json")
    store.write(journal, {"status": "pending"})
    journal.unlink()
    os.mkfifo(journal, 0o600)
    result = turn_hooks("reward-memory", "reconcile", *binding_args(registry))
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["ok"] is True
    hooked = turn_hooks(
        "host",
        "generic",
        "pre-turn",
        *binding_args(registry),
        stdin=json.dumps({"turn_id": "t2", "prompt": "fix tests", "cwd": str(tmp_path / "repo")}),
    )
    assert hooked.returncode == 0
    assert "additional_context" in json.loads(hooked.stdout)


# --- #10, #12: the embedded store keeps the sidecar rules --------------------------------


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(path.relative_to(root)): (mode(path), path.read_bytes())
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


LINKS = [".local", ".local/turn-hooks", ".local/turn-hooks/memory.sqlite3"]


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("linked", LINKS)
def test_a_symlink_between_the_goal_repo_and_the_store_is_refused(tmp_path, linked, read_only):
    """The link leads to a valid store, so only the refusal keeps it from being used;
    the read-only open is the one ``health-check`` makes."""
    outside = tmp_path / "outside"
    EmbeddedSqliteProvider(outside / ".local" / "turn-hooks" / "memory.sqlite3").write(
        URI, "outside record", actor_peer_id="peer-a", timeout=5
    )
    repo = tmp_path / "repo"
    (repo / linked).parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    (repo / linked).symlink_to(outside / linked)
    before = snapshot(outside)
    provider = build_provider(EMBEDDED, repo=repo, read_only=read_only)
    preflight = provider.preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_symlink")
    with pytest.raises(ProviderUnavailable) as info:
        provider.read_exact(URI, actor_peer_id="peer-a", timeout=1)
    assert info.value.reason_code == "embedded_store_symlink"
    with pytest.raises(ProviderUnavailable):
        provider.write(URI, "planted", actor_peer_id="peer-a", timeout=1)
    assert snapshot(outside) == before


def test_a_store_symlink_to_an_absent_outside_path_creates_nothing_there(tmp_path):
    """What the issue saw: the link created an outside database at 0644 and filled it."""
    repo = tmp_path / "repo"
    (repo / ".local" / "turn-hooks").mkdir(parents=True, mode=0o700)
    (repo / ".local" / "turn-hooks" / "memory.sqlite3").symlink_to(tmp_path / "outside.sqlite3")
    provider = build_provider(EMBEDDED, repo=repo)
    with pytest.raises(ProviderUnavailable) as info:
        provider.write(URI, "memory", actor_peer_id="peer-a", timeout=1)
    assert info.value.reason_code == "embedded_store_symlink"
    assert not os.path.lexists(tmp_path / "outside.sqlite3")


def test_an_explicit_sqlite_path_is_checked_from_its_own_directory(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "linked").symlink_to(real)
    monkeypatch.setenv("TURN_HOOKS_SQLITE_PATH", str(tmp_path / "linked" / "memory.sqlite3"))
    preflight = build_provider(EMBEDDED, repo=tmp_path / "repo").preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_symlink")
    assert list(real.iterdir()) == []


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_the_store_creates_private_directories_and_file_whatever_the_umask(tmp_path, umask):
    """``.local`` used to be made 0755 by ``mkdir(parents=True)`` under umask 022."""
    repo = tmp_path / "repo"
    repo.mkdir()
    old = os.umask(umask)
    try:
        assert build_provider(EMBEDDED, repo=repo).preflight(timeout=5).ok
    finally:
        os.umask(old)
    assert mode(repo / ".local") == 0o700
    assert mode(repo / ".local" / "turn-hooks") == 0o700
    assert mode(repo / ".local" / "turn-hooks" / "memory.sqlite3") == 0o600


def test_missing_directories_above_the_anchor_are_private_too(tmp_path):
    store = EmbeddedSqliteProvider(tmp_path / "a" / "b" / "c" / "memory.sqlite3")
    assert store.preflight(timeout=5).ok
    assert [mode(tmp_path / part) for part in ("a", "a/b", "a/b/c")] == [0o700] * 3


def test_a_directory_that_cannot_be_made_is_unavailable_not_a_crash(tmp_path, monkeypatch):
    def refuse(*_args: Any) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(os, "mkdir", refuse)
    preflight = build_provider(EMBEDDED, repo=tmp_path / "repo").preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_failed")


def test_a_directory_made_meanwhile_by_another_process_is_used(tmp_path, monkeypatch):
    real_mkdir = os.mkdir

    def racing(path: Any, mode: int = 0o777) -> None:
        real_mkdir(path, mode)
        raise FileExistsError(path)  # another process won the race

    monkeypatch.setattr(os, "mkdir", racing)
    assert build_provider(EMBEDDED, repo=tmp_path / "repo").preflight(timeout=5).ok


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("widened", ["file", "directory"])
def test_a_widened_store_is_refused_not_narrowed(tmp_path, widened, read_only):
    """Refused, as a widened sidecar is: its records may already have been read, and the
    operator learns of it from ``health-check`` before ``chmod`` repairs it."""
    repo = tmp_path / "repo"
    writer = build_provider(EMBEDDED, repo=repo)
    writer.write(URI, "private", actor_peer_id="peer-a", timeout=5)
    database = repo / ".local" / "turn-hooks" / "memory.sqlite3"
    target = database if widened == "file" else database.parent
    os.chmod(target, 0o644 if widened == "file" else 0o755)
    provider = build_provider(EMBEDDED, repo=repo, read_only=read_only)
    preflight = provider.preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_permission_widened")
    with pytest.raises(ProviderUnavailable):
        provider.read_exact(URI, actor_peer_id="peer-a", timeout=1)
    assert mode(target) == (0o644 if widened == "file" else 0o755), "left for the operator"
    os.chmod(target, 0o600 if widened == "file" else 0o700)
    assert provider.read_exact(URI, actor_peer_id="peer-a", timeout=1) == "private"


def test_a_store_that_is_not_ours_is_refused(tmp_path, monkeypatch):
    store = EmbeddedSqliteProvider(tmp_path / "s" / "memory.sqlite3")
    assert store.preflight(timeout=5).ok
    monkeypatch.setattr(os, "getuid", lambda: os.lstat(store.path).st_uid + 1)
    preflight = EmbeddedSqliteProvider(store.path).preflight(timeout=1)
    assert preflight.reason_code == "embedded_store_permission_widened"


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
def test_a_fifo_store_is_refused_promptly(tmp_path, read_only):
    path = tmp_path / "s" / "memory.sqlite3"
    path.parent.mkdir(mode=0o700)
    os.mkfifo(path, 0o600)
    provider = EmbeddedSqliteProvider(path, read_only=read_only)
    outcome = promptly(lambda: provider.preflight(timeout=1), path)
    assert outcome["value"].reason_code == "embedded_store_not_regular"


def test_a_file_where_the_store_directory_belongs_is_refused(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".local").write_text("not a directory")
    preflight = build_provider(EMBEDDED, repo=repo).preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_not_regular")


def test_an_absent_store_directory_is_absent_for_a_reader(tmp_path):
    provider = build_provider(EMBEDDED, repo=tmp_path / "repo", read_only=True)
    preflight = provider.preflight(timeout=1)
    assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_absent")
    assert not (tmp_path / "repo").exists()


def test_an_absent_store_file_is_absent_for_a_reader(tmp_path):
    (tmp_path / "repo" / ".local" / "turn-hooks").mkdir(parents=True, mode=0o700)
    provider = build_provider(EMBEDDED, repo=tmp_path / "repo", read_only=True)
    assert provider.preflight(timeout=1).reason_code == "embedded_store_absent"
    assert list((tmp_path / "repo" / ".local" / "turn-hooks").iterdir()) == []


# --- #3: the store owns its companion files ----------------------------------------------


def companion(store: EmbeddedSqliteProvider, suffix: str) -> Path:
    return store.path.with_name(store.path.name + suffix)


@pytest.fixture
def held(tmp_path: Path) -> Any:
    """A store with one record and an open reader, which keeps ``-wal`` and ``-shm``."""
    store = EmbeddedSqliteProvider(tmp_path / "s" / "memory.sqlite3")
    store.write(URI, "one", actor_peer_id="peer-a", timeout=5)
    keeper = sqlite3.connect(store.path)
    keeper.execute("SELECT count(*) FROM records").fetchone()
    assert companion(store, "-shm").exists() and companion(store, "-wal").exists()
    yield store
    keeper.close()


def test_a_writer_sets_companion_files_back_to_0600(held):
    """Root writes through a 0400 ``-shm`` anyway, so the mode itself is what is asserted;
    the next test shows the failure an ordinary user met."""
    os.chmod(companion(held, "-shm"), 0o400)
    os.chmod(companion(held, "-wal"), 0o644)
    journal = companion(held, "-journal")
    journal.touch(mode=0o644)
    os.chmod(journal, 0o644)
    held.write(URI.replace("r.json", "s.json"), "two", actor_peer_id="peer-a", timeout=5)
    assert [mode(companion(held, s)) for s in ("-wal", "-shm", "-journal")] == [0o600] * 3
    assert held.read_exact(URI.replace("r.json", "s.json"), actor_peer_id="peer-a", timeout=5)


def test_a_reader_changes_no_companion_and_refuses_a_widened_one(held):
    os.chmod(companion(held, "-shm"), 0o400)
    reader = EmbeddedSqliteProvider(held.path, read_only=True)
    assert reader.read_exact(URI, actor_peer_id="peer-a", timeout=5) == "one"
    assert mode(companion(held, "-shm")) == 0o400
    os.chmod(companion(held, "-wal"), 0o644)
    assert reader.preflight(timeout=1).reason_code == "embedded_store_permission_widened"
    assert mode(companion(held, "-wal")) == 0o644


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("fault", ["symlink", "fifo", "foreign"])
def test_a_companion_that_is_not_a_plain_file_of_ours_is_refused(
    held, tmp_path, monkeypatch, fault, read_only
):
    """A planted companion (here ``-journal``) as a link would send SQLite's next write
    anywhere the user can write; as a FIFO it could block it."""
    planted = companion(held, "-journal")
    if fault == "symlink":
        planted.symlink_to(tmp_path / "elsewhere")
        reason = "embedded_store_symlink"
    elif fault == "fifo":
        os.mkfifo(planted, 0o600)
        reason = "embedded_store_not_regular"
    else:
        planted.touch(mode=0o600)
        real_lstat = os.lstat

        def foreign(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            info = real_lstat(path, *args, **kwargs)
            if str(path) != str(planted):
                return info
            fields = list(info)
            fields[stat.ST_UID] = info.st_uid + 1
            return os.stat_result(fields)

        # As root, chown could make a real foreign file; as anyone else it cannot, so
        # the owner is simulated where the store reads it, the same way for everyone.
        monkeypatch.setattr(os, "lstat", foreign)
        reason = "embedded_store_permission_widened"
    provider = EmbeddedSqliteProvider(held.path, read_only=read_only)
    outcome = promptly(lambda: provider.preflight(timeout=1), planted)
    assert outcome["value"].reason_code == reason
    assert not (tmp_path / "elsewhere").exists()


def _shm_scenario(directory: Path) -> dict[str, Any]:
    store = EmbeddedSqliteProvider(directory / "s" / "memory.sqlite3")
    store.write(URI, "one", actor_peer_id="peer-a", timeout=2)
    os.chmod(store.path, 0o400)
    reader = EmbeddedSqliteProvider(store.path)
    with contextlib.suppress(ProviderUnavailable):  # read-only database: expected
        reader.read_exact(URI, actor_peer_id="peer-a", timeout=2)
    shm_while_read_only = mode(companion(store, "-shm"))
    os.chmod(store.path, 0o600)
    later = EmbeddedSqliteProvider(store.path)
    second = URI.replace("r.json", "s.json")
    try:
        later.write(second, "two", actor_peer_id="peer-a", timeout=2)
        stored = later.read_exact(second, actor_peer_id="peer-a", timeout=2)
    except ProviderUnavailable as exc:
        stored = exc.reason_code
    return {"shm_while_read_only": shm_while_read_only, "stored": stored}


def test_a_store_recovers_once_a_read_only_spell_is_over():
    """The ordinary user's story: the database is made 0400 for a while, a Turn reads
    it and SQLite creates a 0400 ``-shm``, the database is restored to 0600, and the
    next write must be stored without anyone fixing ``-shm`` by hand.

    Root would write through the 0400 ``-shm`` anyway, so as root the scenario runs in
    a forked child that has dropped to uid 65534 (``nobody``) in a scratch directory it
    owns; as anyone else it runs as that user. Nothing is skipped either way.
    """
    drop = os.geteuid() == 0
    directory = Path(tempfile.mkdtemp(prefix="turn-hooks-shm-"))
    try:
        if drop:  # root ignores modes: the story needs an ordinary uid
            os.chown(directory, 65534, 65534)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            code = 0
            try:
                os.close(read_end)
                if drop:
                    os.setgid(65534)
                    os.setuid(65534)
                payload = _shm_scenario(directory)
            except BaseException as exc:
                payload, code = {"error": repr(exc)}, 1
            os.write(write_end, json.dumps(payload).encode())
            os._exit(code)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            payload = json.loads(reader.read() or b"{}")
        os.waitpid(pid, 0)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert payload.get("shm_while_read_only") == 0o400, payload
    assert payload.get("stored") == "two", payload


# --- #7: a corrupt store is an unavailable provider --------------------------------------


CORRUPTIONS = {
    "garbage": lambda path: path.write_bytes(b"\x00garbage, not SQLite\xff" * 256),
    "truncated": lambda path: os.truncate(path, os.path.getsize(path) // 2),
}


def _corrupt_goal(tmp_path: Path, corruption: str) -> Path:
    """A bound Goal whose store held enough records to span many pages, then broke."""
    registry = bound_goal(tmp_path)
    repo = tmp_path / "repo"
    store = EmbeddedSqliteProvider(repo / ".local" / "turn-hooks" / "memory.sqlite3")
    scope = "viking://user/alice/peers/peer-a/memories/goals/g/experience"
    store.write_many(
        [(f"{scope}/{n}.json", "focused test module " * 40) for n in range(200)],
        actor_peer_id="peer-a",
    )
    CORRUPTIONS[corruption](store.path)
    return registry


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_store_is_unavailable_with_a_reason_code(tmp_path, corruption):
    registry = _corrupt_goal(tmp_path, corruption)
    for read_only in (False, True):
        provider = build_provider(EMBEDDED, repo=tmp_path / "repo", read_only=read_only)
        preflight = provider.preflight(timeout=1)
        assert (preflight.ok, preflight.reason_code) == (False, "embedded_store_corrupt")
        with pytest.raises(ProviderUnavailable) as info:
            provider.read_exact(f"{URI}", actor_peer_id="peer-a", timeout=1)
        assert info.value.reason_code == "embedded_store_corrupt"
    assert registry.exists()


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_health_check_and_recall_report_a_corrupt_store_and_exit_0(tmp_path, corruption):
    registry = _corrupt_goal(tmp_path, corruption)
    health = turn_hooks("reward-memory", "health-check", *binding_args(registry))
    assert health.returncode == 0, health.stdout
    corpus = json.loads(health.stdout)["corpora"][0]
    assert (corpus["provider_status"], corpus["reason_codes"]) == (
        "unavailable",
        ["embedded_store_corrupt"],
    )
    recall = turn_hooks(
        "reward-memory", "recall", *binding_args(registry), "--query", "focused test module"
    )
    assert recall.returncode == 0, recall.stdout
    assert json.loads(recall.stdout)["status"] == "provider_unavailable"


# --- #11: the fixture form of ingest-event writes nothing --------------------------------


def test_the_fixture_form_of_ingest_event_writes_nothing_anywhere(tmp_path):
    """It used to create ``./.local/turn-hooks/memory.sqlite3`` in the working directory."""
    config = normalise_config(f1.config("embedded_sqlite"))
    binding = config["corpora"]["experience"]["provider_binding"]
    fixture = tmp_path / "input" / "fixture.json"
    fixture.parent.mkdir()
    fixture.write_text(
        json.dumps(
            {
                "adapter": "scoped_feedback",
                "event": f1.event(),
                "corpus": f1.corpus("embedded_sqlite"),
                "standing_policy": f1.standing_policy(),
                "provider_binding": binding,
                "observed_at": f1.OBSERVED_AT,
            }
        )
    )
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    env = {"HOME": str(home), "XDG_STATE_HOME": "", "XDG_DATA_HOME": "", "XDG_CACHE_HOME": ""}
    result = turn_hooks("reward-memory", "ingest-event", "--input", str(fixture), cwd=work, env=env)
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["status"] == "preflight_ready"
    assert list(work.rglob("*")) == [] and list(home.rglob("*")) == []


# --- #12: a widened state directory turns the hook log off, and says so once -------------


@pytest.fixture
def quiet_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook_log, "_reported", [])  # "once per process": a fresh process


@pytest.mark.parametrize("widened", [0o755, 0o777], ids=["0755", "0777"])
def test_a_widened_state_directory_is_reported_once_with_a_reason_code(
    tmp_path, monkeypatch, capsys, quiet_log, widened
):
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, widened)
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(state))
    hook_log.record("generic_cli", "pre_turn", [("adapter", "stdin_not_json")])
    hook_log.record("generic_cli", "pre_turn", [("adapter", "stdin_not_json")])
    err = capsys.readouterr().err
    assert err == "turn-hooks: hook log not written (reason_code=hook_log_state_dir_widened)\n"
    assert list(state.iterdir()) == [] and mode(state) == widened, "the user's directory"


def test_the_hook_process_reports_a_widened_state_directory_and_exits_0(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)
    result = turn_hooks(
        "host",
        "generic",
        "pre-turn",
        *binding_args(tmp_path / "no-registry.json"),
        stdin="not json",
        env={"TURN_HOOKS_STATE_DIR": str(state)},
    )
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert (
        lines.count("turn-hooks: hook log not written (reason_code=hook_log_state_dir_widened)")
        == 1
    )
    assert str(tmp_path) not in result.stderr


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("widened-file", "sidecar_permission_widened"),
        ("fifo-log", "sidecar_not_regular"),
        ("file-as-state-dir", "sidecar_unreadable"),
        ("no-state-dir", "hook_log_unavailable"),
    ],
)
def test_other_hook_log_failures_carry_their_own_code(
    tmp_path, monkeypatch, capsys, quiet_log, fault, reason
):
    state = tmp_path / "state"
    if fault == "widened-file":
        state.mkdir(mode=0o700)
        (state / "hook-log.json").write_text("{}")
        os.chmod(state / "hook-log.json", 0o644)
    elif fault == "fifo-log":
        state.mkdir(mode=0o700)
        os.mkfifo(state / "hook-log.json", 0o600)
    elif fault == "file-as-state-dir":
        state.write_text("")
    else:

        def no_home() -> Path:
            raise RuntimeError("no home directory")

        monkeypatch.setattr(hook_log, "log_root", no_home)
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(state))
    hook_log.record("generic_cli", "pre_turn", [("adapter", "stdin_not_json")])
    assert capsys.readouterr().err == f"turn-hooks: hook log not written (reason_code={reason})\n"


def test_a_broken_stderr_does_not_break_the_hook(monkeypatch, quiet_log):
    class Broken:
        def write(self, _text: str) -> int:
            raise OSError("closed")

    monkeypatch.setattr(sys, "stderr", Broken())
    hook_log._report("hook_log_state_dir_widened")
    assert hook_log._reported == ["hook_log_state_dir_widened"]


def test_a_working_hook_log_says_nothing(tmp_path, monkeypatch, capsys, quiet_log):
    monkeypatch.setenv("TURN_HOOKS_STATE_DIR", str(tmp_path / "state"))
    hook_log.record("generic_cli", "pre_turn", [("adapter", "stdin_not_json")])
    assert capsys.readouterr().err == ""
    assert mode(tmp_path / "state") == 0o700
