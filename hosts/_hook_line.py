"""The command line an installer writes for one of our hook handlers.

Every installer (Codex's hooks.json, Claude Code's and Gemini's settings.json)
writes the same shape, so a hook of any host reads back the same way: this
interpreter, ``-m hosts._entry`` (the resident server first, the cold path
otherwise), the adapter and its verb, the binding, then the verb's own options.
"""

from __future__ import annotations

import json
import shlex
import sys

MODULE = "hosts._entry"


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
    """``python -m hosts._entry host ADAPTER VERB --goal-id ... [options]``, quoted."""
    parts = [sys.executable, "-m", MODULE, "host", *adapter, verb]
    parts += ["--goal-id", goal_id, "--agent-id", agent_id, "--registry", registry, *extra]
    if verb == "post-settlement" and validation_argv:
        parts += ["--validation-command-json", json.dumps(validation_argv)]
    if verb == "pre-turn" and not prompt_in_recall:
        parts.append("--no-prompt-in-recall")
    return shlex.join(parts)
