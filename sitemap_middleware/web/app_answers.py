"""The wrapped app's own answer to a request, collected whole: for robots.txt, which we merge into.

Each adapter asks its app the same request as a GET (`steps.FetchApp`); what comes back
is small (Google reads 500 KiB of a robots.txt), so it is gathered, never streamed::

    answer = await asgi_answer(app, {**scope, "method": "GET"}, receive)
    answer = wsgi_answer(app, {**environ, "REQUEST_METHOD": "GET"})
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from ..concurrency.steps import AppAnswer

__all__ = ["asgi_answer", "wsgi_answer"]


async def asgi_answer(app: Any, scope: MutableMapping[str, Any], receive: Any) -> AppAnswer:
    """Run ``app`` to completion and collect its response (robots.txt is small)."""
    messages: list[MutableMapping[str, Any]] = []

    async def capture(message: MutableMapping[str, Any]) -> None:
        messages.append(message)

    await app(scope, receive, capture)
    start = next((m for m in messages if m["type"] == "http.response.start"), None)
    if start is None:
        raise RuntimeError("the app returned without starting a response for /robots.txt")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in start.get("headers", ())]
    return AppAnswer(start["status"], headers, body)


def wsgi_answer(app: Any, environ: dict[str, Any]) -> AppAnswer:
    """Run ``app`` to completion and collect its response (robots.txt is small)."""
    captured: list[Any] = []
    written: list[bytes] = []

    def capture(
        status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Callable[[bytes], object]:
        captured[:] = [status, headers]
        return written.append

    result = app(environ, capture)
    try:
        written.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return AppAnswer(int(captured[0].split(" ", 1)[0]), list(captured[1]), b"".join(written))
