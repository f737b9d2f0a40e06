"""Open what `validate` reads: a URL or a file, gzip or not, as a bounded stream of bytes.

Servers may be hostile, so every document is read under the same `Limits`: at most
``max_bytes`` uncompressed (sitemaps.org: 50 MiB per file), within ``timeout`` seconds
whatever the server does (a trickle, a stall, headers sent a byte at a time), redirects only
to the same host over http(s) and at most ``max_redirects`` of them; and a document named by a
remote one is never a local file::

    with Fetcher(Limits(timeout=30)) as fetcher:
        with fetcher.open("https://shop.example/sitemap-index.xml") as opened:
            opened.location, opened.content_type, opened.head, opened.stream.read(4096)

Nothing is read whole: the stream inflates 64 KiB at a time as the reader asks and raises
`TooLarge` past the limit, so memory stays flat whatever a document holds (a gzip bomb
included). The time limit is held by the socket itself: every connect, read and write waits
at most what is left of the document's deadline. `Fetcher.request` is the same client for any
other request (the same limits, redirect policy and deadline), for an audit of listed URLs.
"""

from __future__ import annotations

import io
import time
import urllib.parse
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from ..errors import ConfigurationError
from ..protocol.render import MAX_BYTES
from .origins import OriginMap
from .transport import DeadlineTransport, within

__all__ = [
    "USER_AGENT",
    "Deadline",
    "FetchError",
    "Fetcher",
    "Limits",
    "Opened",
    "Stream",
    "TooLarge",
    "is_url",
]

USER_AGENT = "sitemap-middleware-validate"
_GZIP_MAGIC = b"\x1f\x8b"
_PIECE = 64 * 1024  # inflated at most this much at a time, whatever one compressed byte holds
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchError(Exception):
    """A document could not be fetched or read (the reason is the message)."""


