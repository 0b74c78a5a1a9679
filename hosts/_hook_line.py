"""The command line an installer writes for one of our hook handlers.

Every installer (Codex's hooks.json, Claude Code's and Gemini's settings.json)
writes the same shape, so a hook of any host reads back the same way: this
interpreter running :mod:`hosts._entry` (the resident server first, the cold path
otherwise), the adapter and its verb, the binding, then the verb's own options.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

MODULE = "hosts._entry"
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_entry.py")
_MODULES = (MODULE, "hosts.cli")
"""What ``-m`` named in the hook commands of earlier versions; still recognised."""


def entry_argv() -> list[str]:
    """How a hook command starts: ``python -S <root>/hosts/_entry.py``.

    A script under ``-S`` starts about 15 ms sooner than ``python -m hosts._entry``
    (no ``site``, no ``runpy``) on every hook call; :mod:`hosts._entry` imports
    ``site`` itself before a cold run. Where there is no resident server to call
    (not POSIX), ``-m`` it stays.
    """
    if os.name == "posix":
        return [sys.executable, "-S", SCRIPT]
    return [sys.executable, "-m", MODULE]


def is_entry(parts: list[str]) -> bool:
    """Whether ``parts``, a hook command's words up to ``host``, start one of ours:
    :func:`entry_argv`'s form, ``-m hosts._entry`` or ``-m hosts.cli`` (written by
    earlier versions), or the ``turn-hooks`` console script."""
    if len(parts) == 1:
        return os.path.basename(parts[0]) == "turn-hooks"
    if len(parts) != 3:
        return False
    if parts[1] == "-m":
        return parts[2] in _MODULES
    return parts[1] == "-S" and parts[2].replace(os.sep, "/").endswith("/hosts/_entry.py")


def handler_words(command: object) -> tuple[list[str], int] | None:
    """A command line of ours split into words, with the index of ``host``;
    ``None`` for anything else (another tool's hook, unparsable quoting)."""
    if not isinstance(command, str):
        return None
    try:
        parts = shlex.split(command)
    except ValueError:
        return None
    if "host" not in parts:
        return None
    at = parts.index("host")
    return (parts, at) if is_entry(parts[:at]) and len(parts) > at + 1 else None


def hook_line(
    adapter: list[str],
    verb: str,
    *,
    registry: str,
    goal_id: str,
    agent_id: str,
    validation_argv: list[str] | None,
    prompt_in_recall: bool,
    extra: tuple[str, ...] = (),
) -> str:
    """``python -S .../hosts/_entry.py host ADAPTER VERB --goal-id ... [options]``, quoted."""
    parts = [*entry_argv(), "host", *adapter, verb]
    parts += ["--goal-id", goal_id, "--agent-id", agent_id, "--registry", registry, *extra]
    if verb == "post-settlement" and validation_argv:
        parts += ["--validation-command-json", json.dumps(validation_argv)]
    if verb == "pre-turn" and not prompt_in_recall:
        parts.append("--no-prompt-in-recall")
    return shlex.join(parts)
