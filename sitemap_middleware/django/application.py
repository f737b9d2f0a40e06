"""The project's WSGI application, for ``manage.py sitemaps validate`` when ``settings`` names none.

Made by Django's own ``get_wsgi_application`` (its ``MIDDLEWARE``, so `SitemapMiddleware`
answers the sitemaps) when this module is imported, with the project's settings in place.
"""

from __future__ import annotations

from django.core.wsgi import get_wsgi_application

__all__ = ["application"]

application = get_wsgi_application()
