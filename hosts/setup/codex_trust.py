"""Codex's trust entries for hooks.json handlers, kept in step with the handlers.

Codex records trust in ``config.toml`` as ``[hooks.state."<hooks.json>:<event>:<group>:<handler>"]``
with the handler's hash: the key is the handler's position, the hash its content.
A handler that moves (because one before it was removed) keeps its hash, so its
entry is moved to its new key, and the entry of a handler that is gone is dropped.
That is an edit of ``config.toml`` only (no hash is computed, no app-server runs),
which is why ``install codex --uninstall`` needs nothing but Codex's home.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from hosts.facts.codex_rpc import AppServer
from hosts.setup.settings_install import refuse_link
from sidecars import read_bounded
from turn_hooks import InvalidInputError

# The table header Codex writes for one entry: [hooks.state."<key>"].
_HEADER = re.compile(r'^\[\s*hooks\s*\.\s*state\s*\.\s*("(?:[^"\\]|\\.)*")\s*\]\s*(#.*)?$')


def event_key(event: str) -> str:
    """``UserPromptSubmit`` -> ``user_prompt_submit``, as Codex names it in keys."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def positions(document: dict[str, Any]) -> dict[int, tuple[str, int, int]]:
    """``id(handler)`` -> (event, group, handler) for every handler of a hooks.json."""
    hooks = document.get("hooks")
    found: dict[int, tuple[str, int, int]] = {}
    for event, groups in (hooks if isinstance(hooks, dict) else {}).items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                found[id(handler)] = (event_key(str(event)), g, h)
    return found


def _key(prefix: str | Path, at: tuple[str, int, int]) -> str:
    return f"{prefix}:{at[0]}:{at[1]}:{at[2]}"


def _split(key: str, source: Path) -> tuple[str, tuple[str, int, int]] | None:
    """(prefix, position) of a trust key of ``source``; ``None`` for another's key."""
    parts = key.rsplit(":", 3)
    if len(parts) != 4 or not (parts[2].isdigit() and parts[3].isdigit()):
        return None
    if os.path.abspath(parts[0]) != str(source) and Path(parts[0]).resolve() != source.resolve():
        return None
    return parts[0], (parts[1], int(parts[2]), int(parts[3]))


def read_state(codex_home: Path) -> tuple[str | None, dict[str, Any]]:
    """config.toml's text (``None`` when absent) and its ``[hooks.state]`` entries.

    Read through a link, as Codex reads it; only :func:`follow`, which writes it,
    refuses one.

    :raises InvalidInputError: the ``read_bounded`` refusals, ``config_toml_invalid``.
    """
    path = codex_home / "config.toml"
    if not os.path.lexists(path):
        return None, {}
    try:
        text = read_bounded(path, reason_prefix="config_toml", name="config.toml").decode()
        config = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError(
            "config.toml is not TOML; fix it first", reason_code="config_toml_invalid"
        ) from exc
    hooks = config.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    return text, state if isinstance(state, dict) else {}


def keys_of(codex_home: Path, document: dict[str, Any], handlers: list[Any]) -> list[str]:
    """The keys Codex trusts ``handlers`` (objects of ``document``) under."""
    source = (codex_home / "hooks.json").absolute()
    found = positions(document)
    return [_key(source, found[id(handler)]) for handler in handlers]


