"""The blocking client's transport: httpx's own, whose every socket operation is also bounded by the end of
the call it serves.

Why: httpx's ``timeout`` applies to each network operation, not to a request: a server (or a proxy) that
sends a byte a second, in the headers or the body, never lets one read wait long enough to time out, and
a call with ``timeout=3`` ran for minutes. The client sets ``DEADLINE`` (a ``time.monotonic()`` instant)
around every network step of a call; the streams below give each connect, read and write at most what is
left before it, and fail at once when nothing is left. The asyncio client needs none of this: it cancels.
"""

from __future__ import annotations

import ssl
import time
from contextvars import ContextVar
from typing import Any, Iterable

import httpcore
import httpx

#: The end of the call being served on this thread (or asyncio task), None outside a call.
DEADLINE: ContextVar[float | None] = ContextVar("shelfapi_deadline", default=None)

# As httpcore types a socket option (its own alias is private).
SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


def _bounded(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` cut down to what is left of the call; raises ``expired`` when nothing is."""
    deadline = DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the call's timeout has passed")
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _BoundedStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _BoundedStream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _BoundedStream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_transport() -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` (its request building and error mapping unchanged) over bounded streams.
    httpx takes no network backend, so its connection pool is swapped for an equal one that has ours
    (httpx is pinned below 1.0, whose transports are different anyway; tests/test_misbehaving.py fails
    if this stops bounding a call). A proxy taken from the environment (HTTP_PROXY...) gets httpx's own
    transport: there the client checks the deadline between chunks, and bounds each read by what was left
    when the attempt began."""
    transport = httpx.HTTPTransport()
    # httpx's default limits (100 connections, 20 kept alive for 5 s), as HTTPTransport() would use them.
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=_BoundedBackend(),
    )
    return transport
