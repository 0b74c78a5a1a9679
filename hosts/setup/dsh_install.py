"""`turn-hooks install dsh`: a DSH patch layer that mounts the bundled Cordis plugin.

DSH composes profiles from patch layers (YAML lists; JSON is valid YAML), and
`dsh --patch FILE` adds one. The file this writes inserts our plugin by its
absolute ``file://`` URL and bakes in this interpreter, so no npm package is needed.
Writing it twice changes nothing; `--uninstall` removes it only if it is ours and
serves the Goal named (or any, with ``--all``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hosts.setup._hook_line import entry_argv
from hosts.setup.settings_install import refuse_link
from sidecars import read_bounded
from turn_hooks import loads_bounded

PLUGIN_ID = "turn-hooks"
PLUGIN_FILE = Path(__file__).parent.parent / "dsh" / "turn_hooks_dsh.mjs"


def patch_layer(
    *,
    registry: str,
    goal_id: str,
    agent_id: str,
    validation_argv: list[str] | None,
    prompt_in_recall: bool = True,
) -> list[dict[str, Any]]:
    """The patch list that inserts and configures our plugin."""
    config: dict[str, Any] = {
        # hosts._entry: the resident server first, the cold command line otherwise.
        "command": entry_argv(),
        "goalId": goal_id,
        "agentId": agent_id,
        "registry": registry,
        "timeoutMs": 30000,
    }
    if validation_argv:
        config["validationCommand"] = validation_argv
    if not prompt_in_recall:
        config["noPromptInRecall"] = True
    entry = {"id": PLUGIN_ID, "name": PLUGIN_FILE.resolve().as_uri(), "config": config}
    return [{"insert": [entry]}]


def _read(path: Path) -> bytes | None:
    # Bounded and non-blocking: a FIFO or /dev/zero at the patch path is a typed
    # refusal (``patch_file_not_regular``, ``patch_file_too_large``), not a hang; a
    # link is refused too (``patch_file_symlink``).
    refuse_link(path, "patch_file", "the patch file")
    raw = read_bounded(path, reason_prefix="patch_file", missing=b"", name="the patch file")
    return raw if os.path.lexists(path) else None


def _is_ours(raw: bytes) -> bool:
    try:
        document = loads_bounded(raw)
        return document[0]["insert"][0]["id"] == PLUGIN_ID  # type: ignore[no-any-return]
    except (ValueError, LookupError, TypeError):
        return False


def installed_config(patch_file: Path) -> dict[str, Any] | None:
    """Our plugin's config in the patch layer (for ``doctor``); ``None`` without one.

    :raises InvalidInputError: the file is a FIFO, a device or too large.
    :raises ValueError: the file exists but is not ours.
    """
    current = _read(patch_file)
    if current is None:
        return None
    if not _is_ours(current):
        raise ValueError("the patch file exists but was not written by turn-hooks")
    config = loads_bounded(current)[0]["insert"][0].get("config")
    valid = isinstance(config, dict) and isinstance(config.get("command"), list)
    return config if valid else None


def install(
    *, patch_file: Path, uninstall: bool = False, goal_id: str | None = None, **binding: Any
) -> dict[str, Any]:
    """Write (or remove) the patch layer; a public-safe report of what changed.

    Uninstalling removes the layer when it serves ``goal_id`` (any Goal's with
    ``None``).
    """
    current = _read(patch_file)
    if current is not None and not _is_ours(current):
        raise ValueError("the patch file exists but was not written by turn-hooks")
    report: dict[str, Any] = {}
    if uninstall:
        config = installed_config(patch_file) if current is not None else None
        served = str((config or {}).get("goalId", ""))
        changed = current is not None and goal_id in {None, served}
        if changed:
            patch_file.unlink()
        report["goals_removed"] = [served] if changed else []
        report["files_removed"] = [patch_file.name] if changed else []
    else:
        text = json.dumps(patch_layer(goal_id=str(goal_id), **binding), indent=2) + "\n"
        changed = current != text.encode("utf-8")
        if changed:
            patch_file.parent.mkdir(parents=True, exist_ok=True)
            temp = patch_file.with_name(patch_file.name + ".turn-hooks.tmp")
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, patch_file)
    return {
        "ok": True,
        "schema_version": "turn_hooks_install_v0",
        "host": "dsh",
        "action": "uninstall" if uninstall else "install",
        "changed": changed,
        "events": [] if uninstall else ["agent/pre-step", "session/event turn/end"],
        "usage": "dsh --patch <patch file> ...",
        **report,
    }
