"""The hooks' local reason log: why a hook added, or settled, nothing.

A hook always exits 0 and prints nothing useful when it fails, so this log is the only
trace a person can follow. An entry names the host, the hook event, where the reason
came from (the adapter, or the plugin result's key) and a reason code. It never holds
prompt or message text, paths or exception messages: only codes this package minted.

The log is one sidecar (0600, locked, atomically replaced) that keeps the latest
``KEEP_ENTRIES`` entries, under ``$TURN_HOOKS_STATE_DIR`` or the XDG state directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sidecars import SidecarStore
from turn_hooks import PreTurnOutcome

LOG_SCHEMA = "turn_hooks_hook_log_v0"
LOG_FILE = "hook-log.json"
KEEP_ENTRIES = 200
# Short: a busy log is skipped rather than waited for on the Turn's critical path.
LOCK_TIMEOUT = 0.5
# Reason codes and sources are identifiers; anything else is not written verbatim.
_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,80}")


def log_root() -> Path:
    """The log's directory: ``$TURN_HOOKS_STATE_DIR``, else ``$XDG_STATE_HOME/turn-hooks``,
    else ``~/.local/state/turn-hooks``."""
    explicit = os.environ.get("TURN_HOOKS_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "turn-hooks"


def reasons_in(results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, reason_code)`` for every result object that carries a reason code."""
    return [
        (key, value["reason_code"])
        for key, value in results.items()
        if isinstance(value, Mapping) and isinstance(value.get("reason_code"), str)
    ]


def _safe(code: str) -> str:
    return code if _CODE.fullmatch(code) else "unrecognised"


def record(host: str, event: str, reasons: Iterable[tuple[str, str]]) -> None:
    """Append one entry per ``(source, reason_code)``; logging never breaks a hook."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    entries = [
        {
            "observed_at": now,
            "host": _safe(host),
            "event": _safe(event),
            "source": _safe(source),
            "reason_code": _safe(code),
        }
        for source, code in reasons
    ]
    if not entries:
        return

    def append(document: dict[str, Any] | None) -> dict[str, Any]:
        kept = [*(document or {}).get("entries", []), *entries][-KEEP_ENTRIES:]
        return {"schema_version": LOG_SCHEMA, "entries": kept}

    try:
        store = SidecarStore(log_root(), lock_timeout=LOCK_TIMEOUT)
        store.update(store.path(LOG_FILE), append)
    except Exception:  # no home, a full disk or a widened log must not cost the Turn
        return


def record_pre_turn(host: str, outcome: PreTurnOutcome) -> None:
    """Log the reason codes of a PreTurn: contribution results and isolated plugins."""
    failures = [(failure.plugin, failure.reason_code) for failure in outcome.failures]
    record(host, "pre_turn", [*reasons_in(outcome.payload), *failures])
