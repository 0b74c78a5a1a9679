"""The sidecar store: modes, locks, atomic replace, corruption, links and races."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

import sidecars.store
from sidecars import SidecarStore, dumps, sidecar_root
from turn_hooks import (
    SidecarCorrupt,
    SidecarLockTimeout,
    SidecarPathError,
    SidecarPermissionError,
    SidecarWriteError,
)


@pytest.fixture
def store(tmp_path):
    return SidecarStore(tmp_path / "repo" / ".local" / "turn-hooks", lock_timeout=0.5)


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_write_creates_private_dirs_file_and_lock(store):
    path = store.path("outcomes", "goal-x", "event.json")
    store.write(path, {"schema_version": "v", "text": "é"})
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700 and mode(store.root) == 0o700
    assert mode(store.root.parent) == 0o700, ".local and the repository above it too"
    assert mode(store.root.parent.parent) == 0o700
    assert mode(path.with_name("event.json.lock")) == 0o600
    assert path.read_text(encoding="utf-8") == '{\n  "schema_version": "v",\n  "text": "é"\n}\n'
    assert store.read(path) == {"schema_version": "v", "text": "é"}


@pytest.mark.parametrize("umask", [0, 0o022], ids=["umask-000", "umask-022"])
def test_write_is_private_under_a_permissive_umask(store, umask):
    old = os.umask(umask)
    try:
        path = store.path("wide", "doc.json")
        store.write(path, {"a": 1})
    finally:
        os.umask(old)
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    assert mode(store.root.parent) == 0o700, "a missing .local is created 0700 (issue 13 #12)"


def test_read_of_a_missing_sidecar_is_none(store):
    assert store.read(store.path("nothing.json")) is None


def test_update_is_a_locked_read_modify_write(store):
    path = store.path("counter.json")
    assert store.update(path, lambda doc: {"n": (doc or {"n": 0})["n"] + 1}) == {"n": 1}
    assert store.update(path, lambda doc: {"n": doc["n"] + 1}) == {"n": 2}
    assert store.update(path, lambda doc: None) == {"n": 2}, "None leaves the file as it is"


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b'{"schema_version": "v", "n"', id="truncated"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
        pytest.param(b"[1, 2]", id="not-an-object"),
        pytest.param(b"", id="empty"),
    ],
)
def test_corrupt_sidecars_raise_and_are_never_overwritten(store, content):
    path = store.path("bad.json")
    store.write(path, {"x": 1})
    path.write_bytes(content)
    with pytest.raises(SidecarCorrupt) as info:
        store.read(path)
    assert info.value.reason_code == "sidecar_corrupt"
    with pytest.raises(SidecarCorrupt):
        store.update(path, lambda doc: {"replaced": True})
    assert path.read_bytes() == content


def test_an_oversized_sidecar_is_corrupt(store, monkeypatch):
    from sidecars import store as store_module

    path = store.path("big.json")
    store.write(path, {"text": "x" * 20})  # written under the bound, read over it
    monkeypatch.setattr(store_module, "MAX_SIDECAR_BYTES", 10)
    with pytest.raises(SidecarCorrupt):
        store.read(path)


def test_a_widened_file_is_refused_visibly_and_repair_narrows_it(store):
    path = store.path("doc.json")
    store.write(path, {"schema_version": "v"})
    os.chmod(path, 0o644)
    with pytest.raises(SidecarPermissionError) as info:
        store.read(path)
    assert info.value.reason_code == "sidecar_permission_widened"
    assert store.check(path).status == "sidecar_permission_widened"
    repaired = store.check(path, repair=True)
    assert (repaired.status, repaired.schema_version) == ("repaired", "v")
    assert mode(path) == 0o600
    assert store.check(path).status == "ok"


def test_a_widened_directory_is_refused(store):
    path = store.path("dir", "doc.json")
    store.write(path, {"a": 1})
    os.chmod(path.parent, 0o755)
    with pytest.raises(SidecarPermissionError):
        store.read(path)


def test_symlinked_file_is_refused_for_read_and_write(store, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text('{"secret": true}')
    path = store.path("link.json")
    store.write(store.path("seed.json"), {})
    path.symlink_to(outside)
    with pytest.raises(SidecarPathError) as info:
        store.read(path)
    assert info.value.reason_code == "sidecar_symlink"
    with pytest.raises(SidecarPathError):
        store.write(path, {"evil": True})
    assert json.loads(outside.read_text()) == {"secret": True}
    assert store.check(path).status == "sidecar_symlink"


def test_symlinked_directory_is_refused(store, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    store.write(store.path("seed.json"), {})
    (store.root / "linked").symlink_to(elsewhere)
    with pytest.raises(SidecarPathError):
        store.write(store.path("linked", "doc.json"), {"a": 1})
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(SidecarPathError):
        list(store.iter_documents("linked"))


def test_a_path_outside_the_root_is_refused(store, tmp_path):
    with pytest.raises(SidecarPathError) as info:
        store.read(tmp_path / "elsewhere.json")
    assert info.value.reason_code == "sidecar_path_escape"


def test_a_directory_in_place_of_a_sidecar_is_corrupt(store):
    path = store.path("doc.json")
    store.write(store.path("seed.json"), {})
    path.mkdir(mode=0o700)
    with pytest.raises(SidecarCorrupt) as info:
        store.read(path)
    assert info.value.reason_code == "sidecar_not_regular"
    with pytest.raises(SidecarCorrupt):
        store.write(path, {"a": 1})
    assert path.is_dir()


def test_a_file_in_place_of_a_directory_is_unreadable(store):
    store.write(store.path("afile.json"), {})
    with pytest.raises(SidecarPermissionError) as info:
        store.read(store.path("afile.json", "inner.json"))
    assert info.value.reason_code == "sidecar_unreadable"
    with pytest.raises(SidecarPermissionError) as info:
        store.write(store.path("afile.json", "inner.json"), {})
    assert info.value.reason_code == "sidecar_unreadable", "typed before filelock tries"


def test_open_errors_are_typed(store, tmp_path):
    import errno

    loop = OSError(errno.ELOOP, "loop")
    denied = OSError(errno.EACCES, "denied")
    socket = OSError(errno.ENXIO, "no such device or address")
    assert store._open_error(loop, tmp_path).reason_code == "sidecar_symlink"
    assert store._open_error(denied, tmp_path).reason_code == "sidecar_unreadable"
    assert store._open_error(socket, tmp_path).reason_code == "sidecar_not_regular"


def test_a_symlinked_dot_local_is_refused(tmp_path):
    """A linked ``.local`` would carry the whole sidecar tree out of the repository."""
    outside = tmp_path / "outside"
    (outside / "turn-hooks").mkdir(parents=True, mode=0o700)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".local").symlink_to(outside)
    store = SidecarStore(sidecar_root(repo), lock_timeout=0.5)
    for call in (
        lambda: store.write(store.path("doc.json"), {"a": 1}),
        lambda: store.read(store.path("doc.json")),
        lambda: list(store.iter_documents()),
    ):
        with pytest.raises(SidecarPathError) as info:
            call()
        assert info.value.reason_code == "sidecar_symlink"
    assert list((outside / "turn-hooks").iterdir()) == []


def test_a_dangling_symlinked_dot_local_is_refused_not_followed(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".local").symlink_to(tmp_path / "nowhere")
    store = SidecarStore(sidecar_root(repo), lock_timeout=0.5)
    with pytest.raises(SidecarPathError):
        store.write(store.path("doc.json"), {"a": 1})
    assert not (tmp_path / "nowhere").exists()


def test_a_widened_dot_local_is_not_refused(tmp_path):
    """Above the root only links matter: the 0700 root keeps the tree private."""
    repo = tmp_path / "repo"
    (repo / ".local").mkdir(parents=True, mode=0o755)
    os.chmod(repo / ".local", 0o755)
    store = SidecarStore(sidecar_root(repo), lock_timeout=0.5)
    store.write(store.path("doc.json"), {"a": 1})
    assert store.read(store.path("doc.json")) == {"a": 1}
    assert mode(repo / ".local") == 0o755, "a directory the store did not create is left alone"


def test_other_roots_may_sit_below_a_symlink(tmp_path):
    """The hook log's ``~/.local/state/turn-hooks`` may well sit below a linked ``~/.local``."""
    real = tmp_path / "dotfiles-local"
    real.mkdir()
    (tmp_path / ".local").symlink_to(real)
    store = SidecarStore(tmp_path / ".local" / "state" / "turn-hooks", lock_timeout=0.5)
    store.write(store.path("hook-log.json"), {"a": 1})
    assert (real / "state" / "turn-hooks" / "hook-log.json").exists()


