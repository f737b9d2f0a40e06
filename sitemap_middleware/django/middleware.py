"""Django's ``MIDDLEWARE`` face: our paths answered before any view, the rest untouched.

    # settings.py
    MIDDLEWARE = [
        "django.middleware.security.SecurityMiddleware",
        "sitemap_middleware.django.SitemapMiddleware",
        ...
    ]
    SITEMAPS = "myproject.sitemaps.sitemaps"  # a Sitemaps, by its dotted path
    SITEMAPS_CONCURRENCY = {"helper_threads": 2}  # optional: the adapter's options

A third thin adapter (WhiteNoise's shape), translation only: a sync stack's request goes
to the WSGI adapter as its environ, an async stack's to the ASGI adapter as its scope (the
same policy, `gateway` and `flow`); their answer becomes a `StreamingHttpResponse`. The
app's own robots.txt is the rest of the chain, ``get_response``, for the same request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from http import HTTPStatus
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse

from ..asgi import Receive, Send, SitemapASGIMiddleware
from ..web.rules import route_path
from ..wsgi import SitemapWSGIMiddleware
from .settings import concurrency, configured_sitemaps
from .streaming import AsgiAnswer

__all__ = ["SitemapMiddleware"]

# Where the Django request rides in the environ or scope handed to the adapter, so that
# the app's own answer (robots.txt) is asked of ``get_response`` with it.
_REQUEST = "sitemap_middleware.django.request"


class SitemapMiddleware:
    """Serves the tree of ``settings.SITEMAPS`` in front of the rest of the chain; sync and
    async capable, so Django gives it its stack's mode (sync under WSGI, async under ASGI)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        sitemaps = configured_sitemaps()  # ConfigurationError here, at Django's start
        self._gateway = sitemaps.gateway
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)
            options = concurrency(asynchronous=True)
            self._asgi = SitemapASGIMiddleware(self._app_asgi, sitemaps=sitemaps, **options)
        else:
            options = concurrency(asynchronous=False)
            self._wsgi = SitemapWSGIMiddleware(self._app_wsgi, sitemaps=sitemaps, **options)

    def __call__(self, request: HttpRequest) -> Any:
        if self._async:
            return self.__acall__(request)
        if self._gateway.match(request.method or "GET", request.path_info) is None:
            return self.get_response(request)
        # PEP 3333: environ strings are bytes decoded as latin-1, as a WSGI server passes them.
        environ = {
            **request.META,
            "PATH_INFO": _wsgi_string(request.path_info),
            "SCRIPT_NAME": _wsgi_string(request.path[: len(request.path) - len(request.path_info)]),
            _REQUEST: request,
        }
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [int(status[:3]), headers]

        body = self._wsgi(environ, start_response)
        return _streaming(started[0], started[1], body)

    async def __acall__(self, request: HttpRequest) -> Any:
        scope = request.scope  # type: ignore[attr-defined]  # an ASGIRequest's
        if (
            self._gateway.match(scope["method"], route_path(scope["path"], scope.get("root_path", "")))
            is None
        ):
            return await self.get_response(request)
        body = AsgiAnswer()
        task = body.start(self._asgi, {**scope, _REQUEST: request})
        try:
            start = await body.messages.get()
        except BaseException:
            task.cancel()
            raise
        if isinstance(start, BaseException):
            raise start
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in start["headers"]]
        return _streaming(start["status"], headers, body)

    def _app_wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """The rest of the chain as the WSGI app the adapter asks (robots.txt)."""
        response: HttpResponseBase = self.get_response(environ[_REQUEST])
        status = f"{response.status_code} {response.reason_phrase}"
        start_response(status, _header_list(response))
        return response  # iterable, and closed by the adapter once read

    async def _app_asgi(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        """The rest of the chain as the ASGI app the adapter asks (robots.txt)."""
        response: HttpResponseBase = await self.get_response(scope[_REQUEST])
        try:
            if getattr(response, "is_async", False):
                body = b"".join([bytes(chunk) async for chunk in response])  # type: ignore[attr-defined]
            else:
                body = b"".join(response)
        finally:
            response.close()
        raw = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in _header_list(response)
        ]
        await send({"type": "http.response.start", "status": response.status_code, "headers": raw})
        await send({"type": "http.response.body", "body": body})


def _streaming(status: int, headers: list[tuple[str, str]], body: Any) -> StreamingHttpResponse:
    response = StreamingHttpResponse(body, status=status, reason=HTTPStatus(status).phrase)
    if not any(name.lower() == "content-type" for name, _ in headers):
        del response.headers["Content-Type"]  # a 304 has none (RFC 9110 §15.4.5), nor Django's default
    for name, value in headers:
        response.headers[name] = value
    return response


def _header_list(response: HttpResponseBase) -> list[tuple[str, str]]:
    cookies = [("Set-Cookie", cookie.output(header="").strip()) for cookie in response.cookies.values()]
    return [*response.items(), *cookies]


def _wsgi_string(text: str) -> str:
    return text.encode("utf-8").decode("latin-1")
