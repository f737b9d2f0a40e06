"""httpx with a deadline that every socket operation keeps: connect, TLS, each read and write.

httpx's timeouts bound one operation each; a server sending a byte just inside the read
timeout, or its headers a byte at a time, would hold a reader for ever. Here the pool's
network backend gives each operation at most what is left of the deadline of the thread's
current document, so reading it takes no longer, whatever the server does::

    client = httpx.Client(transport=DeadlineTransport(connections=8))
    with within(time.monotonic() + 30):
        client.get(url)  # httpx.TimeoutException once the 30 s have passed

The deadline is a context variable: set by the thread that reads, it follows that reader
onto whichever pooled connection it is given. httpx's own transport takes no network
backend, so this one is built on httpcore's pool as httpx's is (HTTP/1.1, no proxies).
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

__all__ = ["DeadlineTransport", "within"]

_DEADLINE: ContextVar[float | None] = ContextVar("sitemap_middleware_deadline", default=None)


@contextmanager
def within(deadline: float) -> Iterator[None]:
    """Every socket operation of this thread (or task) ends by ``deadline`` (`time.monotonic`)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class DeadlineTransport(httpx.BaseTransport):
    """httpx over httpcore's connection pool, with the deadline-keeping network backend below."""

    def __init__(self, connections: int) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=connections,
            max_keepalive_connections=connections,
            network_backend=_DeadlineBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core)
        assert isinstance(response.stream, Iterable)  # a sync pool's (httpx asserts the same)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """httpx's default (certifi's CAs), made once: loading them takes ~20 ms, and a context is
    safe to share between pools and threads."""
    return httpx.create_ssl_context()


def _clamp(timeout: float | None) -> float | None:
    """One socket operation's timeout: at most what is left of the current deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _clamp(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        # DNS resolution happens inside and is not bounded (getaddrinfo takes no timeout).
        stream = self._inner.connect_tcp(host, port, _clamp(timeout), local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.UnsupportedProtocol("http(s) over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


@contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's exceptions as httpx's, as httpx's own transport maps them."""
    try:
        yield
    except httpcore.TimeoutException as error:
        raise httpx.TimeoutException(str(error)) from error
    except httpcore.UnsupportedProtocol as error:
        raise httpx.UnsupportedProtocol(str(error)) from error
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError) as error:
        raise httpx.TransportError(str(error) or type(error).__name__) from error