class TooLarge(FetchError):
    """The document holds more than the limit uncompressed: reading stopped there."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit:,} bytes uncompressed")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Limits:
    """What reading one document may take.

    - ``max_bytes``: uncompressed bytes at most (sitemaps.org: 50 MiB); one more and reading stops.
    - ``timeout``: seconds to read one document, from the first connect to the last byte.
    - ``max_redirects``: redirects followed at most, each to the same host over http(s).
    """

    max_bytes: int = MAX_BYTES
    timeout: float = 120.0
    max_redirects: int = 5

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.timeout <= 0 or self.max_redirects < 0:
            raise ConfigurationError(f"limits must be positive: {self}")


@dataclass(frozen=True, slots=True)
class Deadline:
    """A moment (`time.monotonic`) and what it is, as a problem names it."""

    at: float
    what: str

    @classmethod
    def after(cls, seconds: float, what: str) -> Deadline:
        return cls(time.monotonic() + seconds, f"{what} of {seconds:g} s")

    def left(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0


@dataclass
class Opened:
    location: str  # the URL or path, as reported in problems
    content_type: str
    stream: Stream
    head: bytes  # the first bytes (uncompressed), not consumed: what kind of document it is


def is_url(target: str) -> bool:
    try:
        return urllib.parse.urlsplit(target).scheme in ("http", "https")
    except ValueError:  # not a URL urllib can parse ("http://[x"): as a URL, httpx refuses it too
        return target.split(":", 1)[0].lower() in ("http", "https")


class Fetcher:
    """One HTTP client for a run: a pool of ``connections``, shared by threads; ``transport``
    replaces the network (an app called in-process: inprocess.py), under the same rules."""

    def __init__(
        self,
        limits: Limits | None = None,
        *,
        connections: int = 8,
        origins: OriginMap | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self.origins = origins or OriginMap()  # --map-origin: URLs stay public, sent to the local
        self._client = httpx.Client(
            transport=transport or DeadlineTransport(connections),
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"},
            timeout=self.limits.timeout,  # and each operation at most what is left (transport.py)
            follow_redirects=False,  # followed by `request`, by its own rules
        )

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def deadline(self, run: Deadline | None = None) -> Deadline:
        """A document's deadline: its own timeout from now, or ``run``'s if that comes first."""
        own = Deadline.after(self.limits.timeout, "the document's deadline")
        return run if run is not None and run.at < own.at else own

    @contextmanager
    def request(
        self, url: str, *, method: str = "GET", deadline: Deadline | None = None, follow: bool = True
    ) -> Iterator[httpx.Response]:
        """The response to ``url`` once the allowed redirects are followed (``follow=False``: the
        first answer, a redirect included), its body not read yet; ``deadline`` (or the
        document's own, if sooner) holds until the block ends."""
        deadline = self.deadline(deadline)
        with within(deadline.at):
            with _reasons(deadline):
                response = self._follow(method, httpx.URL(url), follow)
            try:
                yield response
            finally:
                response.close()

    def _follow(self, method: str, url: httpx.URL, follow: bool = True) -> httpx.Response:
        origin = url
        for hop in range(self.limits.max_redirects + 1):
            sent = httpx.URL(self.origins.local(str(url))) if self.origins else url
            response = self._client.send(self._client.build_request(method, sent), stream=True)
            if not response.is_redirect or not follow:
                return response
            response.close()
            url = url.join(response.headers["Location"])
            if self.origins:  # a Location on the local origin is where the public one sends
                url = httpx.URL(self.origins.public(str(url)))
            if url.scheme not in _DEFAULT_PORTS:
                raise FetchError(f"redirected to {url}: not an http(s) URL")
            if not _same_host(origin, url):
                raise FetchError(f"redirected to {url}: another host than {origin.host}")
            if hop == self.limits.max_redirects:
                raise FetchError(f"more than {hop} redirects (the next to {url})")
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def open(self, target: str, *, deadline: Deadline | None = None, local: bool = True) -> Iterator[Opened]:
        """``target`` open for reading; `FetchError` if it cannot be. ``local``: may it be a file?"""
        deadline = self.deadline(deadline)
        if is_url(target):
            with self.request(target, deadline=deadline) as response:
                if not 200 <= response.status_code < 300:
                    raise FetchError(f"HTTP {response.status_code} {response.reason_phrase}")
                encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
                if encoding not in ("identity", "", "gzip", "x-gzip"):
                    raise FetchError(f"Content-Encoding {encoding} (only gzip is asked for)")
                content_type = response.headers.get("Content-Type", "")
                gzipped = encoding not in ("identity", "")
                stream = Stream(response.iter_raw(), self.limits.max_bytes, deadline, gzipped=gzipped)
                yield Opened(target, content_type, stream, stream.head())
            return
        if not local:
            raise FetchError("not an http(s) URL (a remote document never names a local file)")
        try:
            file = Path(target).open("rb")  # noqa: SIM115 (closed below)
        except OSError as error:
            raise FetchError(str(error)) from None
        with file:
            stream = Stream(iter(partial(file.read, _PIECE), b""), self.limits.max_bytes, deadline)
            yield Opened(target, "", stream, stream.head())


class Stream(io.RawIOBase):
    """A document's bytes, decoded as the reader asks: `TooLarge` past ``limit``, `FetchError`
    for anything else that goes wrong below (the network, a corrupt or truncated gzip, the deadline)."""

    def __init__(
        self, chunks: Iterable[bytes], limit: int, deadline: Deadline, *, gzipped: bool = False
    ) -> None:
        self.size = 0  # bytes decoded so far
        self._limit = limit
        self._deadline = deadline
        self._chunks = _unzipped(iter(chunks), gzipped)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def head(self, size: int = 64) -> bytes:
        """The first ``size`` bytes (fewer if the document is shorter), left to be read."""
        while len(self._pending) < size:
            chunk = self._next()
            if not chunk:
                break
            self._pending += chunk
        return self._pending[:size]

    def read_up_to(self, size: int) -> bytes:
        parts, wanted = [], size
        while wanted > 0 and (part := self.read(wanted)):
            parts.append(part)
            wanted -= len(part)
        return b"".join(parts)

    def readinto(self, buffer: Any) -> int:
        if not self._pending:
            self._pending = self._next()
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _next(self) -> bytes:
        """The next bytes, b"" at the end."""
        if self._deadline.passed():
            raise FetchError(f"{self._deadline.what} passed")
        try:
            with _reasons(self._deadline):
                chunk = next((chunk for chunk in self._chunks if chunk), b"")
        except (OSError, zlib.error, EOFError) as error:
            raise FetchError(f"unreadable: {error}") from None
        self.size += len(chunk)
        if self.size > self._limit:
            raise TooLarge(self._limit)
        return chunk


def _unzipped(chunks: Iterator[bytes], gzipped: bool) -> Iterator[bytes]:
    """Undo the Content-Encoding, then a gzip file's own compression (a ``.xml.gz`` served as is)."""
    if gzipped:
        chunks = _gunzip(chunks)
    first = b""  # (a generator: nothing is read before the stream's first read, under its rules)
    for chunk in chunks:
        first += chunk
        if len(first) >= len(_GZIP_MAGIC):
            break
    rest = chain([first], chunks)
    yield from _gunzip(rest) if first.startswith(_GZIP_MAGIC) else rest


def _gunzip(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """RFC 1952: a series of members, each inflated at most ``_PIECE`` bytes at a time."""
    inflater, fed = zlib.decompressobj(wbits=31), False
    for data in chunks:
        while True:
            if not fed:
                if not data.strip(b"\0"):
                    break  # nothing more, or the zeros some tools pad a file with (gzip ignores them)
                fed = True
            out = inflater.decompress(data, _PIECE)
            if out:
                yield out
            if inflater.eof:
                data, inflater, fed = inflater.unused_data, zlib.decompressobj(wbits=31), False
                continue
            data = inflater.unconsumed_tail
            if not data and len(out) < _PIECE:
                break  # all input taken and no output held back: the next chunk
    if fed:
        raise EOFError("truncated gzip stream (it ends before its end-of-stream marker)")


def _same_host(origin: httpx.URL, url: httpx.URL) -> bool:
    """The same host name and port; httpx gives a scheme's own port as None, so http to https
    on their own ports is the same host (an upgrade), another port is another server."""
    return url.host == origin.host and url.port == origin.port


@contextmanager
def _reasons(deadline: Deadline) -> Iterator[None]:
    """httpx's exceptions as `FetchError`, a timeout named for the deadline it kept."""
    try:
        yield
    except httpx.TimeoutException:
        raise FetchError(f"{deadline.what} passed") from None
    except httpx.InvalidURL as error:
        raise FetchError(f"not a valid URL: {error}") from None
    except httpx.HTTPError as error:
        raise FetchError(str(error) or type(error).__name__) from None
