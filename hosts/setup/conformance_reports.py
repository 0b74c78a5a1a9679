"""The latest conformance report per host, kept in the state directory.

``turn-hooks conformance run`` saves the report it prints as
``conformance/<host>.json`` in the state directory of the hook log
(``$TURN_HOOKS_STATE_DIR``, else ``$XDG_STATE_HOME/turn-hooks``): a sidecar, so 0600
in 0700 directories, written under the lock beside it and replaced atomically. There
is one file per host and the rule is the simplest honest one: **the latest report is
the run that finished last**, full or partial. A partial run (``--scenario``) claims
only what its own scenarios proved, so replacing a full run with it lowers what the
pointer says, never raises it, and its ``partial`` flag is shown wherever it is.
``--no-save`` keeps a trial run out of it.

The command line hands this module to the commands that read it (``conformance
report``, ``experiment-status``, ``status``) through the parsed arguments, as it
hands them the other host views: a capability never imports a host.

:func:`summaries` is what a status shows per host: the edges, the date, the partial
flag and the report's identity. Every value in it is re-checked against the shape a
run writes (words, counts, a date, version numbers), so a file edited by hand can
make a summary say ``null`` but never carry a path or prose into a public status.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from sidecars import SidecarStore
from turn_hooks import InvalidInputError, SidecarError

REPORTS_DIR = "conformance"
REPORT_SCHEMA = "turn_hooks_host_coverage_v0"
LOCK_TIMEOUT = 5.0
SHOW_COMMAND = "turn-hooks conformance report"
_HOST = re.compile(r"[a-z][a-z0-9-]{0,39}")
_WORD = re.compile(r"[a-z][a-z0-9_]{0,59}")
_EVENT = re.compile(r"[A-Za-z][A-Za-z0-9/_-]{0,59}")
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,59}")


def _store() -> SidecarStore:
    from hosts.settlement.hook_log import log_root

    return SidecarStore(log_root(), lock_timeout=LOCK_TIMEOUT)


def _path(store: SidecarStore, host: str) -> Path:
    if not _HOST.fullmatch(host):
        raise InvalidInputError(
            f"no conformance host is called {host!r}", reason_code="conformance_host_unknown"
        )
    return store.path(REPORTS_DIR, f"{host}.json")


def prepare(host: str) -> None:
    """Check, before a run, that its report can be saved: the state directory is
    private, no link or FIFO stands where the file or its lock goes, the lock is free.

    A run takes up to a minute; a report that could not be kept is better refused
    before it starts than after.

    :raises SidecarError: the sidecar's own reason code (exit 2, nothing run).
    """
    store = _store()
    with store.lock(_path(store, host)):
        pass


def save(report: dict[str, Any]) -> None:
    """Replace the latest report of the report's host with ``report``."""
    store = _store()
    store.write(_path(store, str(report["identity"]["host"])), report)


def digest(report: dict[str, Any]) -> str:
    """What identifies one saved report whatever its formatting: SHA-256 of its
    canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _valid(host: str, document: dict[str, Any]) -> bool:
    identity = document.get("identity")
    entries = document.get("hosts")
    return (
        document.get("schema_version") == REPORT_SCHEMA
        and isinstance(identity, dict)
        and identity.get("host") == host
        and isinstance(entries, list)
        and len(entries) == 1
        and isinstance(entries[0], dict)
    )


def _read(store: SidecarStore, host: str, path: Path) -> dict[str, Any]:
    document = store.read(path)
    if document is None:
        raise InvalidInputError(
            f"no conformance report is saved for host {host!r}: run "
            f"`turn-hooks conformance run --host {host}` first",
            reason_code="conformance_report_missing",
            field="host",
        )
    if not _valid(host, document):
        raise InvalidInputError(
            f"the saved conformance report for host {host!r} is not a "
            f"{REPORT_SCHEMA} report of that host; run `turn-hooks conformance run "
            f"--host {host}` again to replace it",
            reason_code="conformance_report_invalid",
            field="host",
        )
    return document


def _saved(store: SidecarStore) -> list[tuple[str, Path]]:
    return [
        (path.stem, path)
        for path in store.iter_documents(REPORTS_DIR)
        if _HOST.fullmatch(path.stem)
    ]


def latest(host: str | None = None) -> list[dict[str, Any]]:
    """The latest saved report of ``host``, or of every host that has one (by name).

    :raises InvalidInputError: ``conformance_report_missing`` (nothing saved; the
        message names the command that saves one) or ``conformance_report_invalid``.
    :raises SidecarError: the file or its directory is unreadable, widened or a link.
    """
    store = _store()
    if host is not None:
        return [_read(store, host, _path(store, host))]
    found = [_read(store, name, path) for name, path in _saved(store)]
    if not found:
        raise InvalidInputError(
            "no conformance report is saved on this machine: run "
            "`turn-hooks conformance run --host HOST` first",
            reason_code="conformance_report_missing",
        )
    return found


def _match(pattern: re.Pattern[str], value: Any) -> str | None:
    return value if isinstance(value, str) and pattern.fullmatch(value) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _blank(host: str | None, reason_code: str) -> dict[str, Any]:
    return {
        "host": host,
        "automatic_recall": None,
        "automatic_ingest": None,
        "verification": None,
        "partial": None,
        "ok": None,
        "passed": None,
        "failed": None,
        "skipped": None,
        "without_events": [],
        "date": None,
        "turn_hooks_version": None,
        "host_version": None,
        "catalogue_version": None,
        "report_digest": None,
        "reason_code": reason_code,
    }


def summary(host: str, report: dict[str, Any]) -> dict[str, Any]:
    """One host's line: edges, counts, partial flag, date and identity, all re-checked."""
    [entry] = report["hosts"]
    who = report["identity"]
    events = entry.get("without_events")
    return {
        "host": host,
        "automatic_recall": _match(_WORD, entry.get("automatic_recall")),
        "automatic_ingest": _match(_WORD, entry.get("automatic_ingest")),
        "verification": _match(_WORD, entry.get("verification")),
        "partial": _flag(report.get("partial")),
        "ok": _flag(report.get("ok")),
        "passed": _count(entry.get("passed")),
        "failed": _count(entry.get("failed")),
        "skipped": _count(entry.get("skipped")),
        "without_events": [e for e in events if _match(_EVENT, e)]
        if isinstance(events, list)
        else [],
        "date": _match(_DATE, who.get("date")),
        "turn_hooks_version": _match(_VERSION, who.get("turn_hooks_version")),
        "host_version": _match(_VERSION, who.get("host_version")),
        "catalogue_version": _match(_VERSION, who.get("catalogue_version")),
        "report_digest": digest(report),
        "reason_code": None,
    }


def summaries() -> list[dict[str, Any]]:
    """One line per host with a saved report (by host name); empty when none is saved.

    A status is for looking, so a report that cannot be read is a line with its
    reason code, and a state directory that cannot be listed is one line for no host.
    """
    store = _store()
    try:
        saved = _saved(store)
    except SidecarError as exc:
        return [_blank(None, exc.reason_code)]
    lines = []
    for host, path in saved:
        try:
            lines.append(summary(host, _read(store, host, path)))
        except (SidecarError, InvalidInputError) as exc:
            lines.append(_blank(host, exc.reason_code))
    return lines
