"""The scanner every public receipt must pass: no paths, scope refs, secrets or raw text."""

from __future__ import annotations

import json
import re
from typing import Any

_LOCAL_PATH = re.compile(
    r"(?<![:/A-Za-z0-9])/(users|home|volumes|private|tmp|var|etc|opt|srv|mnt|root|data|"
    r"workspace|workspaces)/[^\s`'\"<>]",
    re.IGNORECASE,
)
_SCOPE_REF = re.compile(r"viking://", re.IGNORECASE)
_SECRET = re.compile(
    r"(\bbearer\s+[a-z0-9._~+/=-]{16,}|\bgh[pousr]_[a-z0-9]{16}|\bsk-[a-z0-9]{10,}|"
    r"-----BEGIN [A-Z ]*PRIVATE KEY)",
    re.IGNORECASE,
)


def public_safety_violations(document: Any, *, raw_texts: tuple[str, ...] = ()) -> list[str]:
    """Every reason ``document`` is not public-safe (empty when it is)."""
    text = document if isinstance(document, str) else json.dumps(document, ensure_ascii=False)
    problems = []
    if _LOCAL_PATH.search(text):
        problems.append("local path")
    if _SCOPE_REF.search(text):
        problems.append("provider scope ref")
    if _SECRET.search(text):
        problems.append("secret")
    problems += [f"raw text {raw[:20]!r}" for raw in raw_texts if raw and raw in text]
    return problems
