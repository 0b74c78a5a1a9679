"""Finding and stopping resident hook servers that tests started (hosts._resident)."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

# Short, because a Unix socket path holds at most 107 bytes; private to this session.
BASE = Path(tempfile.mkdtemp(prefix="thr-", dir="/tmp"))


def servers(under: Path = BASE) -> list[int]:
    """Pids of live resident servers whose socket directory is below ``under``."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state, parent = (entry / "stat").read_text().rpartition(")")[2].split()[:2]
        except OSError:
            continue
        if state == "Z":  # exited, waiting for its parent: not running
            continue
        program = b" ".join(argv)
        if b"hosts._resident" in program and any(
            arg.startswith(os.fsencode(under)) for arg in argv
        ):
            found[int(entry.name)] = int(parent)
    # A server's forked children (one per call) share its command line.
    return sorted(pid for pid, parent in found.items() if parent not in found)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(predicate, seconds: float = 30.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true; a bound on waiting, not a timing assertion."""
    limit = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > limit:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def stop(pids: list[int], seconds: float = 15.0) -> list[int]:
    """SIGTERM each, wait, SIGKILL what is left; returns the pids that needed SIGKILL."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    limit = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < limit:
        time.sleep(0.02)
    stubborn = [pid for pid in pids if alive(pid)]
    for pid in stubborn:
        os.kill(pid, signal.SIGKILL)
    return stubborn


def children_of(pid: int) -> list[int]:
    """Pids of the live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            state, parent = (entry / "stat").read_text().rpartition(")")[2].split()[:2]
        except (OSError, ValueError):
            continue
        if entry.name.isdigit() and state != "Z" and int(parent) == pid:
            found.append(int(entry.name))
    return sorted(found)


def processes() -> list[int]:
    """Pids of every live process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                found.append(int(entry.name))
    return found
