"""The resident hook server: the hook path's modules stay loaded, a child runs each call.

Started detached by a hook client (:func:`hosts._warm.start_server`), one per package
key, in a 0700 directory of the user. The server stays single-threaded and holds no
connection, file or thread of any hook: it only imports. For each client (checked to
be this user with ``SO_PEERCRED``) it forks a child, which takes the client's
standard streams, directory, environment and umask and runs ``hosts.cli.command.main`` as a
cold process would, then reports the exit status to the client itself. The child is
forked ahead of its call (a spare, waiting on a socket pair for the server to hand it
a client), so a call does not wait for the fork of a large process: about 6 ms on
the machine of benchmarks/RESULTS.md. A spare ends when its server does. A child
outlives neither the deadline (the server kills it, and its own alarm would too) nor
its client (a client that goes away gets its child killed). The socket pair stays
open while the child runs: a child whose call is a session (``mcp serve``, which
lasts as long as its host keeps it) says so over it and is no call from then on, so
the server forks the next spare, sets no deadline on it and may go idle under it.
A call that queued work for after its reply (:mod:`hosts.settlement.after_reply`: a Stop's
settlement, the hook log) says ``D`` over it just before it reports its exit status,
and is no call from then on either: its client's exit does not get it killed, and the
work bounds itself as the forked settler of a cold Stop does.

The server exits after ``TURN_HOOKS_RESIDENT_IDLE_SECONDS`` (3600) without a call
(``TURN_HOOKS_RESIDENT_SHORT_IDLE_SECONDS``, 120, while it has served one call at
most), on SIGTERM, and once the installed package changed under it (its key, or any module
file it loaded: checked every second while idle and after each call it hands over);
it removes its socket and pid file. A client of another key is refused by the child.
A second server for the same key finds the lock taken and exits at once. A server
that would make more than ``TURN_HOOKS_RESIDENT_MAX_SERVERS`` (4) of this user, over
every HOME and interpreter, exits too (:func:`_crowded`): its calls run cold.
"""

from __future__ import annotations

import fcntl
import gc
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from hosts import _warm
from hosts.settlement import after_reply

_PEERCRED = struct.Struct("3i")


def main(args: list[str]) -> None:
    """``python -c ... DIRECTORY DIGEST``: serve until idle, stale or stopped."""
    try:
        directory, name = args
        serve(directory, name)
    except Exception:  # detached, with no one to tell: the clients fall back cold
        pass


def warm_up() -> None:
    """Import the hook path: the host adapters and every module of the packages the
    plugin manager loads (importing a module here has no side effects, by rule).
    Then make what a hook call would make first, for the next forked child to take:
    the ``host`` command's parser and the plugin manager (each re-made by the call
    itself when its environment or the installed plugins differ)."""
    import importlib.metadata
    import pkgutil
    import re
    import tomllib  # noqa: F401  # every Codex Turn reads config.toml (hosts.adapters.channel)

    import hosts.adapters.codex_cli
    import hosts.adapters.generic
    import hosts.cli.command
    import hosts.settlement.hook_log
    import hosts.settlement.settlement
    import turn_hooks
    from turn_hooks import make_plugin_manager, prebuild_plugin_manager

    # Dependencies are imported lazily on the hook path (a lock, an HTTP client).
    for requirement in importlib.metadata.requires("turn-hooks") or []:
        match = re.match(r"[A-Za-z0-9_.-]+", requirement)
        if match and "extra ==" not in requirement:
            try:
                __import__(match.group().replace("-", "_").lower())
            except Exception:  # an optional dependency missing is loaded cold, or not
                continue
    manager = make_plugin_manager()
    tops = {"hosts", "turn_hooks", "sidecars"}
    for plugin in manager.get_plugins():
        name = getattr(plugin, "__module__", None) or getattr(plugin, "__name__", "")
        if isinstance(name, str) and name:
            tops.add(name.partition(".")[0])
    for top in sorted(tops):
        package = sys.modules.get(top)
        for info in pkgutil.walk_packages(getattr(package, "__path__", []), top + "."):
            if info.name.rpartition(".")[2] in ("__main__", "_entry"):
                continue
            try:
                __import__(info.name)
            except Exception:  # an optional module that cannot load is loaded cold
                continue
    # The models a call would build on its first use of one (turn_hooks.models).
    for name in turn_hooks.__all__:
        getattr(turn_hooks, name)
    hosts.cli.command.prebuild()
    prebuild_plugin_manager()
    # A plugin may load what its first hook call would (a model) for every child.
    for plugin in manager.get_plugins():
        warm = getattr(plugin, "warm_resident", None)
        if callable(warm):
            try:
                warm()
            except Exception:  # what it could not load is loaded cold, or not
                continue


