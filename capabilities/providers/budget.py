"""A work budget for one hook call: every provider call shares one deadline.

A binding's ``timeout_seconds`` (30 by default, as upstream) bounds a single call;
a Turn makes several, and the host kills a hook at its own timeout (30 s for Codex
and Claude Code). So the per-Turn paths wrap their providers here: each call gets
the smaller of its own timeout and what is left of the budget, and once the budget
is spent a call fails at once as unavailable, which the core already treats as a
retryable, fail-open outcome (hosts.md §1.1: our own work stays within 10 s).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from capabilities.providers.base import Preflight
from turn_hooks import ProviderUnavailable

HOOK_WORK_BUDGET = 8.0
"""Seconds of provider work one hook call may spend (below hosts.md's 10 s)."""
MIN_CALL_TIMEOUT = 0.05
EXHAUSTED = "turn_budget_exhausted"


class Budgeted:
    """Wraps a provider; calls taking ``timeout=`` are clamped to the shared deadline."""

    def __init__(self, provider: Any, deadline: float) -> None:
        self._provider = provider
        self._deadline = deadline
        self.provider_id = provider.provider_id

    def _remaining(self) -> float:
        return self._deadline - time.monotonic()

    def preflight(self, *, timeout: float) -> Preflight:
        """The wrapped preflight, or unavailable once the budget is spent."""
        remaining = self._remaining()
        if remaining < MIN_CALL_TIMEOUT:
            return Preflight(ok=False, reason_code=EXHAUSTED)
        result: Preflight = self._provider.preflight(timeout=min(timeout, remaining))
        return result

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._provider, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if "timeout" in kwargs:
                remaining = self._remaining()
                if remaining < MIN_CALL_TIMEOUT:
                    raise ProviderUnavailable(
                        "the hook's work budget is spent", reason_code=EXHAUSTED
                    )
                kwargs["timeout"] = min(float(kwargs["timeout"]), remaining)
            return attribute(*args, **kwargs)

        return call


def budgeted(
    build: Callable[[dict[str, Any]], Any], seconds: float = HOOK_WORK_BUDGET
) -> Callable[[dict[str, Any]], Any]:
    """A provider factory whose providers all share one deadline, starting now."""
    deadline = time.monotonic() + seconds
    return lambda binding: Budgeted(build(binding), deadline)