def test_a_directory_that_cannot_be_created_is_a_typed_write_error(store, monkeypatch):
    def refuse(*_args):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(os, "mkdir", refuse)
    with pytest.raises(SidecarWriteError):
        store.write(store.path("new", "doc.json"), {"a": 1})


def test_a_directory_made_by_another_process_meanwhile_is_used(store, monkeypatch):
    real_mkdir = os.mkdir

    def racing(path, mode=0o777):
        real_mkdir(path, mode)
        raise FileExistsError(path)  # as if another process won the race

    monkeypatch.setattr(os, "mkdir", racing)
    path = store.path("raced", "doc.json")
    store.write(path, {"a": 1})
    assert store.read(path) == {"a": 1}


def test_lock_timeout_is_typed_and_fails_fast(store):
    path = store.path("busy.json")
    with store.lock(path):
        started = time.monotonic()
        with pytest.raises(SidecarLockTimeout) as info:
            store.write(path, {"a": 1})
        assert time.monotonic() - started < 5
    assert info.value.reason_code == "sidecar_lock_timeout"
    assert isinstance(info.value, TimeoutError)
    assert store.read(path) is None


def test_a_held_lock_is_tried_again_soon_then_every_50_ms_within_the_timeout(store, monkeypatch):
    # A lock held for milliseconds (a settlement finishing) is taken about when it is
    # let go: the pauses start at 1 ms and double up to 50 ms, and none runs past
    # the timeout. The pauses are counted, not timed.
    path = store.path("busy.json")
    pauses, now = [], [0.0]

    def sleep(pause):  # a clock that moves only by the pauses taken
        pauses.append(pause)
        now[0] += pause

    monkeypatch.setattr(sidecars.store.time, "sleep", sleep)
    monkeypatch.setattr(sidecars.store.time, "monotonic", lambda: now[0])
    with store.lock(path), pytest.raises(SidecarLockTimeout):
        SidecarStore(store.root, lock_timeout=0.5).write(path, {"a": 1})
    doubling = [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05]
    assert pauses[: len(doubling)] == doubling
    assert all(pause <= 0.05 for pause in pauses)
    assert sum(pauses) == pytest.approx(0.5), "the last pause is cut to the time left"
    assert pauses[-1] == pytest.approx(0.5 - 0.063 - 8 * 0.05)