def snapshot() -> dict[str, bytes]:
    """The identity of every loaded module file of our packages (see :func:`warm_up`)."""
    roots = tuple(
        str(Path(path)) + os.sep
        for name in ("hosts", "turn_hooks", "sidecars", "capabilities", "conformance")
        for path in getattr(sys.modules.get(name), "__path__", [])
    )
    files: dict[str, bytes] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.startswith(roots):
            files[path] = _warm._identity(path)
    return files


def _stale(key: bytes, files: dict[str, bytes]) -> bool:
    if _warm.package_key() != key:
        return True
    return any(_warm._identity(path) != identity for path, identity in files.items())


def serve(directory: str, name: str) -> None:
    """Listen in ``directory`` for the clients whose key has the digest ``name``
    (this server's own key) until idle, stale or SIGTERM."""
    _warm.check_dir(directory)
    key = _warm.package_key()
    if _warm.digest(key) != name:
        return  # started by a client of other code: that key is not ours to serve
    socket_path, lock_path, pid_path = _warm.paths(directory, key)
    lock = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server for this key holds it
    if _crowded():
        return  # before any import: a server refused costs a bare interpreter
    warm_up()
    files = snapshot()
    # Children share the loaded modules' pages until they write them; a frozen heap
    # keeps the collector from touching (and so copying) every one of them.
    gc.freeze()
    try:  # under the lock no live server owns this name: a socket left there is stale
        if (os.lstat(socket_path).st_mode & 0o170000) != 0o140000:
            return
        os.unlink(socket_path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    umask = os.umask(0o177)
    try:
        listener.bind(socket_path)
    finally:
        os.umask(umask)
    bound = os.lstat(socket_path).st_ino
    listener.listen(64)
    listener.setblocking(False)
    _write_pid(pid_path)
    crowded = False
    try:
        # Again, now that it listens: of servers started at once, only the oldest go
        # on, so the bound holds however many started beside this one.
        crowded = _crowded()
        if not crowded:
            _loop(listener, key, files, lock)
    finally:
        try:
            if os.lstat(socket_path).st_ino == bound:
                os.unlink(socket_path)
        except OSError:
            pass
        try:
            if Path(pid_path).read_text(encoding="ascii") == str(os.getpid()):
                os.unlink(pid_path)
            if not crowded:  # a clean exit: the next call may start a server at once
                os.utime(lock, (0, 0))
        except OSError:
            pass
        listener.close()


def _crowded() -> bool:
    """Whether :data:`hosts._warm.MAX_SERVERS` servers of this user, started before
    this one, run already: then this one exits and its calls run cold, saying so in
    the hook log (``resident_servers_bound``; at most once a minute per install, as
    the client retries no sooner).

    Refusing rather than stopping the least recently used server: when more installs
    than the bound are in use, stopping one to start another would start a server
    (about 0.25 s of CPU, 35 MB) on almost every Turn, where a cold call costs only
    itself. The slots come back on their own: a server of one call leaves after
    the short idle, any other after the hour. The client does not try to start this
    key's server again for ``RETRY_SECONDS`` (its start left no pid file).
    """
    bound = _warm.count(_warm.MAX_SERVERS_VARIABLE, _warm.MAX_SERVERS)
    servers = _warm.user_servers()
    mine = next((entry for entry in servers if entry[1] == os.getpid()), None)
    if mine is None or sum(1 for entry in servers if entry < mine) < bound:
        return False
    try:
        from hosts.settlement.hook_log import record

        record("resident", "start", [("resident", "resident_servers_bound")])
    except Exception:  # logging never stops the refusal
        pass
    return True


def _write_pid(pid_path: str) -> None:
    temporary = f"{pid_path}.{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    os.replace(temporary, pid_path)


def _loop(listener: socket.socket, key: bytes, files: dict[str, bytes], lock: int) -> None:
    idle = _warm.seconds(_warm.IDLE_VARIABLE, _warm.IDLE_SECONDS)
    short = min(idle, _warm.seconds(_warm.SHORT_IDLE_VARIABLE, _warm.SHORT_IDLE_SECONDS))
    served = 0  # calls handed to a child: a server of one call at most waits ``short``
    # The client's deadline runs first (it kills the call and logs resident_timeout);
    # the server's, a little later, covers a client that is gone.
    deadline = _warm.seconds(_warm.DEADLINE_VARIABLE, _warm.DEADLINE_SECONDS) + 2.0
    stop: list[int] = []
    # Signals only wake the poll (through the pipe); the loop acts on them.
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    poller = select.poll()
    poller.register(listener, select.POLLIN)
    poller.register(wake_read, select.POLLIN)
    # A call's child: when its call started, its client and the server's end of its pair.
    children: dict[int, tuple[float, socket.socket, socket.socket]] = {}
    by_fd: dict[int, int] = {}  # a client's connection -> its child
    by_pair: dict[int, int] = {}  # the server's end of a child's pair -> the child
    sessions: set[int] = set()  # children that became sessions: no longer calls
    spare: list[tuple[int, socket.socket]] = []  # at most one: (pid, the server's end)
    last = time.monotonic()
    try:
        while not stop:
            if not spare and not children:  # off the path of a call: no call runs now
                closing = [listener.fileno(), wake_read, wake_write, lock]
                spare.extend(_fork_spare(key, closing))
            now = time.monotonic()
            limit = idle if served > 1 else short
            waits = [1.0, max(0.0, last + limit - now)]
            waits += [max(0.0, started + deadline - now) for started, _, _ in children.values()]
            events = poller.poll(min(waits) * 1000 + 1)
            gone: list[int] = []
            for fd, _mask in events:
                if fd == wake_read:
                    while _drain(wake_read):
                        pass
                elif fd in by_fd:  # the client hung up: its call ends with it
                    gone.append(by_fd[fd])
                elif fd in by_pair:
                    _heard(by_pair.pop(fd), children, by_fd, poller, sessions)
            # A child reports "D" on its pair before its client can exit: a hang-up
            # seen in the same poll as that report (or, in a poll that scanned the
            # pair just before it came, without it) is not a reason to kill it.
            for pid in gone:
                entry = children.get(pid)
                if entry is not None and by_pair.pop(entry[2].fileno(), None) is not None:
                    _heard(pid, children, by_fd, poller, sessions)
            _reap(children, by_fd, by_pair, poller, spare, sessions)
            now = time.monotonic()
            for pid in gone:
                if pid in children:
                    _kill(pid)
            for pid, (started, _, _) in list(children.items()):
                if now - started > deadline:
                    _kill(pid)
            if any(fd == listener.fileno() for fd, _ in events):
                closing = [listener.fileno(), wake_read, wake_write, lock]
                for _, conn, pair in children.values():
                    closing += [conn.fileno(), pair.fileno()]
                while (accepted := _accept(listener, key, closing, spare)) is not None:
                    pid, conn, pair = accepted
                    children[pid] = (time.monotonic(), conn, pair)
                    by_fd[conn.fileno()] = pid
                    by_pair[pair.fileno()] = pid
                    poller.register(conn, select.POLLRDHUP)
                    poller.register(pair, select.POLLIN)
                    closing += [conn.fileno(), pair.fileno()]
                    last = time.monotonic()
                    served += 1
                # Checked once the calls are handed over, off their path (about 2 ms):
                # a reinstall changes the key, which each client checks on its own call,
                # so what only this check sees is a module edited in place (an editable
                # install). A call handed over before it runs the loaded code, as a
                # process started just before the edit would.
                if _stale(key, files):
                    return  # a new install: its clients start their own server
            elif not children and time.monotonic() - last >= limit:
                return
            elif not events and _stale(key, files):
                return
    finally:
        for pid, end in spare:  # an idle spare ends with its server (it sees the end too)
            end.close()
            _kill(pid)
        signal.set_wakeup_fd(-1)


def _drain(fd: int) -> bool:
    try:
        return bool(os.read(fd, 512))
    except BlockingIOError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:  # already gone
        pass


def _heard(
    pid: int,
    children: dict[int, tuple[float, socket.socket, socket.socket]],
    by_fd: dict[int, int],
    poller: Any,
    sessions: set[int],
) -> None:
    """Read what the child ``pid`` said on its pair: ``S``, its call became a session;
    ``D``, it has replied and finishes its call's queued work (:mod:`hosts.settlement.after_reply`).

    The server then lets the call go (a session watches its client itself; the work
    after a reply bounds itself; neither has the call's deadline) and only reaps the
    child when it ends. Anything else (the pair's end, at the child's exit, or
    nothing said yet) leaves the call as it is, to be reaped, or killed when its
    client has gone.
    """
    _, conn, pair = children[pid]
    poller.unregister(pair)
    try:
        said = pair.recv(1, socket.MSG_DONTWAIT)
    except OSError:  # nothing said (a client that hung up early), or a broken pair
        said = b""
    pair.close()
    if said not in (b"S", b"D"):
        return
    del children[pid]
    sessions.add(pid)
    by_fd.pop(conn.fileno(), None)
    poller.unregister(conn)
    conn.close()  # the session holds its own copy: its client sees no end


def _reap(
    children: dict[int, tuple[float, socket.socket, socket.socket]],
    by_fd: dict[int, int],
    by_pair: dict[int, int],
    poller: Any,
    spare: list[tuple[int, socket.socket]],
    sessions: set[int],
) -> None:
    while children or spare or sessions:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            pid = 0
        if pid == 0:
            return
        sessions.discard(pid)
        for waiting in [item for item in spare if item[0] == pid]:  # a spare died idle
            spare.remove(waiting)
            waiting[1].close()
        entry = children.pop(pid, None)
        if entry is not None:
            _, conn, pair = entry
            by_fd.pop(conn.fileno(), None)
            poller.unregister(conn)
            conn.close()  # its client now sees the end of the call
            if by_pair.pop(pair.fileno(), None) is not None:
                poller.unregister(pair)
            pair.close()


def _fork_spare(key: bytes, closing: list[int]) -> list[tuple[int, socket.socket]]:
    """Fork a child that waits for a client (:func:`_spare`); ``[]`` if none could be."""
    try:
        server_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return []
    try:
        pid = os.fork()
    except OSError:
        server_end.close()
        child_end.close()
        return []
    if pid == 0:  # pragma: no cover - runs in the forked child only
        server_end.close()
        _spare(child_end, key, closing)
    child_end.close()
    return [(pid, server_end)]


def _hand_to_spare(
    conn: socket.socket, spare: list[tuple[int, socket.socket]]
) -> tuple[int, socket.socket] | None:
    """Give the client to the waiting spare: its pid and the server's end of its pair,
    or ``None`` (no spare, or it died)."""
    while spare:
        pid, end = spare.pop()
        try:
            socket.send_fds(end, [b"C"], [conn.fileno()])
            return pid, end
        except OSError:
            _kill(pid)  # reaped with the others
            end.close()
    return None


def _fork_child(
    conn: socket.socket, key: bytes, closing: list[int]
) -> tuple[int, socket.socket] | None:
    """Fork a child for the client now (no spare waits): its pid and the server's end
    of its pair, or ``None`` when it could not be forked (the client then runs cold)."""
    try:
        server_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        server_end.close()
        child_end.close()
        return None
    if pid == 0:  # pragma: no cover - runs in the forked child only
        server_end.close()
        _child(conn, child_end, key, closing)
    child_end.close()
    return pid, server_end


def _accept(
    listener: socket.socket,
    key: bytes,
    closing: list[int],
    spare: list[tuple[int, socket.socket]],
) -> tuple[int, socket.socket, socket.socket] | None:
    while True:
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return None
        _, uid, _ = _PEERCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        )
        if uid != os.getuid():
            conn.close()  # the directory is 0700; this is only the second lock
            continue
        child = _hand_to_spare(conn, spare) or _fork_child(conn, key, closing)
        if child is None:
            conn.close()  # nothing has run: the client runs the call itself
            continue
        return child[0], conn, child[1]


