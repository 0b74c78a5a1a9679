"""Codex's own limit on the context one hook adds, as the user set it for our handler.

Codex keeps a hook's ``additionalContext`` whole while it is at most four UTF-8 bytes
per token of the handler's ``additionalContextLimit`` (2,500 tokens, so 10,000 bytes,
when the handler sets none); longer text it replaces with a head-and-tail preview and
a note naming a temporary file. Measured on 0.147.0 and 0.171.0, which agree to the
byte (benchmarks/RESULTS.md). The limit is a field of the handler in ``hooks.json``,
not a key of ``config.toml``: a user who lowers it on our ``UserPromptSubmit``
handler lowers our bound with it, so Codex still never cuts what we render.

Read on each Codex PreTurn from ``$CODEX_HOME/hooks.json`` (``~/.codex`` without the
variable), where ``install codex`` puts the handler. Anything unreadable (no file, a
FIFO, bad JSON, no handler of ours, a limit that is no positive integer) reads as
Codex's default: the limit only ever lowers our bound.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
from pathlib import Path
from typing import Any

from sidecars import read_bounded
from turn_hooks.errors import InvalidInputError

DEFAULT_TOKENS = 2500
"""Codex's ``additionalContextLimit`` for a handler that sets none."""
BYTES_PER_TOKEN = 4
"""Codex counts a token as four UTF-8 bytes when it bounds hook context."""


def codex_home() -> Path:
    """Codex's home as Codex finds it: ``$CODEX_HOME``, else ``~/.codex``."""
    named = os.environ.get("CODEX_HOME")
    return Path(named) if named else Path.home() / ".codex"


def _is_our_pre_turn(handler: Any, goal_id: str, agent_id: str | None) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str) or "codex-cli" not in command:
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    pairs = set(itertools.pairwise(words))
    return (
        ("codex-cli", "pre-turn") in pairs
        and ("--goal-id", goal_id) in pairs
        and (agent_id is None or ("--agent-id", agent_id) in pairs)
    )


def _read_hooks(path: Path) -> Any:
    # Non-blocking and bounded, and read through a link as Codex reads it: a FIFO or
    # a huge file at hooks.json costs nothing but the default.
    try:
        return json.loads(read_bounded(path, reason_prefix="hooks_json", name="hooks.json"))
    except (InvalidInputError, ValueError):
        return None


def handler_tokens(goal_id: str, agent_id: str | None) -> int | None:
    """The ``additionalContextLimit`` set on our ``UserPromptSubmit`` handler of this
    binding in Codex's ``hooks.json``; ``None`` when none is set (or none is readable)."""
    document = _read_hooks(codex_home() / "hooks.json")
    hooks = document.get("hooks") if isinstance(document, dict) else None
    groups = hooks.get("UserPromptSubmit") if isinstance(hooks, dict) else None
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            if _is_our_pre_turn(handler, goal_id, agent_id):
                limit = handler.get("additionalContextLimit")
                valid = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
                return limit if valid else None
    return None


def context_bytes(goal_id: str, agent_id: str | None) -> int:
    """The most UTF-8 bytes of context Codex keeps whole from our handler."""
    tokens = handler_tokens(goal_id, agent_id)
    return BYTES_PER_TOKEN * min(tokens or DEFAULT_TOKENS, DEFAULT_TOKENS * 1000)
