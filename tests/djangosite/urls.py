"""The test app's urlconf: what the models reverse, and Django's own sitemap views of `SITEMAPS`."""

from __future__ import annotations

from django.conf.urls.i18n import i18n_patterns
from django.contrib.sitemaps import views
from django.http import HttpRequest, HttpResponse
from django.urls import path

from .sitemaps import SITEMAPS


def page(request: HttpRequest, slug: str = "") -> HttpResponse:
    return HttpResponse(f"page {request.path}", content_type="text/plain")


urlpatterns = [
    path("p/<slug:slug>/", page, name="product"),
    path("about/", page, name="about"),
    path("contact/", page, name="contact"),
    path("django/sitemap.xml", views.index, {"sitemaps": SITEMAPS}),
    path(
        "django/sitemap-<section>.xml",
        views.sitemap,
        {"sitemaps": SITEMAPS},
        name="django.contrib.sitemaps.views.sitemap",
    ),
    *i18n_patterns(path("a/<slug:slug>/", page, name="article")),
]
