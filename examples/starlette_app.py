"""A Starlette shop with live sitemaps from a list, a generator and an async generator.

    python examples/starlette_app.py    # then open http://127.0.0.1:8000/sitemap-index.xml

The middleware sits in Starlette's (or FastAPI's) middleware list; `sitemaps.asgi(app)` also works.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from sitemap_middleware import SitemapASGIMiddleware, Sitemaps, Url

UPDATED = datetime(2026, 1, 1, tzinfo=UTC)
sitemaps = Sitemaps(base_url="http://127.0.0.1:8000")  # the canonical origin, never the Host header


@sitemaps.provider("pages")
def pages() -> list[str]:
    return ["/", "/about"]


@sitemaps.provider("products")
def products() -> Iterator[Url]:  # sync providers run in a worker thread, off the event loop
    for n in range(1, 101):
        yield Url(f"/products/{n}", lastmod=UPDATED + timedelta(hours=n), changefreq="daily", priority=0.8)


@sitemaps.provider("articles")
async def articles() -> AsyncIterator[Url]:  # e.g. rows streamed from an async database driver
    for n in range(1, 21):
        await asyncio.sleep(0)
        yield Url(f"/articles/{n}", lastmod=UPDATED.date() + timedelta(days=n), changefreq="weekly")


async def home(request: Request) -> HTMLResponse:
    return HTMLResponse('<h1>Shop</h1><a href="/sitemap-index.xml">sitemap index</a>')


app = Starlette(
    routes=[Route("/", home), Route("/about", home)],
    middleware=[Middleware(SitemapASGIMiddleware, sitemaps=sitemaps)],
)

if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
