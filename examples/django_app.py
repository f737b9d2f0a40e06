"""A single-file Django project with live sitemaps.

    python examples/django_app.py       # then open http://127.0.0.1:8000/sitemap-index.xml

`application` is what a WSGI server loads (``gunicorn django_app:application``). Under ASGI,
wrap the other handler the same way: ``sitemaps.asgi(get_asgi_application())``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import date, timedelta

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path

from sitemap_middleware import Sitemaps, Url

settings.configure(SECRET_KEY="example-only", ALLOWED_HOSTS=["127.0.0.1", "localhost"], ROOT_URLCONF=__name__)
# Stands in for a model: with one, yield from Event.objects.iterator() instead.
EVENTS = {f"meetup-{n}": date(2026, 3, 1) + timedelta(weeks=n) for n in range(1, 13)}
sitemaps = Sitemaps(base_url="http://127.0.0.1:8000")  # the canonical origin, never the Host header


@sitemaps.provider("pages")
def pages() -> list[str]:
    return ["/", "/about"]


@sitemaps.provider("events")
def events() -> Iterator[Url]:
    for slug, day in EVENTS.items():
        yield Url(f"/events/{slug}", lastmod=day, changefreq="weekly", priority=0.5)


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse('<h1>Meetups</h1><a href="/sitemap-index.xml">sitemap index</a>')


def event(request: HttpRequest, slug: str) -> HttpResponse:
    if slug not in EVENTS:
        raise Http404(slug)
    return HttpResponse(f"<h1>{slug}</h1>")


urlpatterns = [path("", home), path("about", home), path("events/<slug:slug>", event)]
application = sitemaps.wsgi(get_wsgi_application())

if __name__ == "__main__":
    from wsgiref.simple_server import make_server

    make_server("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8000, application).serve_forever()
