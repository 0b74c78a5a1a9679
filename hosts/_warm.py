"""The client side of the resident hook server, and what client and server share.

A host starts a new process for every hook call; most of its time goes to imports.
A resident server (:mod:`hosts._resident`) keeps those modules loaded and forks a
child per call, which runs the ordinary command in the caller's own streams,
directory, environment and umask. This module is what the short-lived hook process
runs first, so it imports only what a bare interpreter has loaded (``posix``, not
``os``: under ``-S`` nothing imports ``os``, whose import costs about 4 ms) and one C
module of its own, ``_socket`` (``_signal``, ``fcntl`` and ``pwd`` on rarer paths).

The exchange over the Unix socket, one connection per call::

    client -> REQUEST            argv, environment, umask, the key
    child  -> "A" pid            accepted: the child is ready to run it
    client -> "G" + fds          go, with stdin, stdout, stderr and cwd (SCM_RIGHTS);
                                 from here the client no longer runs it itself
    child  -> "X" exit-status    done; the client exits with that status

Until the client sends "G", nothing has run, so every fault before it (no server,
a stale socket, a busy or broken server, a refusal) falls back to the cold path in
the same process with the same outputs. After "G" the call is the child's: the
client waits up to the deadline, then kills the child and exits 0, since a hook
never blocks the Turn.
"""

# No ``from __future__ import annotations``: the hook client imports only what a bare
# interpreter has loaded (the __future__ module is not among it).
import _socket
import posix
import sys

MAGIC = b"turn-hooks-resident-1"
SWITCH = "TURN_HOOKS_RESIDENT"
DIR_VARIABLE = "TURN_HOOKS_RESIDENT_DIR"
IDLE_VARIABLE = "TURN_HOOKS_RESIDENT_IDLE_SECONDS"
DEADLINE_VARIABLE = "TURN_HOOKS_RESIDENT_DEADLINE_SECONDS"
# An hour: a developer's Turns come minutes to tens of minutes apart, and the Turn
# after the server has gone runs cold (about 0.15 s more) while a new server starts
# beside the host (about 0.25 s of CPU). An idle server holds about 35 MB.
IDLE_SECONDS = 3600.0
# A server that has served at most one call (a scratch HOME's, a CI job's, a Turn's
# host that never came back) waits two minutes, not the hour: a user's next Turn
# inside that time is what its warmth is for, and such servers once piled up by the
# hundred (35 MB each) under tools that run hooks with temporary homes.
SHORT_IDLE_VARIABLE = "TURN_HOOKS_RESIDENT_SHORT_IDLE_SECONDS"
SHORT_IDLE_SECONDS = 120.0
# At most this many servers of one user run at once, over every HOME, socket
# directory and interpreter: one per install a person really uses (a venv or two, a
# pipx install, a checkout) fits, and 4 idle servers hold about 140 MB. A server that
# would be one more exits before it loads anything, and those calls run cold.
MAX_SERVERS_VARIABLE = "TURN_HOOKS_RESIDENT_MAX_SERVERS"
MAX_SERVERS = 4
# Hosts give a hook 30 s (hooks.json, DSH's timeoutMs); the margin lets a call the
# host still waits for finish, and bounds one the host has stopped waiting for.
DEADLINE_SECONDS = 35.0
# How long a client waits for "A" before it runs the call itself. The server only
# accepts and forks, so this is a fork's time on a loaded machine, not a hook's.
ACCEPT_SECONDS = 0.5
MAX_REQUEST = 4 * 1024 * 1024
# A Unix socket's path holds at most 107 bytes (Linux's sun_path, less its NUL).
MAX_SOCKET_PATH = 107
# How long a start that brought no server up keeps calls from starting another.
RETRY_SECONDS = 60.0
# Variables the interpreter reads at start-up (encodings, hash seed, warnings, path):
# a server started under other values would not behave as a fresh process would,
# so they are part of the key and such a client gets its own server.
_STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG")
# Variables that decide what a server loads before it forks (a plugin's
# ``warm_resident``: the semantic encoder, ``TURN_HOOKS_SEMANTIC``). A server started
# under another value serves its children without it, so each call would load it
# cold (0.25-0.40 s a PreTurn): they are part of the key, and turning the setting on
# or off gets a server of its own while the old one idles out.
_WARM_VARIABLES = (b"TURN_HOOKS_SEMANTIC",)


