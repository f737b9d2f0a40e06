"""``validate module:attr``: check a site's tree and its URLs by calling its WSGI app in-process.

No server and no network, so a site's CI checks it before deploying. ``module:attr`` is either

- a WSGI app already wrapped by the middleware (``myshop.wsgi:application``, made with
  ``sitemaps.wsgi(app)``): the tree and every listed URL are asked of it; or
- a `Sitemaps` (``myshop.sitemaps:sitemaps``), wrapped here around ``--app module:attr``
  (the site's own WSGI app) or, without one, around an app that answers 404 to the rest
  (the tree alone can then be checked, not its URLs)::

    app, origin = load_app("myshop.sitemaps:sitemaps", app="myshop.wsgi:site_app")
    Fetcher(transport=WSGITransport(app))   # every URL, whatever its host, is asked of ``app``

Requests go through the same `Fetcher` rules as over the network (size caps, redirects,
the deadline checked between chunks; an app that blocks is not interrupted). The origin asked
is ``--base-url``, else the `Sitemaps`' own ``base_url``, else ``http://localhost``.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx

from . import loading
from .export import Tree

__all__ = ["LoadError", "WSGITransport", "is_object_spec", "load_app"]

_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class LoadError(Exception):
    """``module:attr`` could not be loaded, or is not something to check."""


def _load(spec: str) -> object:
    """What ``spec`` names, found as `export` finds it (`loading.load`: the current folder first)."""
    try:
        return loading.load(spec)
    except loading.LoadError as error:
        raise LoadError(str(error)) from error


def is_object_spec(target: str) -> bool:
    """``module:attr`` rather than a URL or a file (an existing file of that name wins)."""
    return bool(_SPEC.fullmatch(target)) and not Path(target).exists()


def load_app(spec: str, *, app: str | None = None, base_url: str | None = None) -> tuple[WSGIApp, str, bool]:
    """The WSGI app to call, the origin to ask it as, and whether it holds the site's pages
    (``False`` for a `Sitemaps` with no ``app``: its URLs cannot be audited)."""
    found = _load(spec)
    if isinstance(found, Tree):  # a Sitemaps
        site: WSGIApp = _not_found
        if app is not None:
            inner = _load(app)
            if not callable(inner):
                raise LoadError(f"{app} is a {type(inner).__name__}, not a WSGI app")
            site = inner
        origin = (base_url or found.site.origin).rstrip("/")
        return found.wsgi(site), origin, app is not None
    if app is not None:
        raise LoadError(f"--app goes with a Sitemaps; {spec} is already an app")
    if not callable(found):
        raise LoadError(f"{spec} is a {type(found).__name__}, not a Sitemaps or a WSGI app")
    return found, (base_url or "http://localhost").rstrip("/"), True


class WSGITransport(httpx.BaseTransport):
    """httpx's requests answered by a WSGI app in this process, its body streamed as the app
    yields it (httpx's own WSGITransport needs ``start_response`` before the first chunk:
    PEP 3333 lets an app call it as late as its first chunk)."""

    def __init__(self, app: WSGIApp) -> None:
        self._app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        url = request.url
        environ: dict[str, Any] = {
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": url.scheme,
            "wsgi.input": io.BytesIO(request.content),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "REQUEST_METHOD": request.method,
            "SCRIPT_NAME": "",
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query.decode("ascii"),
            "SERVER_NAME": url.host,
            "SERVER_PORT": str(url.port or {"http": 80, "https": 443}[url.scheme]),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
        }
        for name, value in request.headers.raw:
            key = name.decode("latin-1").upper().replace("-", "_")
            environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}"] = value.decode(
                "latin-1"
            )
        started: list[tuple[str, list[tuple[str, str]]]] = []
        written: list[bytes] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if exc_info and started:
                raise exc_info[1].with_traceback(exc_info[2])  # PEP 3333: too late to change
            started[:] = [(status, headers)]
            return written.append

        try:
            body = self._app(environ, start_response)
            chunks = iter(body)
            while not started:  # PEP 3333: start_response may come with the first chunk
                chunk = next(chunks, None)
                if chunk is None:
                    break
                written.append(chunk)
        except Exception as error:
            raise httpx.TransportError(f"the app raised {error!r}") from error
        if not started:
            raise httpx.TransportError("the app never called start_response")
        status, headers = started[0]
        return httpx.Response(
            int(status.split()[0]),
            headers=[(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers],
            stream=_Body(written, chunks, body),
        )


class _Body(httpx.SyncByteStream):
    def __init__(self, first: list[bytes], rest: Iterator[bytes], body: Iterable[bytes]) -> None:
        self._first, self._rest, self._body = first, rest, body

    def __iter__(self) -> Iterator[bytes]:
        yield from self._first
        try:
            yield from self._rest
        except Exception as error:
            raise httpx.TransportError(f"the app raised {error!r} midway") from error

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        if close is not None:
            close()


def _not_found(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Behind a `Sitemaps` with no ``--app``: every page but ours is missing."""
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b""]
