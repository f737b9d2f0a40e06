"""One request for one of our resources in, one reply out; shared by both adapters.

Adapters build a `Request`, ask `Service.reply` (or `Service.robots` with the app's own
robots.txt response) and translate the `Reply` back to WSGI or ASGI. Bodies are sync
iterators: the ASGI adapter pulls them from a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from . import _http
from .compress import gzip_bytes, gzip_stream
from .engine import Engine
from .errors import ProviderError
from .providers import AsyncRunner, Section
from .robots import default_robots, merge_robots
from .stats import Stats, logger

__all__ = ["Reply", "Request", "Service"]

RETRY_AFTER_SECONDS = 120


@dataclass(frozen=True, slots=True)
class Request:
    """What we read from a request: method, path below the mount prefix, a few headers."""

    method: str
    path: str
    prefix: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)  # lowercase names


@dataclass(slots=True)
class Reply:
    """Status, headers and a body (bytes, or a stream the adapter must close)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes | Iterator[bytes] = b""

    def close(self) -> None:
        close = getattr(self.body, "close", None)
        if close is not None:
            close()


class Service:
    """Answers our routes for one `Sitemaps` configuration."""

    def __init__(self, *, engine: Engine, sections: Mapping[str, Section], stats: Stats) -> None:
        self.engine = engine
        self.sections = sections
        self.stats = stats

    def match(self, path: str) -> _http.Route | None:
        return _http.match_route(path, self.sections)

    def index_url(self, prefix: str) -> str:
        return f"{self.engine.site.root}{prefix}{_http.INDEX_PATH}"

    def reply(self, route: _http.Route, request: Request, run_async: AsyncRunner) -> Reply:
        """The answer for an index or page route (robots.txt goes through `robots`)."""
        if request.method not in _http.ALLOWED_METHODS:
            return _plain(405, b"Method Not Allowed\n", [("Allow", _http.ALLOW_HEADER)])
        section = route.section
        try:
            if route.kind == "index":
                body: bytes | Iterator[bytes] | None = self.engine.index(
                    self.sections.values(), request.prefix, run_async
                )
            elif route.kind == "page":
                body = self.engine.page(self.sections[section], route.number, run_async)
            else:
                body = None
        except ProviderError as error:
            self.stats.count(section, "provider_errors")
            logger.error("sitemap %s: %s", request.path, error, exc_info=error.__cause__ or error)
            # Not a 500 and not an empty document: crawlers would read it as "all gone".
            return _plain(
                503, b"Sitemap temporarily unavailable\n", [("Retry-After", str(RETRY_AFTER_SECONDS))]
            )
        if body is None:
            return _plain(404, b"Not Found\n")
        self.stats.count(section, "served")
        return _document(
            body, gz_file=route.gz_file, gzip_ok=_http.accepts_gzip(request.headers.get("accept-encoding"))
        )

    def robots(self, request: Request, status: int, body: bytes) -> bytes | None:
        """Our robots.txt given the app's answer to the same request, or ``None`` to pass it on."""
        if status == 200:
            return merge_robots(body, self.index_url(request.prefix))
        if status == 404:
            return default_robots(self.index_url(request.prefix))
        return None


def _plain(status: int, body: bytes, extra: list[tuple[str, str]] | None = None) -> Reply:
    headers = [("Content-Type", _http.TEXT_TYPE), ("Content-Length", str(len(body)))]
    return Reply(status, headers + (extra or []), body)


def _document(body: bytes | Iterator[bytes], *, gz_file: bool, gzip_ok: bool) -> Reply:
    if gz_file:
        # A .gz file is a gzip document, not an encoded XML one: no Content-Encoding.
        headers = [("Content-Type", _http.GZIP_TYPE)]
    else:
        headers = [("Content-Type", _http.XML_TYPE), ("Vary", "Accept-Encoding")]
        if gzip_ok:
            headers.append(("Content-Encoding", "gzip"))
    if gz_file or gzip_ok:
        body = gzip_bytes(body) if isinstance(body, bytes) else gzip_stream(body)
    if isinstance(body, bytes):
        headers.append(("Content-Length", str(len(body))))
    return Reply(200, headers, body)
