"""The demo shop: a Starlette app with 120,003 products and live sitemaps.

    python examples/demo.py            # then open http://127.0.0.1:8000/sitemap-index.xml

Try /sitemap-products-3.xml, /sitemap-products-1.xml.gz and /robots.txt.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta

import uvicorn
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route

from sitemap_middleware import Sitemaps, Url

PRODUCTS = 120_003
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
PORT = int(sys.argv[1]) if __name__ == "__main__" and len(sys.argv) > 1 else 8000

sitemaps = Sitemaps(base_url=f"http://127.0.0.1:{PORT}")


@sitemaps.provider("pages")
def pages() -> list[str]:
    return ["/", "/about", "/contact"]


@sitemaps.provider("products")
def products():  # a generator: 50,000 URLs per file, streamed as they are produced
    for n in range(PRODUCTS):
        yield Url(f"/p/{n}?colour=blue&size=m", lastmod=EPOCH + timedelta(minutes=n), priority=0.8)


@sitemaps.provider("journal")
async def journal():  # async providers work too (e.g. an async database driver)
    for n in range(1, 31):
        await asyncio.sleep(0)
        yield Url(f"/journal/caf\u00e9-{n}", lastmod=EPOCH.date() + timedelta(days=n), changefreq="weekly")


async def home(request):
    return HTMLResponse('<h1>Demo shop</h1><a href="/sitemap-index.xml">sitemap index</a>')


async def robots(request):
    return PlainTextResponse("User-agent: *\nDisallow: /cart\n")


app = sitemaps.asgi(Starlette(routes=[Route("/", home), Route("/robots.txt", robots)]))

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT)
