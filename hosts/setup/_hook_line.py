"""The command line an installer writes for one of our hook handlers.

Every installer (Codex's hooks.json, Claude Code's and Gemini's settings.json)
writes the same shape, so a hook of any host reads back the same way: this
interpreter running :mod:`hosts._entry` (the resident server first, the cold path
otherwise), the adapter and its verb, the binding, then the verb's own options.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys

MODULE = "hosts._entry"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The directory that holds the ``hosts`` package (site-packages, or a checkout)."""
_MODULES = (MODULE, "hosts.cli")
"""What ``-m`` named in the hook commands of earlier versions; still recognised."""
_LOADER = "import sys; sys.path[0] = {root}; from hosts._entry import run; run()"
_LOADED = re.compile(r"import sys; sys\.path\[0\] = (.+); from hosts\._entry import run; run\(\)")


def loader() -> str:
    """The ``-c`` program of :func:`entry_argv`: the package root first on the path,
    then :func:`hosts._entry.run`."""
    return _LOADER.format(root=json.dumps(ROOT))  # a Python string literal, in "quotes"


def entry_argv() -> list[str]:
    """How a hook command starts: ``python -S -c "<loader>"``.

    ``-S`` defers ``site`` (its ``.pth`` files and site-packages are a third of a
    bare start) and ``-c`` spares ``runpy``, which ``-m`` imports: about 15 ms less on
    every hook call. :mod:`hosts._entry` imports ``site`` itself before a cold run.
    Not a script path: Python exits 2 when a script is missing (a package removed
    with its hooks still installed), which Codex, Claude Code and Gemini read as
    "block this prompt"; a failed import exits 1, as ``-m`` did. Where there is no
    resident server to call (not POSIX), ``-m`` it stays.
    """
    if os.name == "posix":
        return [sys.executable, "-S", "-c", loader()]
    return [sys.executable, "-m", MODULE]


def is_entry(parts: list[str]) -> bool:
    """Whether ``parts``, a hook command's words up to ``host``, start one of ours:
    :func:`entry_argv`'s form (for any package root), ``-m hosts._entry`` or ``-m
    hosts.cli`` (written by earlier versions), or the ``turn-hooks`` console script."""
    if len(parts) == 1:
        return os.path.basename(parts[0]) == "turn-hooks"
    if len(parts) == 3:
        return parts[1] == "-m" and parts[2] in _MODULES
    return (
        len(parts) == 4 and parts[1:3] == ["-S", "-c"] and _LOADED.fullmatch(parts[3]) is not None
    )


def package_present(parts: list[str]) -> bool:
    """Whether the package a hook command's loader names is still there (``True`` for
    the forms that name none): hooks left behind by a removed package fail every
    call, and ``status`` and ``doctor`` should say so before a Turn does."""
    found = _LOADED.fullmatch(parts[3]) if len(parts) > 3 else None
    if found is None:
        return True
    try:
        root = json.loads(found.group(1))
    except ValueError:
        return False
    return isinstance(root, str) and os.path.isfile(os.path.join(root, "hosts", "_entry.py"))


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
    """``python -S -c "<loader>" host ADAPTER VERB --goal-id ... [options]``, quoted."""
    parts = [*entry_argv(), "host", *adapter, verb]
    parts += ["--goal-id", goal_id, "--agent-id", agent_id, "--registry", registry, *extra]
    if verb == "post-settlement" and validation_argv:
        parts += ["--validation-command-json", json.dumps(validation_argv)]
    if verb == "pre-turn" and not prompt_in_recall:
        parts.append("--no-prompt-in-recall")
    return shlex.join(parts)
