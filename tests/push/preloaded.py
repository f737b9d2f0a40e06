"""A WSGI app for ``gunicorn --preload tests.push.preloaded:app``: the push tests' shop, built
in gunicorn's master before it forks its workers (env: PUSH_LOG, PUSH_ENGINE, PUSH_PATHS)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .conftest import Shelf
from .worker import shop

shelf = Shelf(0)
shelf.rows = dict.fromkeys(Path(os.environ["PUSH_PATHS"]).read_text().split())
sitemaps = shop(os.environ["PUSH_LOG"], os.environ["PUSH_ENGINE"], shelf)


def _app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"the app\n"]


app = sitemaps.wsgi(_app)