def test_the_lock_excludes_and_is_excluded_by_a_filelock_in_another_process(store, tmp_path):
    # The store takes flock(2) itself (no filelock import on the hook path); a
    # filelock.FileLock holder elsewhere (another version of this package, a test
    # harness) and the store must still exclude each other, both ways.
    path = store.path("shared.json")
    store.write(path, {"n": 0})
    lock = str(path) + ".lock"
    held, release = tmp_path / "held", tmp_path / "release"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import filelock, pathlib, sys, time
                with filelock.FileLock(sys.argv[1], timeout=30):
                    pathlib.Path(sys.argv[2]).touch()
                    while not pathlib.Path(sys.argv[3]).exists():
                        time.sleep(0.01)
                """
            ),
            lock,
            str(held),
            str(release),
        ]
    )
    try:
        while not held.exists():
            assert holder.poll() is None, "the holder took its lock"
            time.sleep(0.01)
        with pytest.raises(SidecarLockTimeout):
            store.update(path, lambda doc: {"n": 1})
        # Waiting, not failing, while the holder lets go inside the timeout.
        waiting = SidecarStore(store.root, lock_timeout=30)
        threading = __import__("threading")
        timer = threading.Timer(0.2, release.touch)
        timer.start()
        assert waiting.update(path, lambda doc: {"n": doc["n"] + 1}) == {"n": 1}
        timer.join()
    finally:
        release.touch()
        holder.wait(timeout=30)
    assert holder.returncode == 0
    with store.lock(path):
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import filelock, sys\n"
                "try:\n    filelock.FileLock(sys.argv[1], timeout=0.2).acquire()\n"
                "except filelock.Timeout:\n    sys.exit(3)\n",
                lock,
            ],
            check=False,
        )
    assert probe.returncode == 3, "a FileLock waits for the store's lock"
    assert mode(lock) == 0o600


def test_a_lock_file_created_under_a_narrow_umask_is_still_0600(store):
    old = os.umask(0o277)  # would leave a new lock read-only: the next open could not lock
    try:
        path = store.path("narrow.json")
        store.write(path, {"a": 1})
        store.write(path, {"a": 2})
    finally:
        os.umask(old)
    assert mode(str(path) + ".lock") == 0o600 and store.read(path) == {"a": 2}


def test_a_non_json_document_is_a_write_error_and_leaves_no_file(store):
    path = store.path("doc.json")
    with pytest.raises(SidecarWriteError):
        store.write(path, {"bad": object()})
    assert not path.exists()


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        pytest.param({"text": "x" * (4 * 1024 * 1024)}, "sidecar_too_large", id="over-4-MiB"),
        pytest.param({"text": "ä" * (2 * 1024 * 1024 + 8)}, "sidecar_too_large", id="over-in-utf8"),
        pytest.param({"text": "a\udcffb"}, "sidecar_write_failed", id="lone-surrogate"),
    ],
)
def test_a_document_read_would_refuse_is_never_written(store, document, reason):
    """Issue 13: a sidecar over the read bound was written, then unreadable for ever."""
    path = store.path("doc.json")
    store.write(path, {"old": True})
    with pytest.raises(SidecarWriteError) as info:
        store.write(path, document)
    assert info.value.reason_code == reason
    assert store.read(path) == {"old": True}


def test_temp_files_left_by_a_killed_writer_are_cleaned_on_a_later_write(store):
    """kill -9 between mkstemp and os.replace left ``doc.json.XXXXXXXX`` for ever."""
    directory = store.path("sweep", "doc.json").parent
    store.write(store.path("sweep", "first.json"), {"a": 1})  # makes the directory
    left = ["doc.json.ab_d1234", "other.json.zz9y8x7w"]
    kept = ["doc.json.fresh123", "doc.json.lock", "notes.txt.abcd1234", "doc.json.toolong12"]
    for name in [*left, *kept]:
        (directory / name).write_text("{")
    (directory / "dir.json.abcd1234").mkdir()
    old = time.time() - 3600
    for name in [*left, "doc.json.lock", "notes.txt.abcd1234", "doc.json.toolong12"]:
        os.utime(directory / name, (old, old))
    sidecars.store._swept.discard(directory)
    store.sweep_temps = False  # a hook on the Turn's critical path leaves them
    store.write(store.path("sweep", "doc.json"), {"a": 1})
    assert set(left) <= {p.name for p in directory.iterdir()}
    store.sweep_temps = True
    store.write(store.path("sweep", "doc.json"), {"a": 2})
    names = sorted(p.name for p in directory.iterdir())
    assert not set(left) & set(names), "stale temp files are gone"
    assert set(kept) <= set(names), "a fresh temp file, a lock and other names stay"
    assert "dir.json.abcd1234" in names, "only regular files"


def test_a_failed_replace_removes_the_temp_file(store, monkeypatch):
    path = store.path("doc.json")
    store.write(path, {"old": True})

    def refuse(*_args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(SidecarWriteError):
        store.write(path, {"new": True})
    assert store.read(path) == {"old": True}
    assert sorted(p.name for p in path.parent.iterdir()) == ["doc.json", "doc.json.lock"]


def test_a_transaction_reads_and_writes_under_one_lock(store):
    path = store.path("txn.json")
    with store.transaction(path) as txn:
        assert txn.read() is None
        txn.write({"step": 1})
        assert txn.read() == {"step": 1}
        with pytest.raises(SidecarLockTimeout):
            store.write(path, {"step": "interleaved"})
    assert store.read(path) == {"step": 1}


def test_delete(store):
    path = store.path("doc.json")
    store.write(path, {"a": 1})
    assert store.delete(path) is True
    assert store.delete(path) is False
    assert store.read(path) is None


def test_iter_documents_lists_json_sidecars_sorted(store, tmp_path):
    for name in ("b.json", "a.json"):
        store.write(store.path("d", name), {})
    (store.path("d", "c.json")).symlink_to(tmp_path)
    assert [p.name for p in store.iter_documents("d")] == ["a.json", "b.json"]
    assert list(store.iter_documents("missing")) == []


def test_check_reports_missing_corrupt_and_ok(store):
    good = store.path("good.json")
    store.write(good, {"schema_version": 3})
    corrupt = store.path("corrupt.json")
    store.write(corrupt, {})
    corrupt.write_text("{")
    assert store.check(good).status == "ok" and store.check(good).schema_version is None
    assert store.check(corrupt).status == "sidecar_corrupt"
    assert store.check(store.path("gone.json")).status == "sidecar_missing"


def test_dumps_is_the_documented_on_disk_form():
    assert dumps({"b": 1, "a": "é"}) == '{\n  "a": "é",\n  "b": 1\n}\n'


# --- processes ---------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from sidecars import SidecarStore
    store = SidecarStore(Path(sys.argv[1]), lock_timeout=60)
    path = store.path("counter.json")
    for _ in range(int(sys.argv[2])):
        store.update(path, lambda doc: {"n": (doc or {"n": 0})["n"] + 1,
                                        "pids": sorted({*(doc or {}).get("pids", []), %s})})
    """
)


