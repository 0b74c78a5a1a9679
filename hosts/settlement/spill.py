"""A Stop hook's stdin, moved into a file before it is anything else (issue 37).

The write-ahead queue marker (:func:`hosts.settlement.settlement.write_ahead`) is the first
durable write that names a Turn, but it needs the event parsed, the Goal resolved and
an fsync: a few milliseconds in which a ``kill -9`` used to cost a Turn whose stdin
the hook had already taken (the host will not send it again). So consuming stdin and
keeping it are one step. Before it reads anything, a post-settlement hook creates a
spill file in the user's state directory, ``<state>/incoming/<name>.spill`` (0600,
directory 0700, where the hook log and ``parked-settlements/`` live), holds an
exclusive ``flock`` on it for its whole life, writes a one-line header (the hook's
binding, as the command line gave it: never the environment), then moves stdin into
the file with ``splice(2)`` (a pipe) or ``sendfile(2)`` (a regular file). Each byte
leaves stdin only by landing in the file, in one system call, and the page cache
outlives the process: a hook killed after it read its event has it in its spill. A
tty or a socket is read and written instead (a kill between the two costs what it
cost before). The event is then read back from the spill, bounded as stdin always
was (``hook_input_too_large`` past :data:`hosts.adapters.generic.MAX_EVENT_CHARS`).

The spill is removed once :func:`~hosts.settlement.settlement.write_ahead` has done what it can
(the marker written, the Turn parked, or refused by name), and on every other way the
hook ends (:func:`release`), so a spill left behind means its writer died. Nothing is
fsynced: a spill is for a process's death, the marker for the machine's.

:func:`recover` is the other half, run by every PreTurn hook: one ``scandir`` of a
directory that is nearly always empty. A spill whose lock it can take (``LOCK_NB``:
its writer is dead) is rebuilt into the Turn the Stop hook would have built, through
the same code, and handed to ``write_ahead`` (queued, or parked when its Goal's root
still cannot be written); a later worker validates and settles it. It is logged as
``settlement_rebuilt_from_spill``. A spill that cannot be read (no header, a bad
event, a link or a FIFO in its place) is removed and logged as
``settlement_spill_unreadable``, never retried; one that holds no event (its writer
died before stdin had anything) is removed quietly: nothing was taken from the host.
A spill is made under a ``.part`` name and renamed once locked, so a ``.spill`` never
exists unlocked while its writer lives; a ``.part`` left by a kill in that instant
holds nothing of stdin and is removed once it is :data:`PART_GRACE` seconds old.

What remains, bounded and named: a kill before the hook has consumed stdin (the host
still holds the event); a state directory that cannot hold a spill (not writable,
full, a link, open to others: ``settlement_spill_unavailable``) or already holds
:data:`MAX_SPILLS` of them (``settlement_spill_full``), where the hook reads its
stdin as it did before, with the few milliseconds' exposure that had.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from hosts.settlement.hook_log import log_root, record
from sidecars import SidecarStore, kind_problem
from turn_hooks import SidecarError
from turn_hooks.errors import InvalidInputError

INCOMING_DIR = "incoming"
SPILL_SCHEMA = "turn_hooks_settlement_spill_v0"
SUFFIX = ".spill"
PART_SUFFIX = ".part"
MAX_SPILLS = 64
"""Files ``incoming/`` may hold before a Stop hook goes without one: spills pile up
only when writers die and no PreTurn comes, and each is at most one event."""
RECOVER_PER_CALL = 8
"""Spills one PreTurn takes at most: a pile left by many dead hooks is worked off
over a few Turns rather than on one."""
PART_GRACE = 5.0
"""Seconds after which a ``.part`` whose lock is free is a dead writer's (a live one
locks it within microseconds of making it)."""
MAX_HEADER = 64 * 1024
"""The most a spill's header line may hold: a binding and a validator's argv."""
_FLAGS = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_held: list[tuple[int, Path]] = []
"""The spill this process holds (its descriptor and path), at most one."""


def incoming_dir() -> Path:
    """``<state>/incoming``, where Stop hooks spill their stdin (``<state>``:
    :func:`hosts.settlement.hook_log.log_root`)."""
    return log_root() / INCOMING_DIR


def take_stdin(header: dict[str, Any], *, limit: int, reason_prefix: str) -> bytes:
    """This hook's stdin, moved through a spill that keeps it until :func:`release`.

    At most ``limit + 1`` bytes are taken; past ``limit`` the input is refused as
    :func:`sidecars.read_stream` refuses it. Where no spill can be made the stdin is
    read as it always was, and the hook log says why once.

    :raises InvalidInputError: ``<prefix>_too_large`` or ``<prefix>_unreadable``.
    """
    held = _open(header)
    if held is None:
        from hosts.adapters.generic import read_hook_stdin

        return read_hook_stdin()
    fd, start = held
    moved = _move(fd, limit + 1, reason_prefix)
    if moved > limit:
        raise InvalidInputError(
            "the input is larger than its bound", reason_code=f"{reason_prefix}_too_large"
        )
    return os.pread(fd, moved, start) if moved else b""


def release() -> None:
    """Remove this process's spill and let its lock go; nothing when it holds none.
    Called once the Turn is kept elsewhere (or refused), and when the hook ends."""
    while _held:
        fd, path = _held.pop()
        with contextlib.suppress(OSError):
            os.unlink(path)  # before the lock goes: no one takes a spill being let go
        os.close(fd)


def _open(header: dict[str, Any]) -> tuple[int, int] | None:
    """A new, locked spill holding ``header``: (its descriptor, where the event
    starts). ``None`` when the state directory cannot hold one (logged)."""
    directory = incoming_dir()
    line = (json.dumps({"schema_version": SPILL_SCHEMA, **header}) + "\n").encode()
    name = f"{time.time_ns()}-{os.getpid()}-{os.urandom(4).hex()}"
    part, path = directory / (name + PART_SUFFIX), directory / (name + SUFFIX)
    try:
        if _count(directory) >= MAX_SPILLS:
            _note("settlement_spill_full")
            return None
        fd = os.open(part, os.O_RDWR | _FLAGS, 0o600)
    except (SidecarError, OSError):
        _note("settlement_spill_unavailable")
        return None
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # a recoverer holds a fresh part for no time
        os.write(fd, line)
        os.rename(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(part)
        os.close(fd)
        _note("settlement_spill_unavailable")
        return None
    _held.append((fd, path))
    return fd, len(line)


def _count(directory: Path) -> int:
    """The files in ``incoming/``, which is made (0700) when missing and must be a
    private directory of its own, not a link.

    :raises SidecarError: a link, a widened directory, one that cannot be made.
    """
    try:
        return _listed(directory)
    except FileNotFoundError:
        # The sidecar store's own checks and 0700 directories, for its own root.
        SidecarStore(directory.parent).make_directory(directory)
        return _listed(directory)


def _listed(directory: Path) -> int:
    info = os.lstat(directory)
    if kind_problem(info.st_mode, directory=True) or stat.S_IMODE(info.st_mode) & 0o077:
        raise OSError("incoming is not a private directory")
    with os.scandir(directory) as entries:
        return sum(1 for _ in entries)


def _move(fd: int, count: int, reason_prefix: str) -> int:
    """Move up to ``count`` bytes of stdin to the end of ``fd``; the bytes moved."""
    try:
        kind = os.fstat(0).st_mode
    except OSError:
        return 0  # no stdin at all reads as empty
    move = os.splice if stat.S_ISFIFO(kind) else os.sendfile if stat.S_ISREG(kind) else None
    moved = 0
    while moved < count:
        try:
            if move is os.splice:
                step = os.splice(0, fd, count - moved)
            elif move is os.sendfile:
                step = os.sendfile(fd, 0, None, count - moved)
            else:
                step = _copy(fd, count - moved)
        except InterruptedError:
            continue
        except OSError as exc:
            if move is not None and moved == 0:
                move = None  # a pipe or file the kernel will not splice: read it
                continue
            raise InvalidInputError(
                "the input cannot be read", reason_code=f"{reason_prefix}_unreadable"
            ) from exc
        if step == 0:
            break
        moved += step
    return moved


def _copy(fd: int, count: int) -> int:
    data = os.read(0, min(count, 1 << 16))
    os.write(fd, data)
    return len(data)


def _note(reason_code: str) -> None:
    record("unknown", "post_settlement", [("adapter", reason_code)])


# --- recovery -----------------------------------------------------------------


def recover(limit: int = RECOVER_PER_CALL) -> int:
    """Queue the Turns of dead Stop hooks' spills; how many were rebuilt. Never raises.

    The common case is one failed or empty directory listing.
    """
    directory = incoming_dir()
    try:
        info = os.lstat(directory)
        if kind_problem(info.st_mode, directory=True):
            return 0  # never listed through a link
        with os.scandir(directory) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        return 0
    rebuilt = 0
    for name in names[:limit]:
        try:
            rebuilt += _recover_one(directory / name)
        except Exception:  # a bug here must not cost the PreTurn its context
            _drop(directory / name, "settlement_spill_unreadable")
    return rebuilt


def _recover_one(path: Path) -> int:
    import fcntl

    try:
        kind = os.lstat(path).st_mode
    except OSError:
        return 0  # taken by another PreTurn
    if kind_problem(kind) or not path.name.endswith((SUFFIX, PART_SUFFIX)):
        _drop(path, "settlement_spill_unreadable")
        return 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        opened = os.fstat(fd)
        if path.name.endswith(PART_SUFFIX) and time.time() - opened.st_mtime < PART_GRACE:
            return 0  # perhaps a writer about to lock it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # its writer lives
        named = os.lstat(path)
        if (named.st_dev, named.st_ino) != (opened.st_dev, opened.st_ino):
            return 0  # taken and removed by another PreTurn already
        if path.name.endswith(PART_SUFFIX):
            _drop(path, None)  # made, never renamed: nothing of stdin in it
            return 0
        data = os.read(fd, MAX_HEADER + _max_event() + 2)
        outcome = _rebuild(data)
        _drop(path, None if outcome in ("rebuilt", "empty") else outcome)
        return 1 if outcome == "rebuilt" else 0
    finally:
        os.close(fd)


def waiting(goal_id: str | None, agent_id: str | None) -> int:
    """How many dead Stop hooks' spills of one (Goal, Agent) wait for the next PreTurn
    (``turn-hooks status``). Read only: a spill whose writer lives (its lock is held)
    is not counted, and nothing is taken, changed or logged."""
    import fcntl

    directory = incoming_dir()
    try:
        if kind_problem(os.lstat(directory).st_mode, directory=True):
            return 0
        with os.scandir(directory) as entries:
            names = [entry.name for entry in entries if entry.name.endswith(SUFFIX)]
    except OSError:
        return 0
    count = 0
    for name in names:
        try:
            fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # taken meanwhile, or not a file we may read
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            header = json.loads(os.pread(fd, MAX_HEADER + 1, 0).partition(b"\n")[0])
        except (OSError, ValueError):
            continue  # its writer lives, or it is unreadable (the PreTurn says so)
        finally:
            os.close(fd)
        if isinstance(header, dict) and (header.get("goal_id"), header.get("agent_id")) == (
            goal_id,
            agent_id,
        ):
            count += 1
    return count


def _max_event() -> int:
    from hosts.adapters.generic import MAX_EVENT_CHARS

    return MAX_EVENT_CHARS


def _drop(path: Path, reason_code: str | None) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
    if reason_code:
        record("unknown", "pre_turn", [("adapter", reason_code)])


def _rebuild(data: bytes) -> str:
    """``rebuilt``, ``empty`` or a reason code: the spill's Turn, queued as its Stop
    hook would have queued it."""
    line, newline, event_bytes = data.partition(b"\n")
    try:
        header = json.loads(line) if newline and len(line) <= MAX_HEADER else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("schema_version") != SPILL_SCHEMA:
        return "settlement_spill_unreadable"
    if not event_bytes:
        return "empty"
    from hosts.adapters import generic

    try:
        event = generic.parse_event(event_bytes)
        binding = _binding(header)
    except InvalidInputError:
        return "settlement_spill_unreadable"
    from hosts.settlement.settlement import settlement_store, write_ahead
    from sidecars import serves_directory

    if not serves_directory(binding["registry"], binding["goal_id"], event.get("cwd")):
        return "empty"  # not this Goal's Turn: the hook would have kept nothing
    try:
        settlement_store(binding["registry"], binding["goal_id"])
        built = _stop_turn(header, event, binding)
    except (InvalidInputError, SidecarError) as exc:
        return exc.reason_code  # what the hook would have logged instead
    if built is None:
        return "empty"
    turn, message = built
    argv = header.get("validation_argv")
    timeout = header.get("validation_timeout_seconds")
    queued = write_ahead(
        turn,
        final_message=message,
        validation_argv=argv if _strings(argv) else None,
        validation_timeout=timeout if type(timeout) is int else None,
    )
    if queued:  # else it was parked, or refused, and said so itself
        record(turn.host, "pre_turn", [("adapter", "settlement_rebuilt_from_spill")])
    return "rebuilt"


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _binding(header: dict[str, Any]) -> dict[str, Any]:
    goal_id, agent_id = header.get("goal_id"), header.get("agent_id")
    registry, cwd = header.get("registry"), header.get("cwd")
    if not (isinstance(goal_id, str) and isinstance(agent_id, str)):
        raise InvalidInputError("the spill names no binding", reason_code="spill_unbound")
    if not (registry is None or isinstance(registry, str)):
        raise InvalidInputError("the spill's registry is no path", reason_code="spill_unbound")
    if registry and isinstance(cwd, str):
        registry = os.path.join(cwd, registry)  # as the hook, in its directory, saw it
    return {
        "goal_id": goal_id,
        "agent_id": agent_id,
        "registry": registry,
        "prompt_in_recall": header.get("prompt_in_recall") is not False,
    }


def _stop_turn(
    header: dict[str, Any], event: dict[str, Any], binding: dict[str, Any]
) -> tuple[Any, str | None] | None:
    """(Turn, final message) as the hook's adapter builds it; ``None``: none to settle."""
    host_name, dialect = header.get("host_name"), header.get("dialect")
    if host_name == "generic":
        from hosts.adapters import generic

        return generic.stop_turn(
            event, dialect=dialect if isinstance(dialect, str) else "plain", **binding
        )
    from hosts.adapters import codex_cli

    host = "dsh" if host_name == "dsh" else codex_cli.HOST
    return codex_cli.stop_turn(event, host=host, **binding)
