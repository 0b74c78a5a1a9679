"""Every error this package raises, rooted at :class:`TurnHooksError`.

Each error carries a stable ``reason_code`` (a snake_case string that receipts and
JSON error objects expose) and never carries raw memory text, secrets or absolute
paths in its public form: :meth:`TurnHooksError.to_public` is what the CLI prints.

::

    TurnHooksError
    ├── PluginContractError            a plugin broke the hook contract (.plugin, .hook_id)
    │   ├── RegistrationError          missing or invalid ``registrations``
    │   └── ContributionError          a pre_turn result broke a contribution rule
    ├── InvalidInputError (ValueError) bad input from a caller or a host (.field)
    ├── SidecarError                   a JSON sidecar on disk (.path, never made public)
    │   ├── SidecarLockTimeout (TimeoutError)
    │   ├── SidecarCorrupt (ValueError)       unreadable, truncated, not a JSON object, or
    │   │                                     not a regular file (``sidecar_not_regular``)
    │   ├── SidecarPermissionError (PermissionError)  mode widened, wrong owner, symlink
    │   ├── SidecarPathError (ValueError)     escapes the root or crosses a symlink
    │   └── SidecarWriteError (OSError)       the atomic write, or a directory for it, failed
    └── ProviderError                  a memory provider failed (.status_code)
        ├── ProviderUnavailable        transport errors, 5xx, 429 after retries; an
        │                              embedded store that is corrupt, linked or widened
        └── ProviderRejected           the provider refused the request (4xx)
"""

from __future__ import annotations

from typing import Any


class TurnHooksError(Exception):
    """Root of every error raised by turn-hooks."""

    reason_code: str = "turn_hooks_error"

    def __init__(self, message: str, *, reason_code: str | None = None) -> None:
        super().__init__(message)
        if reason_code is not None:
            self.reason_code = reason_code

    @property
    def message(self) -> str:
        """The human-readable message, written to be public-safe."""
        return str(self.args[0])

    def to_public(self) -> dict[str, Any]:
        """The JSON error object the CLI prints: no paths, no raw content."""
        return {
            "ok": False,
            "schema_version": "turn_hooks_error_v0",
            "error": type(self).__name__,
            "reason_code": self.reason_code,
            "message": self.message,
        }


class PluginContractError(TurnHooksError):
    """A plugin broke the hook contract; the dispatcher isolates it."""

    reason_code = "plugin_contract_violated"

    def __init__(
        self,
        message: str,
        *,
        reason_code: str | None = None,
        plugin: str | None = None,
        hook_id: str | None = None,
    ) -> None:
        super().__init__(message, reason_code=reason_code)
        self.plugin = plugin
        self.hook_id = hook_id


class RegistrationError(PluginContractError):
    """A plugin's ``registrations`` entry is missing or invalid."""

    reason_code = "registration_invalid"


class ContributionError(PluginContractError):
    """A ``pre_turn`` result broke a contribution rule (keys, budget, slots...)."""

    reason_code = "contribution_invalid"


class InvalidInputError(TurnHooksError, ValueError):
    """Input from a caller or host failed validation; nothing was written."""

    reason_code = "invalid_input"

    def __init__(
        self, message: str, *, reason_code: str | None = None, field: str | None = None
    ) -> None:
        super().__init__(message, reason_code=reason_code)
        self.field = field

    def to_public(self) -> dict[str, Any]:
        """Add the offending field name (never its value)."""
        public = super().to_public()
        if self.field is not None:
            public["field"] = self.field
        return public


class SidecarError(TurnHooksError):
    """A sidecar file could not be used. ``.path`` stays private to the process."""

    reason_code = "sidecar_error"

    def __init__(self, message: str, *, reason_code: str | None = None, path: str = "") -> None:
        super().__init__(message, reason_code=reason_code)
        self.path = path


class SidecarLockTimeout(SidecarError, TimeoutError):
    """The sidecar's lock was not acquired within its timeout."""

    reason_code = "sidecar_lock_timeout"


class SidecarCorrupt(SidecarError, ValueError):
    """The sidecar exists but is not a readable JSON object; it is left untouched.

    ``sidecar_not_regular`` when the path (or its ``.lock``) holds no regular file at
    all: a FIFO, a socket, a device or a directory is refused without being opened
    for a blocking read.
    """

    reason_code = "sidecar_corrupt"


class SidecarPermissionError(SidecarError, PermissionError):
    """The sidecar (or its directory) is more open than 0600/0700, or not ours."""

    reason_code = "sidecar_permission_widened"


class SidecarPathError(SidecarError, ValueError):
    """The sidecar path escapes its root, or a component is a symlink."""

    reason_code = "sidecar_path_rejected"


class SidecarWriteError(SidecarError, OSError):
    """The atomic write failed; the previous file is unchanged."""

    reason_code = "sidecar_write_failed"


class ProviderError(TurnHooksError):
    """A memory provider call failed."""

    reason_code = "provider_error"

    def __init__(
        self, message: str, *, reason_code: str | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(message, reason_code=reason_code)
        self.status_code = status_code


class ProviderUnavailable(ProviderError):
    """The provider could not be reached or kept failing after retries.

    The embedded store raises it too, with an ``embedded_store_*`` reason code, for a
    store it must not or cannot use: corrupt, a symlink on its path, the wrong kind of
    file, a mode open to others, read-only or busy.
    """

    reason_code = "provider_unavailable"


class ProviderRejected(ProviderError):
    """The provider answered and refused the request."""

    reason_code = "provider_rejected"