def _spare(end: socket.socket, key: bytes, closing: list[int]) -> NoReturn:  # pragma: no cover
    """Wait for the server to hand over a client, then serve it as :func:`_child` does.

    The end of the socket pair (the server exited, or was killed) ends the spare.
    """
    status = 0
    try:
        _leave_server(closing)
        end.setblocking(True)
        _, fds, _, _ = socket.recv_fds(end, 1, 1)
        if len(fds) != 1:
            os._exit(0)
        status = _child_call(socket.socket(fileno=fds[0]), end, key)
    except BaseException:
        status = 1
    os._exit(status)


def _leave_server(closing: list[int]) -> None:  # pragma: no cover - in forked children
    """Drop what is the server's: its descriptors and its signal handlers."""
    signal.set_wakeup_fd(-1)
    for fd in closing:
        try:
            os.close(fd)
        except OSError:
            pass
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _default_stop_signals()


def _default_stop_signals() -> None:  # pragma: no cover - in forked children
    """SIGTERM, SIGHUP and SIGINT as a new interpreter has them."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _child(
    conn: socket.socket, pair: socket.socket, key: bytes, closing: list[int]
) -> NoReturn:  # pragma: no cover - in the child
    status = 0
    try:
        _leave_server(closing)
        status = _child_call(conn, pair, key)
    except BaseException:
        status = 1
    os._exit(status)


def _child_call(
    conn: socket.socket, pair: socket.socket, key: bytes
) -> int:  # pragma: no cover - in the child
    """One call in a forked child, bounded by an alarm of its own; ``pair`` is the
    child's end of its socket pair with the server."""
    # The last bound on a call whose server and client are both gone.
    signal.alarm(int(_warm.seconds(_warm.DEADLINE_VARIABLE, _warm.DEADLINE_SECONDS)) + 5)
    conn.setblocking(True)
    return _serve_call(conn, pair, key)