def _environ() -> dict[bytes, bytes]:
    """This process's environment as bytes: ``os.environb`` once ``os`` is loaded (it
    follows changes), else ``posix.environ``, the environment the process started with,
    which is all a hook client ever has."""
    loaded = sys.modules.get("os")
    return loaded.environb if loaded is not None else posix.environ


def _getenv(name: str) -> str:
    """The variable's value, ``""`` when unset (as ``os.environ.get(name, "")``)."""
    value = _environ().get(_fsencode(name))
    return "" if value is None else value.decode(sys.getfilesystemencoding(), "surrogateescape")


def _fsencode(text: str) -> bytes:
    """``os.fsencode`` of a str."""
    return text.encode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())


def _join(first: str, *rest: str) -> str:
    """``os.path.join``."""
    path = first
    for part in rest:
        if part.startswith("/") or not path:
            path = part
        else:
            path = path + part if path.endswith("/") else path + "/" + part
    return path


def _dirname(path: str) -> str:
    """``os.path.dirname``."""
    head = path[: path.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def _abspath(path: str) -> str:
    """``os.path.abspath``: made absolute from the working directory, then normalised."""
    if not path.startswith("/"):
        path = posix.getcwd() + "/" + path
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/" + "/".join(parts)


def _home() -> str:
    """``os.path.expanduser("~")``: ``$HOME``, else the password database's entry."""
    home = _getenv("HOME")
    if not home:
        import pwd

        home = pwd.getpwuid(posix.getuid()).pw_dir
    return home.rstrip("/") or "/"


def _is_file(path: str) -> bool:
    try:
        return (posix.stat(path).st_mode & 0o170000) == 0o100000
    except (OSError, ValueError):
        return False


class Unsafe(Exception):
    """The socket directory is not a 0700 directory of this user: do not use it."""


def session(argv: list[str]) -> bool:
    """Whether ``argv`` (the command's words, no program) is a session-long call:
    ``mcp serve``, the stdio tool server a host keeps for a whole session."""
    return argv[:2] == ["mcp", "serve"]


def served(argv: list[str]) -> bool:
    """Whether the resident server may run ``argv`` (the command's words): the host
    hooks (``host ...``) and the hosts' MCP server (:func:`session`)."""
    return argv[:1] == ["host"] or session(argv)


def enabled(argv: list[str], *, site_deferred: bool = False) -> bool:
    """Whether this call may go to the resident server: the calls a host makes
    (:func:`served`), switch on.

    Debug runs stay cold, so a traceback shows the frames a cold run shows, and so
    does an interpreter started with options that change how it runs code (``-I``,
    ``-E``, ``-s``, ``-S``, ``-O``, ``-X dev``, ``-b``): the server runs with none.
    ``site_deferred``: the hook launcher's own ``-S`` (:mod:`hosts._entry`), which
    imports ``site`` before any cold run, so the process runs as a normal one would.
    """
    flags = sys.flags
    return (
        served(argv)
        and not (flags.isolated or flags.ignore_environment or flags.no_user_site)
        and not (flags.no_site and not site_deferred)
        and not (flags.optimize or flags.dev_mode or flags.bytes_warning)
        and _getenv(SWITCH) != "0"
        and _getenv("TURN_HOOKS_DEBUG") != "1"
        and hasattr(_socket, "SO_PEERCRED")
        and hasattr(_socket, "SCM_RIGHTS")
        and hasattr(posix, "O_PATH")
    )


def seconds(variable: str, default: float) -> float:
    """A positive number of seconds from the environment, else ``default``."""
    try:
        value = float(_getenv(variable))
    except ValueError:
        return default
    return value if 0 < value < 1e6 else default


def _runtime() -> tuple[str, list[str]]:
    """The socket directory's path, and the parents :func:`runtime_dir` makes first."""
    path = _getenv(DIR_VARIABLE)
    if path:  # the server runs in "/": a relative directory would be another one there
        return _abspath(path), []
    runtime = _getenv("XDG_RUNTIME_DIR")
    if runtime.startswith("/"):
        return _join(runtime, "turn-hooks"), []
    cache = _join(_home(), ".cache")
    return _join(cache, "turn-hooks", "run"), [cache, _join(cache, "turn-hooks")]


def runtime_path() -> str:
    """The socket directory's path, as :func:`runtime_dir` names it; nothing is made."""
    return _runtime()[0]


def runtime_dir() -> str:
    """The socket directory: ``$TURN_HOOKS_RESIDENT_DIR``, else
    ``$XDG_RUNTIME_DIR/turn-hooks``, else ``~/.cache/turn-hooks/run``; created 0700.

    Raises :class:`Unsafe` unless it is a real directory owned by this user that no
    one else can enter: a socket there can only be this user's.
    """
    path, parents = _runtime()
    for parent in parents:
        try:
            posix.mkdir(parent, 0o700)
        except FileExistsError:
            pass
    try:
        posix.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_dir(path)
    return path


def check_dir(path: str) -> None:
    """Raise :class:`Unsafe` unless ``path`` is a directory (not a symlink) owned by
    this user, with no access for group or others."""
    status = posix.lstat(path)
    if (
        (status.st_mode & 0o170000) != 0o040000  # a directory, and not a symlink to one
        or status.st_uid != posix.getuid()
        or status.st_mode & 0o077
    ):
        raise Unsafe(path)


def package_key() -> bytes:
    """What a server must share with its clients: interpreter, start-up environment,
    the settings it warms up under (:data:`_WARM_VARIABLES`) and the installed
    distribution (its dist-info and this file, by identity).

    Reinstalling, upgrading or re-pointing an editable install replaces those files,
    so the key changes: new clients find no server under the old name, and the old
    server, which checks its key, exits.
    """
    parts = [MAGIC, _fsencode(sys.executable), sys.version.encode()]
    parts += [
        key + b"=" + value
        for key, value in sorted(_environ().items())
        if key.startswith(tuple(p.encode() for p in _STARTUP_PREFIXES)) or key in _WARM_VARIABLES
    ]
    parts.append(_identity(__file__))
    for entry in site_directories():
        try:
            names = sorted(n for n in posix.listdir(entry) if n.startswith("turn_hooks-"))
        except OSError:
            continue
        for name in names:
            info = _join(entry, name)
            parts += [_identity(info), _identity(_join(info, "RECORD"))]
        if names:
            break
    return b"\0".join(parts)


def site_directories() -> list[str]:
    """Where this package's dist-info can be: beside the package (an ordinary
    install), else the interpreter's own site-packages (an editable one).

    Worked out from this file and the interpreter alone, never from ``sys.path``: a
    hook client started with ``-S`` (:mod:`hosts._entry`) has no site-packages on its
    path, and it must compute the very key its server, started normally, computes.
    Like ``site``, a ``pyvenv.cfg`` beside the interpreter or one level up marks a
    virtual environment; without ``site``, ``sys.prefix`` names the base installation.
    """
    root = package_root()
    bin_dir = _dirname(sys.executable)
    prefix = sys.base_prefix
    for candidate in (bin_dir, _dirname(bin_dir)):
        if _is_file(_join(candidate, "pyvenv.cfg")):
            prefix = candidate
            break
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return [root, _join(prefix, "lib", version, "site-packages")]


def package_root() -> str:
    """The directory that holds the ``hosts`` package."""
    return _dirname(_dirname(_abspath(__file__)))


def _identity(path: str) -> bytes:
    try:
        status = posix.stat(path)
    except OSError:
        return _fsencode(path) + b":absent"
    identity = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
    return _fsencode(path) + b":" + repr(identity).encode()


def digest(key: bytes) -> str:
    """A short name for a key, for the socket, lock and pid file names."""
    # Not a cryptographic hash, and no module to import for one: the name only spreads
    # keys over files, and the server and each child compare the whole key.
    number = int.from_bytes(key, "big")
    return f"{number % 0xFFFFFFFFFFFFFFC5:016x}"


def paths(directory: str, key: bytes) -> tuple[str, str, str]:
    """(socket, lock, pid file) of the server for ``key``."""
    base = _join(directory, "th-" + digest(key))
    return base + ".sock", base + ".lock", base + ".pid"


def encode_request(key: bytes, argv: list[str], umask: int) -> bytes:
    """The request: length, then NUL-separated fields (a real argv or environment
    cannot hold a NUL): magic, key (hex), umask, argc, argv (with argv[0]), environment."""
    fields = [MAGIC, key.hex().encode(), b"%d" % umask, b"%d" % len(argv)]
    fields += [_fsencode(arg) for arg in argv]
    fields += [k + b"=" + v for k, v in _environ().items()]
    body = b"\0".join(fields)
    return len(body).to_bytes(4, "big") + body


def _fd_bytes(fds: list[int]) -> bytes:
    return b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)