def follow(codex_home: Path, before: dict[str, Any], after: dict[str, Any]) -> int:
    """Move the trust entries of ``before``'s handlers to their keys in ``after``
    (the same handler objects), drop those of handlers ``after`` no longer has;
    return how many were dropped. Nothing is written when nothing changes.

    :raises InvalidInputError: ``config_toml_unrecognised`` when the entries are not
        in the form Codex writes, ``config_toml_symlink`` for a link that would have
        to be edited (nothing is written then), and :func:`read_state`'s.
    """
    text, state = read_state(codex_home)
    source = (codex_home / "hooks.json").absolute()
    old = {at: handler for handler, at in positions(before).items()}
    new = positions(after)
    renames: dict[str, str] = {}
    drops: set[str] = set()
    for key in state:
        split = _split(key, source)
        if split is None or split[1] not in old:
            continue
        target = new.get(old[split[1]])
        if target is None:
            drops.add(key)
        elif target != split[1]:
            renames[key] = _key(split[0], target)
    # An entry already at a key a moved handler lands on is stale: the move wins.
    drops |= {key for key in state if key in set(renames.values()) and key not in renames}
    if text is None or not (renames or drops):
        return 0
    path = codex_home / "config.toml"
    refuse_link(path, "config_toml", "config.toml")  # an edit would replace the link
    expected = {renames.get(k, k): v for k, v in state.items() if k not in drops}
    lines, dropping = [], False
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line.strip())
        if header or line.lstrip().startswith("["):
            table: str | None = json.loads(header.group(1)) if header else None
            dropping = table in drops
            if table in renames:
                line = f"[hooks.state.{json.dumps(renames[table])}]\n"
        if not dropping:
            lines.append(line)
    if not expected:
        # Codex wrote the bare [hooks.state] header (and maybe [hooks]) for our entries:
        # emptied by us, they are ours to take away, with the blank lines they brought.
        lines = _without_bare_tables(lines)
    edited = "".join(lines)
    try:
        check = tomllib.loads(edited)
    except tomllib.TOMLDecodeError:
        check = {}
    hooks = check.get("hooks", {})
    rest = {**check, "hooks": {**hooks, "state": None}}
    whole = tomllib.loads(text)
    if hooks.get("state", {}) != expected or rest != {
        **whole,
        "hooks": {**whole["hooks"], "state": None},
    }:
        raise InvalidInputError(
            "config.toml's [hooks.state] is not in the form Codex writes; "
            "edit the entries of turn-hooks' handlers out by hand",
            reason_code="config_toml_unrecognised",
        )
    if not edited.strip():
        path.unlink()  # it held only our trust entries: the file is ours to take away
        return len(drops)
    temp = path.with_name(path.name + ".turn-hooks.tmp")
    temp.write_text(edited, encoding="utf-8")
    os.chmod(temp, os.stat(path).st_mode & 0o7777)
    os.replace(temp, path)
    return len(drops)


_BARE = re.compile(r"^\[\s*hooks(\s*\.\s*state)?\s*\]\s*$")


def _without_bare_tables(lines: list[str]) -> list[str]:
    """``lines`` without a ``[hooks.state]`` or ``[hooks]`` header that holds no key.

    A header is bare when only blank lines follow it up to the next header or the
    end; it goes with those blank lines, and so does a blank line before it that
    would otherwise end the file. A header holding a key, or a comment, is the
    user's and stays.
    """
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        end = index + 1
        while end < len(lines) and not lines[end].strip():
            end += 1
        at_header = end == len(lines) or lines[end].lstrip().startswith("[")
        if _BARE.match(line.strip()) and at_header:
            index = end
            if index == len(lines):
                while kept and not kept[-1].strip():
                    kept.pop()
            continue
        kept.append(line)
        index += 1
    return kept


def trust_statuses(codex_home: Path, codex: str | None, cwd: Path) -> dict[str, str]:
    """The trust status of every handler of ``hooks.json``, by its key.

    With a ``codex`` binary these are what Codex itself computes (app-server
    ``hooks/list``: ``trusted``, ``modified``, ``untrusted``); without one, only
    whether an entry exists at the handler's key (``trusted`` or ``untrusted``).
    """
    if codex is not None:
        server = AppServer(codex, {**os.environ, "CODEX_HOME": str(codex_home)})
        try:
            server.request("initialize", {"clientInfo": {"name": "turn-hooks", "version": "0.1"}})
            server.notify("initialized")
            listed = server.request("hooks/list", {"cwds": [str(cwd)]})
        finally:
            server.close()
        source = (codex_home / "hooks.json").absolute()
        found = {}
        for entry in listed.get("data", []):
            for hook in entry.get("hooks", []):
                split = _split(str(hook.get("key")), source)
                if split is not None:  # keyed as keys_of keys it, however Codex spells the path
                    found[_key(source, split[1])] = hook.get("trustStatus", "unknown")
        return found
    source = (codex_home / "hooks.json").absolute()
    _, state = read_state(codex_home)
    splits = (_split(key, source) for key in state)
    return {_key(source, split[1]): "trusted" for split in splits if split is not None}
