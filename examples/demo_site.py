"""The demo shop's HTML pages (Starlette, no template engine): what its sitemaps list.

    shop = Starlette(routes=Shop(database, base_url).routes())

English at the root and German below /de/: home, categories (48 products a page, keyset
``?after=``), products with their photos (SVGs drawn on the fly), two static pages, and
the English-only journal. Every text from the database is HTML-escaped. Where a page lives
is decided by the path functions below, which the sitemaps use too.
"""

from __future__ import annotations

from functools import partial
from html import escape

from demo_database import Database, utc
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

LANGUAGES = {"en": "", "de": "/de"}  # language -> path prefix (English at the root)
PAGES = ["/", "/about", "/delivery"]  # in every language
PUBLICATION = "Demo Shop Journal"
OVERVIEW = "/sitemaps/"  # the sitemaps' HTML overview
PER_PAGE = 48  # products on a category page


def product_path(language: str, product: int, slug: str) -> str:
    return f"{LANGUAGES[language]}/p/{product}-{slug}"


def photo_path(product: int, n: int) -> str:
    return f"/img/p/{product}-{n}.svg"


def post_path(post: int, slug: str) -> str:
    return f"/blog/{post}-{slug}"


TEXT = {
    "en": {
        "shop": "Demo Shop",
        "categories": "Categories",
        "blog": "Journal",
        "about": "About us",
        "delivery": "Delivery & returns",
        "products": "products",
        "more": "More products",
        "no_photo": "No photo yet.",
        "switch": "Deutsch",
        "intro": "Everything here is listed in live sitemaps, straight from the database:",
        "about_text": "A demo of sitemap-middleware: a shop whose sitemaps are never built, only served.",
        "delivery_text": "Free delivery from €50. Returns within 30 days, no questions asked.",
    },
    "de": {
        "shop": "Demo-Laden",
        "categories": "Kategorien",
        "blog": "Journal (englisch)",
        "about": "Über uns",
        "delivery": "Versand & Rückgabe",
        "products": "Produkte",
        "more": "Weitere Produkte",
        "no_photo": "Noch kein Foto.",
        "switch": "English",
        "intro": "Alles hier steht in Live-Sitemaps, direkt aus der Datenbank:",
        "about_text": "Eine Demo von sitemap-middleware: ein Laden, dessen Sitemaps nie gebaut werden.",
        "delivery_text": "Versandkostenfrei ab 50 €. Rückgabe binnen 30 Tagen, ohne Wenn und Aber.",
    },
}
STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;margin:0 auto;max-width:62rem;padding:0 1rem}"
    "header{display:flex;gap:1.2rem;align-items:baseline;border-bottom:1px solid #ddd;padding:.8rem 0}"
    ".brand{font-weight:700;margin-right:auto}ul.grid{list-style:none;padding:0;display:grid;gap:.8rem;"
    "grid-template-columns:repeat(auto-fill,minmax(13rem,1fr))}.grid li{border:1px solid #eee;padding:.6rem}"
    "footer{border-top:1px solid #ddd;margin-top:2rem;padding:.8rem 0;color:#666}"
)


def number(count: int, language: str) -> str:
    return f"{count:,}" if language == "en" else f"{count:,}".replace(",", ".")


def money(cents: int, language: str) -> str:
    euros = f"{cents / 100:,.2f}"
    return f"€{euros}" if language == "en" else euros.translate(str.maketrans(",.", ".,")) + " €"


