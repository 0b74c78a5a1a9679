"""What identifies a conformance run, and the report as one pasteable Markdown section.

A maintainer pastes the report into an issue, so everything here is public-safe: the
command line keeps its words but every absolute or home path becomes ``.../<name>``,
and the host's own ``--version`` line is kept only when the scanner passes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance.public_safety import public_safety_violations
from conformance.scenarios import CATALOGUE, CATALOGUE_VERSION
from turn_hooks.errors import InvalidInputError

VERSION_TIMEOUT = 30
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.-]+)?")


def catalogue_digest() -> str:
    """A digest of what the catalogue is: ids, edges, kinds and what each proves."""
    entries = [s.describe() for s in CATALOGUE]
    text = json.dumps(entries, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _binary_error(message: str, reason_code: str) -> InvalidInputError:
    return InvalidInputError(message, reason_code=reason_code, field="binary")


def probe_binary(host: str, binary: str) -> dict[str, str]:
    """Check ``binary`` can run and ask it its version: ``{name, version, reports}``.

    :raises InvalidInputError: ``conformance_binary_not_found``,
        ``conformance_binary_not_executable`` or ``conformance_binary_version_failed``;
        the message names the file only by its last component.
    """
    path = Path(binary).expanduser()
    name = path.name or binary
    if not path.exists():
        raise _binary_error(f"--binary {name!r}: no such file", "conformance_binary_not_found")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise _binary_error(
            f"--binary {name!r}: not an executable file", "conformance_binary_not_executable"
        )
    try:
        probe = subprocess.run(
            [str(path), "--version"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _binary_error(
            f"--binary {name!r}: `--version` could not run ({type(exc).__name__})",
            "conformance_binary_version_failed",
        ) from None
    line = next((ln.strip() for ln in probe.stdout.splitlines() if ln.strip()), "")
    found = _VERSION.search(line)
    if probe.returncode != 0 or found is None:
        raise _binary_error(
            f"--binary {name!r}: `--version` exited {probe.returncode} without a version "
            f"number; is it the {host} binary?",
            "conformance_binary_version_failed",
        )
    said = re.sub(r"[()]", "", line.replace(found.group(0), "")).strip(" ,:-")
    reports = line[:120] if not public_safety_violations(line) else found.group(0)
    return {"name": said or host, "version": found.group(0), "reports": reports}


PATH_OPTIONS = ("--binary",)
"""Options whose value is always a path, so a relative one is cut too."""


def redact(argument: str, *, path: bool = False) -> str:
    """One command-line word with any absolute, home or ``./`` path cut to
    ``.../<last part>``; with ``path`` (the value of a path option) any word with a
    ``/``. Other words keep their slashes: ``turn/completed`` is an event name."""
    prefix, sep, value = argument.partition("=")
    if sep and prefix.startswith("--"):
        return f"{prefix}={redact(value, path=prefix in PATH_OPTIONS)}"
    if argument.startswith(("/", "~", "./", "../")) or (path and "/" in argument):
        return ".../" + Path(argument).name
    return argument


def command_line(arguments: list[str]) -> str:
    """The command as typed, paths redacted, program named ``turn-hooks``."""
    words = [
        redact(word, path=index > 0 and arguments[index - 1] in PATH_OPTIONS)
        for index, word in enumerate(arguments)
    ]
    return shlex.join(["turn-hooks", *words])


def identity(
    host: str,
    *,
    probed: dict[str, str] | None,
    provider: str,
    arguments: list[str],
    partial: bool,
) -> dict[str, Any]:
    """The fields that say which run a report came from."""
    import turn_hooks

    return {
        "turn_hooks_version": str(turn_hooks.__version__),
        "host": host,
        "host_name": probed["name"] if probed else None,
        "host_version": probed["version"] if probed else None,
        "host_reports": probed["reports"] if probed else None,
        "os": f"{platform.system()} {platform.release()} {platform.machine()}".strip(),
        "python": platform.python_version(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "provider": provider,
        "command_line": command_line(arguments),
        "catalogue_version": CATALOGUE_VERSION,
        "catalogue_digest": catalogue_digest(),
        "partial": partial,
    }


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def to_markdown(report: dict[str, Any], exit_code: int) -> str:
    """The report as one section: a heading, identity, an edge table, a scenario table."""
    who = report["identity"]
    [entry] = report["hosts"]
    version = f" {who['host_version']}" if who["host_version"] else ""
    partial = " (partial run)" if report["partial"] else ""
    lines = [f"## turn-hooks conformance: {who['host']}{version}{partial}", ""]
    host = who["host"] + (f" — `{who['host_reports']}`" if who["host_reports"] else "")
    without = ", ".join(entry["without_events"]) or "none"
    result = (
        f"{entry['passed']} passed, {entry['failed']} failed, {entry['skipped']} skipped "
        f"(exit {exit_code})"
    )
    lines += _table(
        ["field", "value"],
        [
            ["turn-hooks", who["turn_hooks_version"]],
            ["host", host],
            ["verification", entry["verification"]],
            ["os", f"{who['os']}, Python {who['python']}"],
            ["date", who["date"]],
            ["provider", who["provider"]],
            ["command", f"`{who['command_line']}`"],
            ["catalogue", f"{who['catalogue_version']} ({who['catalogue_digest'][:19]})"],
            ["scope", "partial: only the named scenarios ran" if report["partial"] else "full"],
            ["events left out", without],
            ["result", result],
        ],
    )
    lines += _table(
        ["edge", "coverage", "verification", "delivery scenarios passed", "why"],
        [
            [e["edge"], e["value"], e["verification"], e["delivery_passed"], e["reason"]]
            for e in report["edges"]
        ],
    )
    lines += _table(
        ["#", "scenario", "kind", "edges", "result", "observed / reason", "s"],
        [
            [
                str(n),
                r["scenario"],
                r["kind"],
                ", ".join(r["edges"]),
                r["result"],
                r["reason"],
                r.get("seconds"),
            ]
            for n, r in enumerate(report["scenarios"], 1)
        ],
    )
    return "\n".join(lines).rstrip() + "\n"
