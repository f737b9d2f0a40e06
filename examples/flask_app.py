"""A Flask blog with live sitemaps: a list of pages and a generator of posts.

    python examples/flask_app.py        # then open http://127.0.0.1:8000/sitemap-index.xml

Flask's own routes keep working; /robots.txt (Flask's, or a minimal one) names the index.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import date, timedelta

from flask import Flask, abort

from sitemap_middleware import Sitemaps, Url

# Stands in for a database table: slug -> day of the last edit.
POSTS = {f"post-{n}": date(2026, 1, 1) + timedelta(days=n) for n in range(1, 41)}

app = Flask(__name__)
sitemaps = Sitemaps(base_url="http://127.0.0.1:8000")  # the canonical origin, never the Host header


@sitemaps.provider("pages")
def pages() -> list[str]:
    return ["/", "/about"]


@sitemaps.provider("posts", page_size=25)  # 40 posts: /sitemap-posts-1.xml and -2.xml
def posts() -> Iterator[Url]:
    for slug, edited in POSTS.items():
        yield Url(f"/posts/{slug}", lastmod=edited, changefreq="monthly", priority=0.6)


@app.get("/")
@app.get("/about")
def home() -> str:
    return '<h1>Blog</h1><a href="/sitemap-index.xml">sitemap index</a>'


@app.get("/posts/<slug>")
def post(slug: str) -> str:
    if slug not in POSTS:
        abort(404)
    return f"<h1>{slug}</h1>"


app.wsgi_app = sitemaps.wsgi(app.wsgi_app)  # type: ignore[method-assign]

if __name__ == "__main__":
    app.run(host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