class Shop:
    """The shop's endpoints over its database. They are sync: Starlette runs them in its
    thread pool, where a sqlite3 query may block."""

    def __init__(self, database: Database, base_url: str) -> None:
        self.database = database
        self.base_url = base_url  # hreflang links are absolute

    def routes(self) -> list[Route]:
        routes = [Route("/robots.txt", self.robots)]
        for language, prefix in LANGUAGES.items():
            routes += [
                Route(f"{prefix}/", partial(self.home, language)),
                Route(f"{prefix}/about", partial(self.static, language, "about")),
                Route(f"{prefix}/delivery", partial(self.static, language, "delivery")),
                Route(f"{prefix}/c/{{slug}}", partial(self.category, language)),
                Route(f"{prefix}/p/{{product:int}}-{{slug}}", partial(self.product, language)),
            ]
        return [
            *routes,
            Route("/blog", self.blog),
            Route("/blog/{post:int}-{slug}", self.post),
            Route("/img/p/{product:int}-{n:int}.svg", self.photo),
        ]

    def home(self, language: str, request: Request) -> HTMLResponse:
        text, prefix, name = TEXT[language], LANGUAGES[language], f"name_{language}"
        categories = self.database.all(f"SELECT slug, {name}, products FROM category ORDER BY {name}")
        posts = self.database.all("SELECT id, slug, title FROM post ORDER BY published_at DESC LIMIT 5")
        sitemaps = (OVERVIEW, "/sitemap-index.xml", "/robots.txt")
        body = (
            f"<h1>{escape(text['shop'])}</h1><p>{escape(text['intro'])} "
            + ", ".join(f'<a href="{path}">{path}</a>' for path in sitemaps)
            + f'.</p><h2>{escape(text["categories"])}</h2><ul class="grid">'
            + "".join(
                f'<li><a href="{prefix}/c/{slug}">{escape(title)}</a> '
                f"<small>{number(count, language)} {text['products']}</small></li>"
                for slug, title, count in categories
            )
            + f'</ul><h2><a href="/blog">{escape(text["blog"])}</a></h2><ul>'
            + "".join(
                f'<li><a href="{post_path(p, slug)}">{escape(title)}</a></li>' for p, slug, title in posts
            )
            + "</ul>"
        )
        return self._page(language, text["shop"], body, _versions("/"))

    def static(self, language: str, page: str, request: Request) -> HTMLResponse:
        text = TEXT[language]
        body = f"<h1>{escape(text[page])}</h1><p>{escape(text[page + '_text'])}</p>"
        return self._page(language, text[page], body, _versions(f"/{page}"))

    def category(self, language: str, request: Request) -> HTMLResponse:
        slug = request.path_params["slug"]
        found = self.database.one(f"SELECT id, name_{language} FROM category WHERE slug = ?", slug)
        if found is None:
            raise HTTPException(404)
        category, title = found
        after = request.query_params.get("after", "0")
        products = self.database.all(
            f"SELECT id, slug_{language}, name_{language}, price_cents FROM product"
            " WHERE category_id = ? AND id > ? ORDER BY id LIMIT ?",
            category,
            int(after) if after.isdigit() else 0,
            PER_PAGE + 1,  # one more: is there a next page?
        )
        items = "".join(
            f'<li><a href="{product_path(language, product, product_slug)}">{escape(name)}</a><br>'
            f"{money(price, language)}</li>"
            for product, product_slug, name, price in products[:PER_PAGE]
        )
        more = ""
        if len(products) > PER_PAGE:
            after = products[PER_PAGE - 1][0]
            more = f'<p><a rel="next" href="?after={after}">{escape(TEXT[language]["more"])} →</a></p>'
        body = f'<h1>{escape(title)}</h1><ul class="grid">{items}</ul>{more}'
        return self._page(language, title, body, _versions(f"/c/{slug}"))

    def product(self, language: str, request: Request) -> HTMLResponse:
        product = request.path_params["product"]
        found = self.database.one(
            "SELECT p.slug_en, p.slug_de, p.name_en, p.name_de, p.price_cents, p.photos, c.slug,"
            f" c.name_{language} FROM product p JOIN category c ON c.id = p.category_id WHERE p.id = ?",
            product,
        )
        if found is None or request.path_params["slug"] != found[list(LANGUAGES).index(language)]:
            raise HTTPException(404)
        slugs, names = (
            dict(zip(LANGUAGES, found[:2], strict=True)),
            dict(zip(LANGUAGES, found[2:4], strict=True)),
        )
        price, photos, category_slug, category = found[4:]
        name = names[language]
        images = "".join(
            f'<img src="{photo_path(product, n)}" alt="{escape(name)} ({n})" width="240" height="240"> '
            for n in range(1, photos + 1)
        )
        body = (
            f'<p><a href="{LANGUAGES[language]}/c/{category_slug}">{escape(category)}</a></p>'
            f"<h1>{escape(name)}</h1><p>{images or escape(TEXT[language]['no_photo'])}</p>"
            f"<p><strong>{money(price, language)}</strong></p>"
        )
        versions = {tag: product_path(tag, product, slug) for tag, slug in slugs.items()}
        return self._page(language, name, body, versions)

    def blog(self, request: Request) -> HTMLResponse:
        posts = self.database.all(
            "SELECT id, slug, title, published_at FROM post ORDER BY published_at DESC LIMIT 30"
        )
        items = "".join(
            f'<li><a href="{post_path(p, slug)}">{escape(title)}</a> <small>{utc(at):%d %b %Y}</small></li>'
            for p, slug, title, at in posts
        )
        return self._page("en", PUBLICATION, f"<h1>{PUBLICATION}</h1><ul>{items}</ul>")

    def post(self, request: Request) -> HTMLResponse:
        found = self.database.one(
            "SELECT slug, title, body, published_at FROM post WHERE id = ?", request.path_params["post"]
        )
        if found is None or found[0] != request.path_params["slug"]:
            raise HTTPException(404)
        _, title, text, at = found
        paragraphs = "".join(f"<p>{escape(paragraph)}</p>" for paragraph in text.split("\n\n"))
        body = f"<h1>{escape(title)}</h1><p><small>{utc(at):%d %B %Y, %H:%M} UTC</small></p>{paragraphs}"
        return self._page("en", title, body)

    def photo(self, request: Request) -> Response:
        product, n = request.path_params["product"], request.path_params["n"]
        found = self.database.one("SELECT name_en FROM product WHERE id = ? AND photos >= ?", product, n)
        if found is None or n < 1:
            raise HTTPException(404)
        svg = (
            '<svg xmlns="http://www.w3.org/2000/svg" width="480" height="480" viewBox="0 0 480 480">'
            f'<rect width="480" height="480" fill="hsl({(product * 47 + n * 100) % 360},45%,60%)"/>'
            '<text x="240" y="250" font-family="sans-serif" font-size="26" text-anchor="middle" fill="#fff">'
            f"{escape(found[0])}</text></svg>"
        )
        return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})

    def robots(self, request: Request) -> PlainTextResponse:
        return PlainTextResponse("User-agent: *\nDisallow: /basket\n")  # the middleware adds Sitemap:

    def _page(
        self, language: str, title: str, body: str, versions: dict[str, str] | None = None
    ) -> HTMLResponse:
        """The whole page: ``versions`` are its URLs in each language (hreflang links, the switch)."""
        text, versions = TEXT[language], versions or {}
        group = [*versions.items(), ("x-default", versions["en"])] if versions else []
        links = "".join(
            f'<link rel="alternate" hreflang="{tag}" href="{self.base_url}{href}">' for tag, href in group
        )
        other = next((tag for tag in versions if tag != language), None)
        switch = f'<a href="{versions[other]}" hreflang="{other}">{text["switch"]}</a>' if other else ""
        nav = "".join(
            f'<a href="{href}">{escape(text[key])}</a>'
            for key, href in (
                ("blog", "/blog"),
                ("about", f"{LANGUAGES[language]}/about"),
                ("delivery", f"{LANGUAGES[language]}/delivery"),
            )
        )
        return HTMLResponse(
            f'<!DOCTYPE html><html lang="{language}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width">'
            f"<title>{escape(title)} · {escape(text['shop'])}</title>{links}<style>{STYLE}</style></head>"
            f'<body><header><a class="brand" href="{LANGUAGES[language]}/">{escape(text["shop"])}</a>'
            f"{nav}{switch}</header><main>{body}</main>"
            f'<footer>Sitemaps: <a href="{OVERVIEW}">overview</a> · <a href="/sitemap-index.xml">index</a>'
            ' · <a href="/robots.txt">robots.txt</a></footer></body></html>'
        )


def _versions(path: str) -> dict[str, str]:
    """A page's URL in each language, when only the prefix differs."""
    return {language: prefix + path for language, prefix in LANGUAGES.items()}
