"""Open what `validate` is pointed at: a URL or a file, gzip or not, as a stream of bytes.

Nothing is read whole: a 50 MB sitemap is parsed as it arrives. The stream counts the
uncompressed bytes it hands out, so the 50 MB limit is checked without holding them::

    with open_target("https://shop.example/sitemap-index.xml") as opened:
        opened.location, opened.content_type, opened.stream.read(4096), opened.stream.size
"""

from __future__ import annotations

import gzip
import io
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["FetchError", "Opened", "open_target"]

USER_AGENT = "sitemap-middleware-validate"
TIMEOUT = 30.0
_GZIP_MAGIC = b"\x1f\x8b"


class FetchError(Exception):
    """A document could not be fetched or read (the reason is the message)."""


class Counting(io.RawIOBase):
    """Passes bytes through, counting them (the uncompressed size, for the 50 MB rule)."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(buffer))
        buffer[: len(data)] = data
        self.size += len(data)
        return len(data)


@dataclass
class Opened:
    location: str  # the URL or path, as reported in problems
    content_type: str
    stream: Counting
    head: bytes  # the first bytes (uncompressed), not consumed: what kind of document it is


def is_url(target: str) -> bool:
    return urllib.parse.urlsplit(target).scheme in ("http", "https")


@contextmanager
def open_target(target: str) -> Iterator[Opened]:
    """``target`` opened for reading; `FetchError` if it cannot be."""
    try:
        if is_url(target):
            request = urllib.request.Request(
                target, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}
            )
            raw: IO[bytes] = urllib.request.urlopen(request, timeout=TIMEOUT)
            content_type = raw.headers.get("Content-Type", "")  # type: ignore[attr-defined]
            encoded = raw.headers.get("Content-Encoding", "").lower() in ("gzip", "x-gzip")  # type: ignore[attr-defined]
        else:
            raw = Path(target).open("rb")  # noqa: SIM115 (closed below)
            content_type, encoded = "", False
    except urllib.error.HTTPError as error:
        raise FetchError(f"HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise FetchError(str(getattr(error, "reason", error))) from None
    try:
        buffered = io.BufferedReader(_Raw(raw), 64 * 1024)
        gzipped = encoded or buffered.peek(2)[:2] == _GZIP_MAGIC
        inner: IO[bytes] = gzip.GzipFile(fileobj=buffered) if gzipped else buffered  # type: ignore[assignment]
        try:
            head = inner.peek(64)[:64]  # type: ignore[attr-defined]
        except (OSError, EOFError) as error:  # a corrupt gzip header
            raise FetchError(f"unreadable: {error}") from None
        yield Opened(target, content_type, Counting(inner), head)
    finally:
        raw.close()


class _Raw(io.RawIOBase):
    """Any readable as a raw stream, so `io.BufferedReader` can peek at its first bytes."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self._inner.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
