"""The retry policy of provider calls (providers.md §3.3)."""

from __future__ import annotations

from collections.abc import Callable

import tenacity

from capabilities.providers._errors import ProviderRetryable
from capabilities.providers.base import ProviderTimeout


def is_retryable(exc: BaseException) -> bool:
    """Transport errors, timeouts, 429, 5xx and 409 ``path_busy`` are worth a retry."""
    return isinstance(exc, ProviderRetryable | ProviderTimeout)


def default_retrying(sleep: Callable[[float], None] | None = None) -> tenacity.Retrying:
    """Five attempts, jittered exponential backoff from 0.1 s up to 2 s, last error re-raised."""
    options: dict[str, object] = {}
    if sleep is not None:
        options["sleep"] = sleep
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(5),
        wait=tenacity.wait_exponential_jitter(multiplier=0.1, max=2),
        retry=tenacity.retry_if_exception(is_retryable),
        reraise=True,
        **options,  # type: ignore[arg-type]  # tenacity types sleep loosely
    )
