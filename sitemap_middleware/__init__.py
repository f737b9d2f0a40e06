"""Live, standards-compliant XML sitemaps for any WSGI or ASGI app.

from sitemap_middleware import Sitemaps, Url

sitemaps = Sitemaps(base_url="https://shop.example")

@sitemaps.provider("products")
def products():
    for p in db.products():
        yield Url(f"/p/{p.slug}", lastmod=p.updated_at, changefreq="daily", priority=0.8)

flask_app.wsgi_app = sitemaps.wsgi(flask_app.wsgi_app)
asgi_app = sitemaps.asgi(starlette_app)
"""

from __future__ import annotations

from .asgi import SitemapASGIMiddleware
from .caching.stores import CacheStore, Document, MemoryStore
from .errors import ConfigurationError, EntryError, InvalidationError, ProviderError, SitemapError
from .protocol.entries import CHANGEFREQS, Url
from .protocol.extensions import Alternate, Image, News, Video
from .sitemaps import Sitemaps
from .web.sites import Hosts
from .wsgi import SitemapWSGIMiddleware

__all__ = [  # noqa: RUF022 (a plain sort, which tests/test_public_api.py holds)
    "Alternate",
    "CHANGEFREQS",
    "CacheStore",
    "ConfigurationError",
    "Document",
    "EntryError",
    "Hosts",
    "Image",
    "InvalidationError",
    "MemoryStore",
    "News",
    "ProviderError",
    "SitemapASGIMiddleware",
    "SitemapError",
    "SitemapWSGIMiddleware",
    "Sitemaps",
    "Url",
    "Video",
]
