"""A multilingual shop with product photos: each page in English, German and French.

    python examples/multilingual_shop.py   # then open http://127.0.0.1:8000/sitemap-index.xml

Each section declares its languages once: every product is listed at /p/<slug> (English,
also x-default), /de/p/<slug> and /fr/p/<slug>, each URL with the whole hreflang group,
and its photos (on a CDN) as image:image entries.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from sitemap_middleware import Image, Sitemaps, Url

PORT = int(sys.argv[1]) if __name__ == "__main__" and len(sys.argv) > 1 else 8000
LANGUAGES = {"en": "", "de": "/de", "fr": "/fr"}  # language -> path prefix (English at the root)
PRODUCTS = {
    "blue-shoe": ("front", "side", "sole"),
    "red-scarf": ("folded", "worn"),
    "green-hat": ("front",),
}
UPDATED = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)

sitemaps = Sitemaps(base_url="http://127.0.0.1:8000")


@sitemaps.provider("pages", languages=LANGUAGES, x_default="en")
def pages() -> list[str]:
    return ["/", "/about"]


@sitemaps.provider("products", languages=LANGUAGES, x_default="en", extensions=["images"])
def products():  # one entry per product: the section serves it in each language
    for slug, photos in PRODUCTS.items():
        yield Url(
            f"/p/{slug}",
            lastmod=UPDATED,
            images=[Image(f"https://cdn.example.net/p/{slug}/{photo}.jpg") for photo in photos],
        )


async def page(request: Request) -> HTMLResponse:
    language = request.path_params.get("language", "en")
    return HTMLResponse(f'<html lang="{language}"><h1>{request.url.path}</h1></html>')


routes = [
    Route(prefix + path, page) for prefix in LANGUAGES.values() for path in ("/", "/about", "/p/{slug}")
]
app = sitemaps.asgi(Starlette(routes=routes))

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT)