def _read(sock: _socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def call(argv: list[str]) -> int | None:
    """Run ``argv`` (``argv[0]`` is the program) on the resident server.

    Returns the exit status, or ``None`` when the caller must run it cold: nothing
    of it has run then. A missing server is started for the calls after this one.
    """
    try:
        directory = runtime_dir()
    except Unsafe:
        _note("resident_dir_unsafe")
        return None
    except OSError:  # no home, a read-only one: nowhere to put a socket
        return None
    key = package_key()
    socket_path, lock_path, pid_path = paths(directory, key)
    if len(_fsencode(socket_path)) > MAX_SOCKET_PATH:
        return None  # no server could bind it, so none is started
    try:
        status = posix.lstat(socket_path)
    except FileNotFoundError:
        start_server(directory, key, lock_path, pid_path)
        return None
    if (status.st_mode & 0o170000) != 0o140000:  # not a socket: leave it, run cold
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        return _exchange(sock, key, argv, directory, (socket_path, lock_path, pid_path))
    finally:
        sock.close()


def _exchange(
    sock: _socket.socket,
    key: bytes,
    argv: list[str],
    directory: str,
    files: tuple[str, str, str],
) -> int | None:
    socket_path, lock_path, pid_path = files
    sock.settimeout(ACCEPT_SECONDS)
    try:
        sock.connect(socket_path)
    except (ConnectionRefusedError, FileNotFoundError):
        # A socket no server listens on: the server died. A new one replaces it.
        start_server(directory, key, lock_path, pid_path)
        return None
    except OSError:  # busy (a full backlog) or any other fault: cold
        return None
    try:
        umask = posix.umask(0o077)
        posix.umask(umask)
        request = encode_request(key, argv, umask)
        if len(request) > MAX_REQUEST:
            return None
        sock.sendall(request)
        reply = _read(sock, 5)
    except TimeoutError:
        _stop_silent_server(pid_path)
        return None
    except OSError:
        return None
    if len(reply) != 5 or reply[:1] != b"A":
        return None  # refused (another version), or a broken server: cold
    child = int.from_bytes(reply[1:], "big")
    fds = [0, 1, 2]
    try:
        for fd in fds:
            posix.fstat(fd)  # a closed standard stream stays the cold path's case
        cwd = posix.open(".", posix.O_PATH | posix.O_DIRECTORY | posix.O_CLOEXEC)
    except OSError:
        return None
    try:
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _fd_bytes([*fds, cwd]))]
        sock.sendmsg([b"G"], rights)
    except OSError:
        return None  # the child waits for "G" and runs nothing without it
    finally:
        posix.close(cwd)
    return _wait(sock, child, session=session(argv[1:]))


