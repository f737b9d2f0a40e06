"""Real framework apps for the end-to-end tests: Flask, Starlette, FastAPI and a Django urlconf.

Every app answers the same few routes, each in its own framework's way, so a test can
tell the app's answer from ours:

- ``/`` -> ``"<framework> home"``
- ``/robots.txt`` -> `crawl.ROBOTS`
- ``/sitemap-foo-1.xml`` -> `APP_SITEMAP`, the app's own document for a section we do not own
- anything else -> 404 ``"<framework> 404"`` from the app's own not-found handler

This module is also Django's ``ROOT_URLCONF`` (``urlpatterns``, ``handler404``).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseNotFound
from django.urls import path
from fastapi import FastAPI
from flask import Flask, Response
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.responses import Response as StarletteResponse
from starlette.routing import Route

from .crawl import BASE, ROBOTS

APP_SITEMAP = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    f"<url><loc>{BASE}/foo</loc></url></urlset>\n"
).encode()
APP_SITEMAP_LOCS = [f"{BASE}/foo"]
XML = "application/xml"


def flask_app() -> Flask:
    app = Flask(__name__)

    @app.get("/")
    def home() -> Response:
        return Response("flask home", mimetype="text/plain")

    @app.get("/robots.txt")
    def robots() -> Response:
        return Response(ROBOTS, mimetype="text/plain")

    @app.get("/sitemap-foo-1.xml")
    def own_sitemap() -> Response:
        return Response(APP_SITEMAP, mimetype=XML)

    @app.errorhandler(404)
    def not_found(error: Exception) -> tuple[Response, int]:
        return Response("flask 404", mimetype="text/plain"), 404

    return app


def _not_found(framework: str) -> Any:
    async def not_found(request: Request, exc: Exception) -> StarletteResponse:
        return PlainTextResponse(f"{framework} 404", 404)

    return not_found


def starlette_app(**options: Any) -> Starlette:
    async def home(request: Request) -> StarletteResponse:
        return PlainTextResponse("starlette home")

    async def robots(request: Request) -> StarletteResponse:
        return PlainTextResponse(ROBOTS)

    async def own_sitemap(request: Request) -> StarletteResponse:
        return StarletteResponse(APP_SITEMAP, media_type=XML)

    routes = [Route("/", home), Route("/robots.txt", robots), Route("/sitemap-foo-1.xml", own_sitemap)]
    return Starlette(routes=routes, exception_handlers={404: _not_found("starlette")}, **options)


def fastapi_app(**options: Any) -> FastAPI:
    app = FastAPI(exception_handlers={404: _not_found("fastapi")}, **options)

    @app.get("/", response_class=PlainTextResponse)
    def home() -> str:  # a sync endpoint: FastAPI runs it in its threadpool
        return "fastapi home"

    @app.get("/robots.txt", response_class=PlainTextResponse)
    async def robots() -> bytes:
        return ROBOTS

    @app.get("/sitemap-foo-1.xml")
    async def own_sitemap() -> StarletteResponse:
        return StarletteResponse(APP_SITEMAP, media_type=XML)

    return app


# Django: this module is the ROOT_URLCONF of the project configured in test_frameworks.py.


def django_home(request: HttpRequest) -> HttpResponse:
    return HttpResponse("django home", content_type="text/plain")


def django_robots(request: HttpRequest) -> HttpResponse:
    return HttpResponse(ROBOTS, content_type="text/plain")


def django_own_sitemap(request: HttpRequest) -> HttpResponse:
    return HttpResponse(APP_SITEMAP, content_type=XML)


def django_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return HttpResponseNotFound("django 404", content_type="text/plain")


urlpatterns = [
    path("", django_home),
    path("robots.txt", django_robots),
    path("sitemap-foo-1.xml", django_own_sitemap),
]
handler404 = django_not_found