@pytest.mark.slow
def test_eight_concurrent_writers_lose_no_update(store):
    rounds = 25
    code = WORKER % "__import__('os').getpid()"
    workers = [
        subprocess.Popen([sys.executable, "-c", code, str(store.root), str(rounds)])
        for _ in range(8)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0] * 8
    document = store.read(store.path("counter.json"))
    assert document["n"] == 8 * rounds
    assert len(document["pids"]) == 8


WRITER = textwrap.dedent(
    """
    import hashlib, sys
    from pathlib import Path
    from sidecars import SidecarStore
    store = SidecarStore(Path(sys.argv[1]))
    path = store.path("big.json")
    i = 0
    while True:
        body = str(i) * 400_000
        store.write(path, {"i": i, "body": body,
                           "sha": hashlib.sha256(body.encode()).hexdigest()})
        print(i, flush=True)
        i += 1
    """
)


@pytest.mark.slow
def test_kill_9_during_writes_never_leaves_a_torn_file(store):
    import hashlib

    for attempt in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store.root)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2 + attempt):  # let it complete a few writes, then kill mid-stream
            assert writer.stdout.readline()
        time.sleep(0.003 * attempt)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
        document = store.read(store.path("big.json"))
        assert document is not None
        assert hashlib.sha256(document["body"].encode()).hexdigest() == document["sha"]
        assert document["body"] == str(document["i"]) * 400_000
        assert [p.name for p in store.iter_documents()] == ["big.json"]


