"""The hooks' local reason log: why a hook added, or settled, nothing.

A hook always exits 0 and prints nothing useful when it fails, so this log is the only
trace a person can follow. An entry names the host, the hook event, where the reason
came from (the adapter, or the plugin result's key) and a reason code. It never holds
prompt or message text, paths or exception messages: only codes this package minted,
and, for a result value a plugin's reader refused (:func:`record_refusals`), a
``detail`` naming the field and the rule (``experience.future_behavior.action: must
be text of at most 500 characters``), in the plugin's words, never the value's.

The log keeps the latest ``KEEP_ENTRIES`` entries, under ``$TURN_HOOKS_STATE_DIR`` or
the XDG state directory, in sidecars (0600, locked, atomically replaced): the newest
``PAGE_ENTRIES`` in ``hook-log.json``, older ones in full pages of that size in
``hook-log.pages/``. Pages because almost every hook appends to it: a hook rewrites
only the current page, a few kilobytes, where one document of every kept entry cost
each hook about 7 ms to read, re-encode and replace once the log was full.

When an entry cannot be written, the hook says so on stderr, once per process and
with a reason code only (never a path or a message), then goes on: hosts ignore a
hook's stderr when it exits 0, and a person running the hook by hand sees why the log
stays empty. The commonest cause is a state directory open to other users (say 0755
or 0777, from an explicit ``$TURN_HOOKS_STATE_DIR``): it is reported as
``hook_log_state_dir_widened`` and left as it is. The sidecar rules refuse it, like
any widened sidecar directory, and narrowing a directory the user chose is theirs to
do (``chmod 700``); one this package creates is 0700 from the start. Other causes
carry the sidecar's own reason code (``sidecar_not_regular`` for a FIFO in its
place, ...) or ``hook_log_unavailable``. A resident server's child appends its
entries once its host has the answer (:mod:`hosts.settlement.after_reply`), when its stderr
is gone to ``/dev/null``. It first checks that the log passes the checks a write
makes (its directories, kinds and modes), and writes at once if not, or if its
stderr is a terminal, so the line still reaches stderr as from a cold process;
only a failure no check sees beforehand (a full disk) goes unsaid there.

A busy log (many hooks at once) loses nothing: a hook that cannot take the log's lock
in time writes its entries to a file of their own in ``hook-log.spill/``, which
needs no shared lock, and the next hook that holds the log folds them in.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hosts.settlement import after_reply
from sidecars import SidecarStore
from turn_hooks import (
    SidecarError,
    SidecarLockTimeout,
    SidecarPermissionError,
)

if TYPE_CHECKING:
    from turn_hooks import PreTurnOutcome

LOG_SCHEMA = "turn_hooks_hook_log_v0"
LOG_FILE = "hook-log.json"
SPILL_DIR = "hook-log.spill"
SPILL_SCHEMA = "turn_hooks_hook_log_spill_v0"
PAGES_DIR = "hook-log.pages"
KEEP_ENTRIES = 200
PAGE_ENTRIES = 40
"""Entries in one page; ``KEEP_ENTRIES`` is a whole number of pages."""
# Short: a busy log is skipped rather than waited for on the Turn's critical path.
LOCK_TIMEOUT = 0.5
# Reason codes and sources are identifiers; anything else is not written verbatim.
_CODE = re.compile(r"[A-Za-z0-9_.:-]{1,80}")
# Whether this process already said the log is off: one line per process is enough.
_reported: list[str] = []


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


_HOST_NAMES = {
    "codex_cli": "codex-cli",
    "codex_app": "codex-app",
    "claude_code": "claude-code",
    "generic_cli": "generic",
}
"""A Turn's host id (``TurnContext.host``) spelt as the command line names the host,
so one host has one spelling in the log whichever part of a hook logged the entry."""


def record(
    host: str, event: str, reasons: Iterable[tuple[str, str]], *, detail: str | None = None
) -> None:
    """Append one entry per ``(source, reason_code)``; logging never breaks a hook.

    ``detail`` (a refusal's field and rule, :func:`record_refusals`) goes with each."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    entries: list[dict[str, str]] = [
        {
            "observed_at": now,
            "host": _safe(_HOST_NAMES.get(host, host)),
            "event": _safe(event),
            "source": _safe(source),
            "reason_code": _safe(code),
            **({"detail": detail} if detail else {}),
        }
        for source, code in reasons
    ]
    if not entries:
        return
    # A resident child writes the log after the host has its answer, unless its stderr
    # is a terminal (a person running the hook) or the log would be refused: then it
    # writes now, so the line saying why reaches stderr as from a cold process.
    later = after_reply.accepting() and not _on_terminal() and _writable()
    if later and after_reply.defer(functools.partial(_append, entries)):
        return
    _append(entries)


_DETAIL = re.compile(r"[ -~]{1,400}")
"""A refusal's detail: the field path and the rule (``turn_hooks.read_results``)."""