def _serve_call(
    conn: socket.socket, pair: socket.socket, key: bytes
) -> int:  # pragma: no cover - in the child
    conn.settimeout(2.0)
    data = b""
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = conn.recv(1 << 20)
        if not chunk or len(data) > _warm.MAX_REQUEST:
            return 0
        data += chunk
    fields = data[4:].split(b"\0")
    if fields[0] != _warm.MAGIC or fields[1] != key.hex().encode():
        conn.sendall(b"R")  # another version's client: it runs cold
        return 0
    umask, argc = int(fields[2]), int(fields[3])
    argv = [os.fsdecode(arg) for arg in fields[4 : 4 + argc]]
    environment = [entry.partition(b"=") for entry in fields[4 + argc :]]
    if _warm.session(argv[1:]):
        _become_session(conn, pair)
    else:
        after_reply.accept(on_first=_shelter)
    conn.sendall(b"A" + os.getpid().to_bytes(4, "big"))
    # The streams come with "G" only, so no descriptor of the client's waits in a
    # queue that a stuck server never reads (a host reading stdout would wait too).
    go, fds, _, _ = socket.recv_fds(conn, 1, 4)
    try:
        if go != b"G" or len(fds) != 4:
            return 0  # the client gave up waiting and runs the call itself
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        os.fchdir(fds[3])
    finally:
        for fd in fds:
            os.close(fd)
    os.umask(umask)
    os.environb.clear()
    for name, _, value in environment:
        os.environb[name] = value
    sys.argv = argv
    if "tempfile" in sys.modules:  # a cached directory would be the server's
        setattr(sys.modules["tempfile"], "tempdir", None)  # noqa: B010  # a module's global
    _fresh_stdio()
    conn.settimeout(None)
    status = _run(argv[1:])
    if after_reply.pending():
        _reply_then_finish(conn, pair, status)
        return status
    conn.sendall(b"X" + status.to_bytes(4, "big", signed=True))
    return status