def test_a_directory_that_cannot_be_listed_for_stale_temp_files_is_still_written(
    store, monkeypatch
):
    def refuse(*_args):
        raise PermissionError("no listing")

    monkeypatch.setattr(os, "scandir", refuse)
    path = store.path("unlisted", "doc.json")
    store.write(path, {"a": 1})
    monkeypatch.undo()
    assert store.read(path) == {"a": 1}


def test_a_flag_is_a_private_empty_file_made_once_and_listed_by_suffix(store):
    """A flag says one thing by being there: made 0600 in 0700 directories, kept when
    it is already there (touched only when asked), removed once, listed by suffix."""
    old_umask = os.umask(0o077 ^ 0o777)  # a umask that would leave it unreadable
    try:
        flag = store.path("pending", "goal-x", "event-1.pending")
        store.raise_flag(flag)
    finally:
        os.umask(old_umask)
    assert flag.read_bytes() == b"" and mode(flag) == 0o600 and mode(flag.parent) == 0o700
    os.utime(flag, (1_000_000, 1_000_000))
    store.raise_flag(flag)
    assert flag.stat().st_mtime == 1_000_000, "kept as it was"
    assert store.flag_age(flag) > 3600
    store.raise_flag(flag, touch=True)
    assert 0 <= store.flag_age(flag) < 3600
    store.raise_flag(store.path("pending", "goal-x", "event-0.pending"))
    (flag.parent / "note.txt").write_text("not a flag")
    os.mkfifo(flag.parent / "fifo.pending")
    assert store.flags("pending", "goal-x", suffix=".pending") == [
        "event-0.pending",
        "event-1.pending",
    ]
    assert store.lower_flag(flag) is True and not flag.exists()
    assert store.lower_flag(flag) is False
    assert store.flag_age(flag) is None
    assert store.flag_age(flag.parent / "fifo.pending") is None, "not a flag: no age"
    assert store.flags("absent", suffix=".pending") == []
    (store.root / "plain").write_text("a file where a directory is looked for")
    assert store.flags("plain", suffix=".pending") == []


