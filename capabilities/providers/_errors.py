"""One place where httpx errors and HTTP statuses become turn-hooks provider errors.

Messages name the HTTP status and the server's error code only: never a URL with a
query, a header, or a key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx

from capabilities.providers.base import ProviderPermissionError, ProviderTimeout
from turn_hooks import ProviderRejected, ProviderUnavailable


class ProviderAuthError(ProviderRejected):
    """The server refused the credentials (401)."""

    reason_code = "provider_auth_failed"


class ProviderRequestError(ProviderRejected):
    """The server rejected the request itself (400): never retried."""

    reason_code = "provider_request_invalid"


class ProviderNotFound(ProviderRejected):
    """The addressed record does not exist (404)."""

    reason_code = "provider_not_found"


class ProviderRetryable(ProviderUnavailable):
    """A transient failure worth retrying: transport, timeout, 429, 5xx, 409 path_busy."""

    reason_code = "provider_unavailable"


def error_for_response(response: httpx.Response) -> Exception | None:
    """The provider error an HTTP response stands for, or ``None`` when it succeeded."""
    status = response.status_code
    code = ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = str(body["error"].get("code") or "")
        details = body["error"].get("details")
        if (
            status == 409
            and isinstance(details, dict)
            and details.get("conflict_type") == "path_busy"
        ):
            return ProviderRetryable(
                f"HTTP 409 {code}: path busy", status_code=status, reason_code="provider_path_busy"
            )
    if status < 400 and not (isinstance(body, dict) and body.get("status") == "error"):
        return None
    message = f"HTTP {status} {code}".strip()
    if status == 400:
        return ProviderRequestError(message, status_code=status)
    if status == 401:
        return ProviderAuthError(message, status_code=status)
    if status == 403:
        return ProviderPermissionError(message, status_code=status)
    if status == 404:
        return ProviderNotFound(message, status_code=status)
    if status == 429 or status >= 500:
        return ProviderRetryable(message, status_code=status)
    return ProviderRejected(message, status_code=status)


@contextlib.contextmanager
def map_httpx_errors() -> Iterator[None]:
    """Translate httpx transport errors into provider errors at this single boundary."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ProviderTimeout("the provider did not answer in time") from exc
    except httpx.TransportError as exc:
        raise ProviderRetryable(
            "the provider could not be reached", reason_code="provider_unreachable"
        ) from exc
