"""What a secret looks like: one pattern for every place that keeps text out of view.

Reward memory refuses public text that matches it; a validator's output tail, which
is private, has each matching word replaced, so a token a failing test printed does
not sit in a sidecar or scroll past on a shared screen.
"""

from __future__ import annotations

import re

_VALUE = r"[^\s`'\"<>]"
SECRET = re.compile(
    "|".join(
        (
            r"\bbearer\s+[a-z0-9._~+/=-]{16,}",
            rf"\b(?:(?:access|api|secret)[_-]?key|ak|sk)[\"']?\s*[:=]\s*[\"']?{_VALUE}",
            rf"(?<![a-z0-9_])(?:ak|sk)[-_=:]{_VALUE}{{10,}}",
            r"\bgh[pousr]_[a-z0-9]{16}",
            r"\bgithub_pat_[a-z0-9_]{20}",
            r"\b(?:akia|asia)[a-z0-9]{16}",
            r"\bxox[baprs]-[a-z0-9-]{10}",
            r"\baiza[a-z0-9_-]{20}",
            r"\b(?:sk|rk)_(?:live|test)_[a-z0-9]{12}",
            r"\bnpm_[a-z0-9]{20}",
            r"\bpypi-[a-z0-9_-]{20}",
            r"\beyj[a-z0-9_-]+\.[a-z0-9_-]+\.[a-z0-9_-]+",
            r"\b(?:(?:access|refresh)[_-]?token|password|secret|token)[\"']?\s*[:=]\s*[\"']?"
            rf"{_VALUE}{{12,}}",
            r"-----BEGIN [A-Z ]*PRIVATE KEY",
        )
    ),
    re.IGNORECASE,
)
"""Secret-shaped values: bearer tokens, provider keys, ``password=...``, private keys."""

_SECRET_WORDS = re.compile(rf"[^\s]*(?:{SECRET.pattern})[^\s]*", re.IGNORECASE)
REDACTED = "[redacted]"


def redact_secrets(text: str) -> str:
    """``text`` with every word a secret touches replaced by ``[redacted]``; lines,
    spacing and everything else kept as they were."""
    return _SECRET_WORDS.sub(REDACTED, text)
