"""Where sidecars live and how their file names are made.

A sidecar root is ``<goal repository>/.local/turn-hooks``. Below it every path
component is a token from :func:`path_token` (or a fixed name), so no caller value
can introduce a separator, a ``..`` or an absolute path.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from turn_hooks.errors import SidecarPathError

SIDECAR_DIR = Path(".local") / "turn-hooks"
"""The sidecar root, relative to the Goal repository."""

_UNSAFE_RUN = re.compile(r"[^A-Za-z0-9._-]+")
_TOKEN_CHARS = 60


def path_token(value: str | None, fallback: str) -> str:
    """``T(v, fb)`` of identities.md §4: a readable, collision-safe file-name part.

    Runs of characters outside ``[A-Za-z0-9._-]`` become ``-``; the result is stripped
    of ``-``, replaced by ``fallback`` when empty, cut to 60 characters (no re-strip)
    and suffixed with ``-`` and the first 12 hex of SHA-256 of the original value.
    """
    original = value or ""
    readable = _UNSAFE_RUN.sub("-", original).strip("-") or fallback
    digest = hashlib.sha256(original.encode("utf-8")).hexdigest()[:12]
    return f"{readable[:_TOKEN_CHARS]}-{digest}"


def goal_agent_parts(directory: str, goal_id: str | None, agent_id: str | None) -> tuple[str, ...]:
    """``directory/T(goal)/T(agent)``: where one (Goal, Agent)'s sidecars of a kind live."""
    return directory, path_token(goal_id, "goal"), path_token(agent_id, "agent")


def sidecar_root(goal_repository: str | Path) -> Path:
    """The sidecar root of a Goal repository (absolute, not resolved through links)."""
    return Path(goal_repository).absolute() / SIDECAR_DIR


def tree_top(root: str | Path) -> Path:
    """The top of the private tree that holds ``root``: no component from it down may be a link.

    For a Goal's sidecar root (``<repo>/.local/turn-hooks``) that is ``<repo>/.local``:
    a linked ``.local`` would carry the whole tree out of the repository. Any other root
    (the hook log's state directory, say) is its own top, since what lies above it, such
    as a linked ``~/.local``, belongs to the user.
    """
    absolute = Path(root).absolute()
    if absolute.parts[-len(SIDECAR_DIR.parts) :] == SIDECAR_DIR.parts:
        return absolute.parent
    return absolute


def check_component(part: str) -> str:
    """Return ``part`` if it is one safe path component, else raise SidecarPathError."""
    if (
        not part
        or part in {".", ".."}
        or "/" in part
        or "\\" in part
        or "\0" in part
        or part.startswith(".")
    ):
        raise SidecarPathError(
            "a sidecar path component is empty, hidden or contains a separator",
            reason_code="sidecar_path_escape",
        )
    return part


def sidecar_path(root: str | Path, *parts: str) -> Path:
    """Join safe components below ``root``; refuse anything that could escape it."""
    if not parts:
        raise SidecarPathError("a sidecar path needs at least a file name")
    return Path(root).absolute().joinpath(*(check_component(part) for part in parts))


def lock_path(path: Path) -> Path:
    """The lock file beside a sidecar: ``<file>.lock``."""
    return path.with_name(path.name + ".lock")