def _stop_silent_server(pid_path: str) -> None:
    """Kill a server that accepted nothing in time (stopped, or wedged), so the next
    call starts a fresh one instead of waiting on it every Turn. Its children run on:
    each reports to its own client."""
    try:
        with open(pid_path, "rb") as handle:
            pid = int(handle.read(16))
    except (OSError, ValueError):
        return
    if is_server(pid):  # the pid file may be stale and the pid reused
        try:
            posix.kill(pid, 9)
        except OSError:
            pass


def is_server(pid: int) -> bool:
    """Whether ``pid`` is a resident server of this user: a pid file may be stale, and
    its pid reused by another process (another user's, even)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
        owner = posix.stat(f"/proc/{pid}").st_uid
    except OSError:
        return False
    return b"hosts._resident" in command and owner == posix.getuid()


# The resident server's own ``-c`` program (see :func:`start_server`): what names a
# process as one, its forked children (which share its command line) aside.
_SERVER_PROGRAM = b"from hosts._resident import main"


def user_servers() -> list[tuple[int, int]]:
    """``(start time, pid)`` of every live resident server of this user, oldest first,
    of any HOME, socket directory, interpreter or install (``/proc``, not pid files,
    which live in each HOME's own directory).

    A server's forked children share its command line and are left out while it
    lives; a child finishing its call's work after its server exited counts as one
    more server until it ends, which errs towards fewer servers, never more.
    """
    uid = posix.getuid()
    found: dict[int, tuple[int, int]] = {}
    try:
        names = posix.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            if posix.stat("/proc/" + name).st_uid != uid:
                continue
            with open("/proc/" + name + "/cmdline", "rb") as handle:
                if _SERVER_PROGRAM not in handle.read():
                    continue
            with open("/proc/" + name + "/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
            if fields[0] != b"Z":  # a zombie has exited
                found[int(name)] = (int(fields[1]), int(fields[19]))  # parent, start time
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
    return sorted((start, pid) for pid, (parent, start) in found.items() if parent not in found)


def rss_bytes(pid: int) -> int:
    """The resident memory of ``pid`` (``VmRSS``), 0 when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def count(variable: str, default: int) -> int:
    """A whole number of at least 1 from the environment (a fraction is cut), else
    ``default``."""
    value = int(seconds(variable, float(default)))
    return value if value >= 1 else default


def _wait(sock: _socket.socket, child: int, *, session: bool = False) -> int:
    # The C module: signal.py imports enum, a cost every warm call would pay.
    import _signal  # type: ignore[import-not-found]  # no stubs for the C module

    received: list[int] = []

    def forward(signum: int, frame: object) -> None:
        # The host's signal is for the process it started; the call now runs in the
        # child, so the child gets it, and this process ends as the host asked.
        received.append(signum)
        try:
            posix.kill(child, signum)
        except OSError:
            pass

    for signum in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(signum, forward)
    # A session ends when the host closes its stdin: it has no deadline of its own.
    sock.settimeout(None if session else seconds(DEADLINE_VARIABLE, DEADLINE_SECONDS))
    try:
        reply = _read(sock, 5)
    except OSError:  # the deadline passed: the Turn goes on without this call
        try:
            posix.kill(child, _signal.SIGKILL)
        except OSError:
            pass
        _note("resident_timeout")
        return 0
    if len(reply) == 5 and reply[:1] == b"X":
        return int.from_bytes(reply[1:], "big", signed=True)
    if received:
        _signal.signal(received[0], _signal.SIG_DFL)
        posix.kill(posix.getpid(), received[0])
    _note("resident_child_lost")
    return 0


def start_server(directory: str, key: bytes, lock_path: str, pid_path: str) -> None:
    """Start a detached server for ``key`` unless one holds the lock already.

    A start leaves its time on the lock file; a server that came up writes its pid
    file after that. While the last start is recent and brought no server up (an
    interpreter that cannot import the package, say), calls do not start another:
    each would cost a second of CPU on every Turn for nothing.
    """
    import fcntl
    import time

    try:
        started = posix.stat(lock_path).st_mtime
    except OSError:
        started = 0.0
    try:
        came_up = posix.stat(pid_path).st_mtime >= started
    except OSError:
        came_up = False
    if not came_up and time.time() - started < RETRY_SECONDS:
        return
    try:
        lock = posix.open(
            lock_path, posix.O_RDWR | posix.O_CREAT | posix.O_NOFOLLOW | posix.O_CLOEXEC, 0o600
        )
    except OSError:
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        posix.utime(lock)
    except OSError:  # a live server, or one starting, holds it
        posix.close(lock)
        return
    posix.close(lock)  # the server takes the lock itself; a second one started exits
    root = package_root()
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from hosts._resident import main; main(sys.argv[2:])"
    )
    argv = [sys.executable, "-P", "-c", program, root, directory, digest(key)]
    pid = posix.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child only
        try:
            posix.setsid()
            if posix.fork() == 0:
                null = posix.open("/dev/null", posix.O_RDWR)
                for fd in (0, 1, 2):
                    posix.dup2(null, fd)
                posix.chdir("/")
                posix.execv(sys.executable, argv)
        finally:
            posix._exit(0)
    posix.waitpid(pid, 0)


# Why the client does not log most faults: an absent or busy server is ordinary, and
# the cold path that follows says what the call did. These few mean the server
# misbehaved or the directory is unsafe, which a person should be able to find.
_notes: list[str] = []


def _note(reason_code: str) -> None:
    _notes.append(reason_code)


def has_notes() -> bool:
    """Whether this process noted a fault that :func:`flush_notes` would log."""
    return bool(_notes)


def flush_notes(argv: list[str]) -> None:
    """Write the faults noted in this process to the hook log (it imports the log)."""
    if not _notes:
        return
    from hosts.settlement.hook_log import record

    if session(argv[1:]):
        host, event = "mcp", "serve"
    else:
        host = argv[2] if len(argv) > 2 else "unknown"
        event = argv[3] if len(argv) > 3 else "unknown"
    record(host, event.replace("-", "_"), [("resident", code) for code in _notes])
    _notes.clear()
