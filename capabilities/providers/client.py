"""A small OpenViking HTTP client: settings, headers, envelope, retries.

The transport and the retry policy come from the caller (tests pass
``httpx.MockTransport`` and a no-op sleep); every request has an explicit timeout.
"""

from __future__ import annotations

import functools
import os
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from capabilities.providers._errors import error_for_response, map_httpx_errors
from capabilities.providers._transport import PlainHttpTransport
from capabilities.providers.base import ProviderTimeout

if TYPE_CHECKING:
    import tenacity

SETTING_KEYS = ("url", "api_key", "account", "user", "timeout")
ENV_PREFIX = "OPENVIKING_"


@dataclass(frozen=True)
class OpenVikingSettings:
    """Where the server is and who we are; the API key never leaves this object."""

    url: str
    api_key: str | None = None
    account: str | None = None
    user: str | None = None
    timeout: float = 30.0

    def __repr__(self) -> str:  # keep the key out of logs and tracebacks
        return f"OpenVikingSettings(url={self.url!r}, account={self.account!r}, user={self.user!r})"

    @classmethod
    def resolve(cls, **explicit: Any) -> OpenVikingSettings | None:
        """Explicit values, then ``OPENVIKING_*`` variables, then ``ovcli.conf``; ``None``
        when no URL is configured anywhere."""
        conf_path = os.environ.get("OPENVIKING_CLI_CONFIG_FILE") or str(
            Path.home() / ".openviking" / "ovcli.conf"
        )
        from sidecars import read_bounded
        from turn_hooks import TurnHooksError, loads_bounded

        try:
            # Bounded and regular files only: a FIFO or /dev/zero here must not hold
            # the Turn; an unusable file is as good as none.
            conf = loads_bounded(read_bounded(conf_path, reason_prefix="ovcli_conf"))
        except TurnHooksError:
            conf = {}
        conf = conf if isinstance(conf, dict) else {}
        values: dict[str, Any] = {}
        for key in SETTING_KEYS:
            value = explicit.get(key) or os.environ.get(ENV_PREFIX + key.upper()) or conf.get(key)
            if value not in (None, ""):
                values[key] = value
        if not values.get("url"):
            return None
        try:
            values["timeout"] = float(values.get("timeout", 30.0))
        except (TypeError, ValueError):
            values["timeout"] = 30.0
        values["url"] = str(values["url"]).rstrip("/")
        return cls(**values)


class ProviderClient:
    """JSON over HTTP to one OpenViking server, with retries on transient failures.

    One connection serves every request of the client (a provider is built per hook
    step): no new TCP connection, and no new TLS context, per request. The TLS
    context, whose certificate loading costs tens of milliseconds, is only built for
    an ``https://`` server. Each request has a deadline that its retries and their
    back-off sleeps respect, so a server that accepts and never answers costs a hook
    at most the request's timeout, not five times it.
    """

    def __init__(
        self,
        settings: OpenVikingSettings,
        client: httpx.Client | None = None,
        *,
        timeout: httpx.Timeout | None = None,
        retrying: tenacity.Retrying | None = None,
    ) -> None:
        self.settings = settings
        self.timeout = timeout or httpx.Timeout(
            settings.timeout, connect=min(5.0, settings.timeout)
        )
        self.client = client
        self._retrying = retrying

    @property
    def retrying(self) -> tenacity.Retrying:
        """The retry policy. The default is built, and tenacity imported, on first use:
        a hook step whose requests all succeed at once never needs either."""
        if self._retrying is None:
            from capabilities.providers.retry import default_retrying

            self._retrying = default_retrying()
        return self._retrying

    @retrying.setter
    def retrying(self, value: tenacity.Retrying) -> None:
        self._retrying = value

    def _connection(self) -> httpx.Client:
        if self.client is None:
            # Plain http has no TLS to verify; certificates load only for https. It
            # needs no httpcore either: its own transport spares every cold hook
            # process that import. httpx ignores the environment's proxies once given
            # a transport, so with a proxy set httpx keeps its own.
            plain = self.settings.url.startswith("http://") and not _proxied()
            self.client = httpx.Client(
                timeout=self.timeout,
                verify=self.settings.url.startswith("https://"),
                transport=PlainHttpTransport() if plain else None,
            )
            # Closed when this client is collected, so no socket is left to the GC.
            weakref.finalize(self, self.client.close)
        return self.client

    def close(self) -> None:
        """Close the connection this client opened (it reopens on the next request)."""
        if self.client is not None:
            self.client.close()

    def _headers(self, peer: str | None, auth: bool) -> dict[str, str]:
        headers: dict[str, str] = {}
        if auth and self.settings.api_key:
            headers["X-API-Key"] = self.settings.api_key
        if auth and self.settings.account:
            headers["X-OpenViking-Account"] = self.settings.account
        if auth and self.settings.user:
            headers["X-OpenViking-User"] = self.settings.user
        if peer:
            headers["X-OpenViking-Actor-Peer"] = peer
        return headers

    def _once(
        self,
        method: str,
        path: str,
        *,
        peer: str | None,
        auth: bool,
        params: dict[str, Any] | None,
        body: dict[str, Any] | None,
        deadline: float,
    ) -> Any:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ProviderTimeout("the request's deadline passed before it could be sent")
        with map_httpx_errors():
            response = self._connection().request(
                method,
                self.settings.url + path,
                params=params,
                json=body,
                headers=self._headers(peer, auth),
                timeout=_within(self.timeout, remaining),
            )
        error = error_for_response(response)
        if error is not None:
            raise error
        try:
            document = response.json()
        except ValueError:
            return response.text
        if isinstance(document, dict) and "result" in document and "status" in document:
            return document["result"]
        return document

    def request(
        self,
        method: str,
        path: str,
        *,
        peer: str | None = None,
        auth: bool = True,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One API call, retried on transient failures; returns the envelope's ``result``.

        ``timeout`` (default: the settings' timeout) bounds the whole call, retries and
        back-off included: no attempt starts, and no sleep runs, past it.
        """
        seconds = self.settings.timeout if timeout is None else timeout
        deadline = time.monotonic() + max(seconds, 0.0)
        once = functools.partial(
            self._once,
            method,
            path,
            peer=peer,
            auth=auth,
            params=params,
            body=body,
            deadline=deadline,
        )
        try:
            return once()
        except Exception as exc:  # judged by the retry policy below, as its first attempt
            failed = [exc]
        import tenacity

        # The same absolute deadline: no retry starts, and no back-off sleep runs, past it.
        policy = self.retrying.stop
        in_time = tenacity.stop_before_delay(max(deadline - time.monotonic(), 0.0))
        retrying = self.retrying.copy(stop=lambda state: policy(state) or in_time(state))

        def attempt() -> Any:
            if failed:
                raise failed.pop()
            return once()

        return retrying(attempt)


def _proxied() -> bool:
    """Whether the environment names a proxy for plain-http requests."""
    import urllib.request  # already imported by httpx

    proxies = urllib.request.getproxies()
    return bool(proxies.get("http") or proxies.get("all"))


def _within(timeout: httpx.Timeout, remaining: float) -> httpx.Timeout:
    """``timeout`` with every phase cut to what is left of the deadline."""

    def cut(value: float | None) -> float:
        return remaining if value is None else min(value, remaining)

    return httpx.Timeout(
        connect=cut(timeout.connect),
        read=cut(timeout.read),
        write=cut(timeout.write),
        pool=cut(timeout.pool),
    )