def _shelter() -> None:  # pragma: no cover - in the child
    """Ignore the host's stop signals once work waits for the reply, until the reply
    is sent (:func:`_reply_then_finish`): a cold Stop's settler, in a session of its
    own, is out of their reach too. The call itself ends within milliseconds of
    that, its client's deadline still bounds it, and the client exits with the
    call's status."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def _reply_then_finish(
    conn: socket.socket, pair: socket.socket, status: int
) -> None:  # pragma: no cover - in the child
    """Report ``status`` to the client, then run the call's queued work
    (:mod:`hosts.settlement.after_reply`): the host goes on while this child finishes.

    The server hears ``D`` first, so the client's exit right after the report is no
    longer a reason to kill this child, and no call's deadline applies (the work
    bounds itself: the validator's timeout, the providers' deadlines, the lock
    timeouts, as in the forked settler it replaces). The standard streams go to
    ``/dev/null`` before the report: the host may read the hook's output to its end.
    """
    signal.alarm(0)
    try:
        pair.sendall(b"D")
    except OSError:  # the server is gone: nothing watches this call any more
        pass
    devnull = os.open(os.devnull, os.O_RDWR | os.O_NOCTTY)
    for stream in (0, 1, 2):
        os.dup2(devnull, stream)
    os.close(devnull)
    try:
        conn.sendall(b"X" + status.to_bytes(4, "big", signed=True))
    except OSError:  # the client is gone: the work is still this call's to finish
        pass
    conn.close()
    pair.close()
    # No one forwards the host's signals any more; the validator and what it starts
    # inherit the dispositions, so they get the defaults back (_shelter ignored them).
    _default_stop_signals()
    after_reply.run()


def _become_session(conn: socket.socket, pair: socket.socket) -> None:  # pragma: no cover
    """Go on as a session (``mcp serve``): it lasts as long as its host keeps it, past
    any call's deadline.

    The child tells the server so over its pair, and the server stops treating it as
    a call: no deadline kill, no hold on the next spare or on going idle. Its own
    alarm is cancelled. It stays the process the client forwards the host's signals
    to, with no second fork on the way (the host waits for this session's first
    answer before its first model request, and a fork of the server's size costs
    several milliseconds). It ends with its session (the host closes its stdin), or
    as soon as its client is gone: a thread watches the connection for the client's
    hang-up, which the server no longer does.
    """
    signal.alarm(0)
    try:
        pair.sendall(b"S")
    except OSError:  # the server is gone: nothing watches this call any more
        pass
    pair.close()
    import threading

    def watch() -> None:
        poller = select.poll()
        poller.register(conn, select.POLLRDHUP)
        while True:
            for _, mask in poller.poll():
                if mask & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    os._exit(0)

    threading.Thread(target=watch, name="turn-hooks-session-client", daemon=True).start()


def _fresh_stdio() -> None:  # pragma: no cover - in the child
    """Standard streams over the client's descriptors, as a new interpreter makes them."""
    import io

    for name, fd, mode in (("stdin", 0, "rb"), ("stdout", 1, "wb"), ("stderr", 2, "wb")):
        old = getattr(sys, f"__{name}__")
        raw = io.FileIO(fd, mode, closefd=False)
        interactive = raw.isatty()
        buffered: Any = io.BufferedReader(raw) if mode == "rb" else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            buffered,
            encoding=old.encoding if old is not None else "utf-8",
            errors=old.errors if old is not None else "strict",
            line_buffering=interactive or name == "stderr",
            write_through=name == "stderr",
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _run(args: list[str]) -> int:  # pragma: no cover - in the child
    """``sys.exit(hosts.cli.command.main(args))`` and interpreter exit, as a cold process does."""
    import atexit

    from hosts.cli.command import main as cold

    try:
        status = _exit_status(cold(args))
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        status = 130
    except BaseException:
        sys.excepthook(*sys.exc_info())
        status = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # what interpreter exit does before atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            status = 120 if status == 0 else status  # as the interpreter reports it
    return status & 0xFF


def _exit_status(code: object) -> int:  # pragma: no cover - in the child
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1