def test_a_flag_never_opens_or_removes_what_is_planted_in_its_place(store, tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    link = store.path("pending", "link.pending")
    store.raise_flag(store.path("pending", "made.pending"))  # the private directories
    link.symlink_to(target)
    with pytest.raises(SidecarPathError) as raised:
        store.raise_flag(link, touch=True)
    assert raised.value.reason_code == "sidecar_symlink"
    with pytest.raises(SidecarPathError):
        store.lower_flag(link)
    assert target.read_text() == "keep" and link.is_symlink()
    fifo = store.path("pending", "fifo.pending")
    os.mkfifo(fifo)
    for act in (store.raise_flag, store.lower_flag):
        with pytest.raises(SidecarCorrupt) as raised:
            act(fifo)
        assert raised.value.reason_code == "sidecar_not_regular"


def test_a_flag_that_cannot_be_made_touched_or_removed_is_a_typed_write_error(store, monkeypatch):
    flag = store.path("pending", "event.pending")
    store.raise_flag(flag)
    real_open = os.open

    def full_disk(path, *args, **kwargs):
        if str(path).endswith("new.pending"):
            raise OSError(28, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", full_disk)
    with pytest.raises(SidecarWriteError):
        store.raise_flag(store.path("pending", "new.pending"))

    def refused(*args, **kwargs):
        raise PermissionError("refused")

    monkeypatch.setattr(os, "utime", refused)
    with pytest.raises(SidecarWriteError):
        store.raise_flag(flag, touch=True)
    monkeypatch.setattr(os, "unlink", refused)
    with pytest.raises(SidecarWriteError):
        store.lower_flag(flag)


def test_a_deleted_sidecar_can_take_its_lock_file_with_it(store):
    kept, dropped = store.path("queue", "kept.json"), store.path("queue", "dropped.json")
    for path in (kept, dropped):
        store.write(path, {"n": 1})
    assert store.delete(kept) is True and (kept.parent / "kept.json.lock").exists()
    assert store.delete(dropped, drop_lock=True) is True
    assert sorted(p.name for p in dropped.parent.iterdir()) == ["kept.json.lock"]
    assert store.delete(dropped, drop_lock=True) is False
    assert sorted(p.name for p in dropped.parent.iterdir()) == ["kept.json.lock"]


def test_a_waiter_whose_lock_file_was_removed_locks_the_file_there_is(store, monkeypatch):
    """Its holder removed the lock file (``delete(drop_lock=True)``) while the waiter
    was blocked on it: holding that file would exclude no one who opens the name now,
    so the waiter takes the lock of the file the name holds."""
    import threading

    path = store.path("queue", "marker.json")
    store.write(path, {"n": 1})
    lock = path.parent / "marker.json.lock"
    opened = threading.Event()
    real_open = sidecars.store._open_lock

    def watched(target):
        fd = real_open(target)
        opened.set()
        return fd

    taken = []

    def waiter():
        with SidecarStore(store.root, lock_timeout=30).lock(path) as fd:
            taken.append((os.fstat(fd).st_ino, os.lstat(lock).st_ino))

    with store.lock(path):
        monkeypatch.setattr(sidecars.store, "_open_lock", watched)
        thread = threading.Thread(target=waiter)
        thread.start()
        assert opened.wait(30), "the waiter never opened the lock"
        os.unlink(path)
        os.unlink(lock)
    thread.join(30)
    [(held, named)] = taken
    assert held == named, "it holds the file the name holds now"
    assert lock.exists() and not path.exists()


def test_orphan_locks_are_dropped_unless_held(store):
    """Lock files whose sidecar is gone (left by deletes that kept them) are removed,
    each taken first; a held one, a sidecar's own and a file that is not a lock stay."""
    directory = store.path("queue")
    for name in ("live.json", "gone.json", "held.json"):
        store.write(directory / name, {"n": 1})
    for name in ("gone.json", "held.json"):
        store.delete(directory / name)
    (directory / "note.lock").write_text("")
    (directory / "other.txt.lock").write_text("")
    os.mkfifo(directory / "fifo.json.lock")
    with SidecarStore(store.root).lock(directory / "held.json"):
        assert store.drop_orphan_locks("queue") == 1
    assert sorted(p.name for p in directory.iterdir()) == [
        "fifo.json.lock",
        "held.json.lock",
        "live.json",
        "live.json.lock",
        "note.lock",
        "other.txt.lock",
    ]
    assert store.drop_orphan_locks("queue") == 1, "no longer held"
    assert store.drop_orphan_locks("absent") == 0
    assert store.drop_orphan_locks("queue", "live.json") == 0, "not a directory"


def _widen_file(store, path):
    store.write(path, {"a": 1})
    os.chmod(path, 0o644)


def _widen_directory(store, path):
    store.write(path, {"a": 1})
    os.chmod(path.parent, 0o755)


def _private_dirs(store, path):
    store.write(path.with_name("neighbour.json"), {"a": 1})  # the store's own 0700 tree


def _fifo_for_file(store, path):
    _private_dirs(store, path)
    os.mkfifo(path, 0o600)


def _fifo_for_lock(store, path):
    _private_dirs(store, path)
    os.mkfifo(sidecars.store.lock_path(path), 0o600)


def _link_for_file(store, path):
    _private_dirs(store, path)
    path.symlink_to(path.with_name("neighbour.json"))


@pytest.mark.parametrize(
    ("plant", "reason"),
    [
        (_widen_file, "sidecar_permission_widened"),
        (_widen_directory, "sidecar_permission_widened"),
        (_fifo_for_file, "sidecar_not_regular"),
        (_fifo_for_lock, "sidecar_not_regular"),
        (_link_for_file, "sidecar_symlink"),
    ],
)
def test_check_writable_refuses_what_a_locked_write_would_before_anything_is_made(
    store, plant, reason
):
    path = store.path("dir", "doc.json")
    plant(store, path)
    before = sorted(os.listdir(path.parent))
    with pytest.raises((SidecarPermissionError, SidecarCorrupt, SidecarPathError)) as info:
        store.check_writable(path)
    assert info.value.reason_code == reason
    assert sorted(os.listdir(path.parent)) == before, "the check made nothing"


def test_check_writable_passes_a_sound_or_missing_sidecar_and_creates_nothing(store):
    missing = store.path("dir", "doc.json")
    store.check_writable(missing)
    assert not store.root.exists(), "nothing was made for the check"
    store.write(missing, {"a": 1})
    store.check_writable(missing)