def record_refusals(host: str, notes: Iterable[Mapping[str, str]]) -> None:
    """Append one ``read_result`` entry per note of :func:`turn_hooks.read_results`:
    its reason code and, for a refusal, its ``detail``."""
    for note in notes:
        detail = note.get("detail")
        extra = {"detail": detail} if isinstance(detail, str) and _DETAIL.fullmatch(detail) else {}
        record(host, "read_result", [("reader", str(note.get("reason_code")))], **extra)


def _writable() -> bool:
    """Whether the log passes, now, the checks its write makes before writing."""
    try:
        store = SidecarStore(log_root(), lock_timeout=LOCK_TIMEOUT)
        store.check_writable(store.path(LOG_FILE))
    except Exception:  # any refusal: the write now says which
        return False
    return True


def _on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def _append(entries: list[dict[str, str]]) -> None:
    try:
        store = SidecarStore(log_root(), lock_timeout=LOCK_TIMEOUT)
        current = store.path(LOG_FILE)
        try:
            with store.transaction(current) as log:
                folded: list[Path] = []
                spilled = _spilled(store, folded)
                kept = [*(log.read() or {}).get("entries", []), *spilled, *entries]
                _turn_pages(store, kept)
                log.write({"schema_version": LOG_SCHEMA, "entries": kept})
        except SidecarLockTimeout:
            name = f"{time.time_ns():020d}-{os.getpid()}.json"
            store.write(
                store.path(SPILL_DIR, name), {"schema_version": SPILL_SCHEMA, "entries": entries}
            )
            return
        for path in folded:  # only once the log holds them: a kill here repeats, not loses
            store.delete(path, drop_lock=True)
    except SidecarPermissionError as exc:
        # The store names the directory it refused; the state directory itself widened
        # is the case worth its own code (module docstring).
        widened = exc.reason_code == "sidecar_permission_widened" and Path(exc.path) == store.root
        _report("hook_log_state_dir_widened" if widened else exc.reason_code)
    except SidecarError as exc:
        _report(exc.reason_code)
    except Exception:  # no home or a full disk must not cost the Turn either
        _report("hook_log_unavailable")


def _turn_pages(store: SidecarStore, kept: list[Any]) -> None:
    """Move all but the newest (at most ``PAGE_ENTRIES``) of ``kept`` into full pages,
    then drop the oldest pages past ``KEEP_ENTRIES``; ``kept`` is left holding the
    current page's entries.

    Called under the current page's lock, before it is replaced: a kill between a
    page's write and the current page's repeats those entries, never loses them.
    """
    if len(kept) <= PAGE_ENTRIES:
        return
    stamp = time.time_ns()
    full = (len(kept) - 1) // PAGE_ENTRIES
    for index in range(full):
        page = kept[index * PAGE_ENTRIES : (index + 1) * PAGE_ENTRIES]
        name = f"{stamp:020d}-{os.getpid()}-{index:04d}.json"
        store.write(store.path(PAGES_DIR, name), {"schema_version": LOG_SCHEMA, "entries": page})
    del kept[: full * PAGE_ENTRIES]
    older = pages(store)
    for path in older[: max(0, len(older) - (KEEP_ENTRIES // PAGE_ENTRIES - 1))]:
        store.delete(path, drop_lock=True)


def pages(store: SidecarStore) -> list[Path]:
    """The full pages of older entries, oldest first (their names sort by time)."""
    return list(store.iter_documents(PAGES_DIR))


def _spilled(store: SidecarStore, folded: list[Path]) -> list[Any]:
    """The entries busy hooks left in ``hook-log.spill/``, oldest first; their paths go
    to ``folded`` for removal once the log holds them."""
    entries: list[Any] = []
    for path in store.iter_documents(SPILL_DIR):
        try:
            document = store.read(path)
        except SidecarError:
            continue  # not ours to fold: left for a person
        spilled = (document or {}).get("entries")
        if isinstance(spilled, list):  # only entries this module could have written
            entries.extend(entry for entry in spilled if _well_formed(entry))
        folded.append(path)
    return entries


def _well_formed(entry: Any) -> bool:
    fields = ("observed_at", "host", "event", "source", "reason_code")
    detail = entry.get("detail") if isinstance(entry, dict) else None
    return (
        isinstance(entry, dict)
        and sorted(set(entry) - {"detail"}) == sorted(fields)
        and all(isinstance(entry[key], str) and len(entry[key]) <= 80 for key in fields)
        and all(_CODE.fullmatch(entry[key]) for key in fields[1:])
        and (detail is None or (isinstance(detail, str) and bool(_DETAIL.fullmatch(detail))))
    )


def _report(reason_code: str) -> None:
    """One stderr line per process naming why the log was not written (a code only)."""
    if _reported:
        return
    _reported.append(reason_code)
    try:
        sys.stderr.write(f"turn-hooks: hook log not written (reason_code={_safe(reason_code)})\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed or broken stderr: nothing more to say
        return


def record_pre_turn(host: str, outcome: PreTurnOutcome) -> None:
    """Log the reason codes of a PreTurn: contribution results and isolated plugins."""
    failures = [(failure.plugin, failure.reason_code) for failure in outcome.failures]
    record(host, "pre_turn", [*reasons_in(outcome.payload), *failures])
