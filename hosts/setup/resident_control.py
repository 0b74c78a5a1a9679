"""``turn-hooks resident status`` and ``stop``: what a person can see of the resident servers.

A resident hook server (:mod:`hosts._resident`) outlives the Turn that started it,
for up to its idle time, so a user who finds it in ``ps`` can ask what it is and
stop it. Each server leaves a pid file beside its socket in the socket directory
(:func:`hosts._warm.runtime_path`); these read them and nothing else. The receipt
names each server by its file name (``th-<digest>``) and pid, never a path, with the
memory it holds (its resident set, ``VmRSS``); the totals count every server of this
user, of other HOMEs and interpreters too (:func:`hosts._warm.user_servers`), which
is what the bound on their number (``max_servers``) counts.

A server stops on SIGTERM, removing its socket and pid file; a call in flight
finishes in its own child. The next hook starts a new server on demand, so stopping
one costs the Turn after it one cold call, never a hook.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from datetime import UTC, datetime
from typing import Any

from hosts import _warm

RESIDENT_SCHEMA = "turn_hooks_resident_v0"
STOP_SECONDS = 5.0
"""How long ``stop`` waits for a server to exit after SIGTERM before it sends SIGKILL."""


def _directory() -> tuple[str, str]:
    """(the socket directory's path, its state: ``private``, ``absent`` or ``unsafe``)."""
    path = _warm.runtime_path()
    try:
        _warm.check_dir(path)
    except FileNotFoundError:
        return path, "absent"
    except (_warm.Unsafe, OSError):
        return path, "unsafe"
    return path, "private"


def _servers(directory: str) -> list[dict[str, Any]]:
    current = _warm.paths(directory, _warm.package_key())[2]
    found = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:  # removed since it was checked
        names = []
    for name in names:
        if not (name.startswith("th-") and name.endswith(".pid")):
            continue
        path = os.path.join(directory, name)
        try:
            status = os.lstat(path)
            if not stat.S_ISREG(status.st_mode):
                continue  # a link or a FIFO is no server's: never followed, never waited on
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
            try:
                pid = int(os.read(fd, 16))
            finally:
                os.close(fd)
        except (OSError, ValueError):  # gone meanwhile, half written, or not a number
            continue
        running = _warm.is_server(pid)
        found.append(
            {
                "name": name.removesuffix(".pid"),
                "pid": pid,
                "running": running,
                "rss_bytes": _warm.rss_bytes(pid) if running else 0,
                "this_install": path == current,
                "started_at": datetime.fromtimestamp(status.st_mtime, UTC).isoformat(
                    timespec="seconds"
                ),
            }
        )
    return found


def status() -> dict[str, Any]:
    """This user's resident servers, of every install (``resident status``)."""
    directory, state = _directory()
    servers = _servers(directory) if state == "private" else []
    idle = _warm.seconds(_warm.IDLE_VARIABLE, _warm.IDLE_SECONDS)
    # Every server of this user, of other HOMEs and interpreters too: what the bound
    # counts, and the memory they hold together.
    everyone = [pid for _, pid in _warm.user_servers()]
    return {
        "ok": True,
        "schema_version": RESIDENT_SCHEMA,
        "enabled": os.environ.get(_warm.SWITCH) != "0",
        "socket_directory": state,
        "idle_seconds": idle,
        "short_idle_seconds": min(
            idle, _warm.seconds(_warm.SHORT_IDLE_VARIABLE, _warm.SHORT_IDLE_SECONDS)
        ),
        "max_servers": _warm.count(_warm.MAX_SERVERS_VARIABLE, _warm.MAX_SERVERS),
        "servers": servers,
        "running_count": sum(1 for server in servers if server["running"]),
        "memory_bytes": sum(server["rss_bytes"] for server in servers),
        "user_running_count": len(everyone),
        "user_memory_bytes": sum(_warm.rss_bytes(pid) for pid in everyone),
    }


def stop(timeout: float = STOP_SECONDS) -> dict[str, Any]:
    """Stop every running resident server of this user (``resident stop``).

    SIGTERM first; a server still running after ``timeout`` seconds gets SIGKILL.
    Servers of every install are stopped, an older one's too: that is what a user
    asking to stop them means.
    """
    document = status()
    stopped = []
    running = [server for server in document["servers"] if server["running"]]
    for server in running:
        try:
            os.kill(server["pid"], signal.SIGTERM)
        except OSError:
            continue
    deadline = time.monotonic() + timeout
    for server in running:
        while _warm.is_server(server["pid"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        killed = False
        if _warm.is_server(server["pid"]):
            try:
                os.kill(server["pid"], signal.SIGKILL)
                killed = True
            except OSError:
                pass
        stopped.append({"name": server["name"], "pid": server["pid"], "killed": killed})
    return {**status(), "stopped": stopped, "stopped_count": len(stopped)}
