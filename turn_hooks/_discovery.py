"""Finding the ``turn_hooks`` entry points without importing ``importlib.metadata``.

The hook process starts on every Turn. ``importlib.metadata`` (with the ``email``
package it parses metadata with) costs tens of milliseconds to import and then reads
every distribution's metadata; the entry points of one group need neither. This module
reads ``entry_points.txt`` of the distributions on ``sys.path`` directly, about 2 ms
for a few dozen distributions, and remembers the answer in the process under a key of
``sys.path`` and the modification times of its directories, which change whenever a
distribution is installed, upgraded or removed. The resident hook server finds its
plugins once, so the calls it forks pay one ``stat`` per ``sys.path`` entry. Nothing
is written: a file cache would make every command, dry runs and refused input
included, write to the user's home.

The order and precedence match ``importlib.metadata``: distributions in ``sys.path``
order, the first distribution of a (normalised) name wins, and entry points keep their
order in the file.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from typing import NamedTuple

READ_LIMIT = 1 << 20
"""An ``entry_points.txt`` or ``METADATA`` larger than this is passed over, never read."""


class EntryPoint(NamedTuple):
    """One entry point of the group, with the distribution that declares it."""

    name: str
    value: str
    distribution: str
    version: str


def _path_key() -> str:
    parts = []
    for entry in sys.path:
        try:
            parts.append(f"{entry}\0{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}\0-")
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _parse_group(text: str, group: str) -> list[tuple[str, str]]:
    found, inside = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            inside = line[1:-1].strip() == group
        elif inside and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.split("[", 1)[0].strip()))
    return found


def _header(text: str, field: str) -> str:
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the body may be long
        key, _, value = line.partition(":")
        if key.strip().lower() == field:
            return value.strip()
    return ""


def _read_text(path: str, limit: int = READ_LIMIT) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        try:  # a FIFO or device would block or never end: regular files only
            data = os.read(fd, limit + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("utf-8", "replace")


def scan(group: str) -> list[EntryPoint]:
    """Read the group's entry points from every distribution on ``sys.path``."""
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for folder in names:
            if not folder.endswith((".dist-info", ".egg-info")):
                continue
            directory = os.path.join(entry or ".", folder)
            text = _read_text(os.path.join(directory, "entry_points.txt"))
            declared = _parse_group(text, group) if text and f"[{group}]" in text else []
            metadata = ""
            if declared:
                metadata = (
                    _read_text(os.path.join(directory, "METADATA"))
                    or _read_text(os.path.join(directory, "PKG-INFO"))
                    or ""
                )
            # The same identity importlib.metadata deduplicates by: the folder's stem
            # up to its first dash.
            stem = folder.rsplit(".", 1)[0].partition("-")[0]
            key = _normalise(stem)
            project = _header(metadata, "name") or stem
            if key in seen:
                continue
            seen.add(key)
            version = _header(metadata, "version")
            found.extend(EntryPoint(n, v, project, version) for n, v in declared)
    return found


_remembered: dict[str, list[EntryPoint]] = {}


def cache_key(group: str) -> str:
    """The key a remembered answer for ``group`` must carry to be used again."""
    return hashlib.sha256(f"{group}\0{_path_key()}".encode()).hexdigest()


def entry_points(group: str) -> list[EntryPoint]:
    """The group's entry points, remembered while ``sys.path`` has not changed."""
    key = cache_key(group)
    if key not in _remembered:
        _remembered.clear()  # one environment at a time: nothing grows without bound
        _remembered[key] = scan(group)
    return list(_remembered[key])
