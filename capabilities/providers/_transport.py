"""An httpx transport for plain-http OpenViking servers, on keep-alive `http.client` connections.

httpx's default transport is httpcore, which imports h11, anyio, certifi and both its
sync and async stacks when the first client is built: about a tenth of a cold hook
process's imports, on every Turn, for a loopback ``http://`` server that needs none
of it. ``http.client`` (and ``select``) are already imported by httpx itself, so this
transport adds no import. It keeps httpx's contract: the request's timeouts, and
httpx's exception types for every transport failure, so ``map_httpx_errors`` and the
retry policy see what they saw from httpcore. ``https://`` and proxied servers keep
httpx's default transport (certificate verification, proxies from the environment).
"""

from __future__ import annotations

import contextlib
import http.client
import select
import threading
from collections.abc import Iterator

import httpx


@contextlib.contextmanager
def _mapped(request: httpx.Request) -> Iterator[None]:
    """``http.client`` and socket failures as the httpx errors httpcore raises."""
    try:
        yield
    except TimeoutError as exc:
        raise httpx.TimeoutException("the server did not answer in time", request=request) from exc
    except (OSError, http.client.HTTPException) as exc:
        message = f"the connection failed: {type(exc).__name__}"
        raise httpx.NetworkError(message, request=request) from exc


class PlainHttpTransport(httpx.BaseTransport):
    """Keep-alive connections to one ``http://`` origin: one, unless threads share it.

    A request takes an idle connection (or opens one) and gives it back when its
    answer is read, so a client used by one thread, as a hook step uses it, talks
    over a single connection, and threads sharing a client (a bulk import) each get
    their own.
    """

    def __init__(self) -> None:
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _take(self, request: httpx.Request, connect: float | None) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                connection = self._idle.pop()
                # One the server has since closed reads as readable (EOF): as httpcore
                # does, drop it rather than send into it and fail. poll, not select:
                # select refuses a descriptor above 1023.
                poller = select.poll()
                poller.register(connection.sock, select.POLLIN)
                if not poller.poll(0):
                    return connection
                connection.close()
        url = request.url
        connection = http.client.HTTPConnection(url.host, url.port or 80, timeout=connect)
        connection.connect()
        return connection

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and read the whole response within its timeouts."""
        timeout = request.extensions.get("timeout") or {}
        with _mapped(request):
            connection = self._take(request, timeout.get("connect"))
            try:
                connection.sock.settimeout(timeout.get("read"))
                connection.putrequest(
                    request.method,
                    request.url.raw_path.decode("ascii"),
                    skip_host=True,
                    skip_accept_encoding=True,
                )
                for key, value in request.headers.raw:
                    connection.putheader(key.decode("latin-1"), value.decode("latin-1"))
                connection.endheaders(request.read() or None)
                response = connection.getresponse()
                content = response.read()
            except BaseException:
                connection.close()
                raise
        if response.will_close:
            connection.close()
        else:
            with self._lock:
                self._idle.append(connection)
        return httpx.Response(
            response.status,
            headers=response.getheaders(),
            content=content,
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    def close(self) -> None:
        """Close every idle connection; the next request opens a new one."""
        with self._lock:
            for connection in self._idle:
                connection.close()
            self._idle.clear()
