"""Django: a QuerySet, or one of Django's own ``Sitemap`` classes, as a section of the sitemap,
and `SitemapMiddleware` (``MIDDLEWARE``, with ``SITEMAPS`` in settings: `middleware`).

`keyset` makes a QuerySet a paged source (`sitemap_middleware.sources`): its pages are ranges
of an ordered unique key, read with ``WHERE key >= first AND key < next ORDER BY key`` and
never with ``OFFSET``, so page 200 costs what page 1 costs; where every page starts, and its newest
lastmod, come from one query in the database (`key_ranges`).
`from_sitemap` serves a ``django.contrib.sitemaps.Sitemap`` as Django's own view lists it::

    # myproject/sitemaps.py
    from sitemap_middleware import Sitemaps
    from sitemap_middleware.django import from_sitemap, keyset

    from shop.models import Product
    from shop.sitemaps import BlogSitemap

    sitemaps = Sitemaps(base_url="https://shop.example")
    sitemaps.add_provider("products", keyset(Product.objects.filter(published=True)))
    sitemaps.add_provider("blog", from_sitemap(BlogSitemap()))

    # myproject/wsgi.py (asgi.py alike: get_asgi_application, sitemaps.asgi)
    django_application = get_wsgi_application()  # sets Django up: models may be imported now
    from myproject.sitemaps import sitemaps
    application = sitemaps.wsgi(django_application)

Both are synchronous: under ASGI the adapter calls them in worker threads, where Django's
ORM may be used (its async-unsafe guard only objects on a thread running an event loop).
Each query is whole within one call, and a connection is handed back between queries the
way Django's request cycle would (closed if broken or past ``CONN_MAX_AGE``, never inside
a transaction): a page's rows may be fetched by several worker threads in turn. With
``USE_TZ = False`` the naive datetimes Django gives are read in ``TIME_ZONE`` and published
in UTC (`time_zones`).

The package's modules, one job each: `querysets` (`keyset`), `contrib_sitemaps`
(`from_sitemap`), `key_ranges` (the planning query and the reads by key that both share)
and `time_zones` (Django's naive datetimes as instants).
"""

# Every import of Django's own package is absolute: this package is sitemap_middleware.django.
from __future__ import annotations

from sitemap_middleware.django.contrib_sitemaps import SitemapSource, from_sitemap
from sitemap_middleware.django.middleware import SitemapMiddleware
from sitemap_middleware.django.querysets import KeysetSource, keyset

__all__ = ["KeysetSource", "SitemapMiddleware", "SitemapSource", "from_sitemap", "keyset"]
