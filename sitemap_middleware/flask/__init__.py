"""Flask, natively: a Flask extension, and ``flask sitemaps validate|export|refresh``.

    sitemaps = Sitemaps(base_url="https://shop.example", app=app)   # or, in a factory:

    sitemaps = Sitemaps(base_url="https://shop.example")

    def create_app():
        app = Flask(__name__)
        sitemaps.init_app(app)      # app.extensions["sitemaps"], app.wsgi_app wrapped, app.cli
        return app

``init_app`` wraps ``app.wsgi_app`` with the WSGI adapter (`Sitemaps.wsgi`), so Flask's
own routes, error handlers and ``before_request`` hooks never see our paths, and adds
the ``sitemaps`` command group to ``app.cli`` (`commands`). Flask is an extra
(``sitemap-middleware[flask]``): nothing here is imported until ``init_app`` is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigurationError
from .extension import EXTENSION

if TYPE_CHECKING:
    from flask import Flask

__all__ = ["EXTENSION", "init_app"]


class Wrapping(Protocol):
    """What ``init_app`` needs of a `Sitemaps`: its WSGI adapter."""

    def wsgi(self, app: Any, *, helper_threads: int = 0) -> Any: ...


def init_app(sitemaps: Wrapping, app: Flask, *, helper_threads: int = 0) -> None:
    """Serve ``sitemaps`` in front of ``app`` and add ``flask sitemaps`` to its command line.

    ``helper_threads``: see `SitemapWSGIMiddleware`. An app has one `Sitemaps`: a second
    ``init_app`` on it raises `ConfigurationError` (it would wrap the app twice).
    """
    from .commands import group  # click, from Flask: only once an app asks

    if EXTENSION in app.extensions:
        raise ConfigurationError(f"the Flask app {app.name!r} already has its Sitemaps (init_app ran on it)")
    app.extensions[EXTENSION] = sitemaps
    app.wsgi_app = sitemaps.wsgi(app.wsgi_app, helper_threads=helper_threads)  # type: ignore[method-assign]
    if "sitemaps" not in app.cli.commands:
        app.cli.add_command(group)
