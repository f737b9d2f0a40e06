"""render: one 50,000-URL page through our full path against the peers, in one process.

    python benchmarks/run.py render [--quick] [--rounds N] [--urls N] [--profile] [--chart PNG]

Every renderer gets the same rows (``common.make_rows``: ``&`` in every loc, a non-ASCII
path in 1%, an aware-datetime lastmod, changefreq, priority) in its own idiomatic form:
a provider yielding `Url` for us, `Sitemap` subclasses for Django and asgi-sitemaps, an
``(endpoint, values, lastmod, ...)`` generator for flask-sitemap. Rounds are interleaved
(the order rotates each round) so drift in the machine's speed hits every renderer alike;
times are the median round, and a ratio is the median of the ratios within each round
(the two ran seconds apart). Every output is checked to hold every URL before timing.

Our rows are the paths users run (issue 15): requests straight into the WSGI and the ASGI
middleware, in-process (ASGI on an asyncio loop of our own, rendering in its worker
threads), with ``cache=None`` and with the default cache emptied before each request (a
cold page, which also builds the stored gzip copy); identity rows against the minimal
renderer, gzip rows against the minimal renderer plus zlib level 6. The main paths run
twice: with a provider yielding `Url` records, as the README shows (issue 20's targets are
judged on these), and with one handing over the very rows the ceiling reads, as a cursor
would (", rows as entries"). A last table times a
warm page from the cache per request; its ratio to a bare app is `serve`'s to measure.
A third table measures pages with hreflang groups and images (extensions.py). ``--chart``
draws the identity table's main rows as a PNG (chart.py; the one in benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib
import inspect
import io
import pstats
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import chart
import extensions
from common import BASE_URL, Row, close_wsgi, fmt_int, machine, make_rows, median, ratio, revision, table

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.engine import Engine
from sitemap_middleware.plans.measured import measured_page
from sitemap_middleware.protocol.render import MAX_URLS
from sitemap_middleware.providers import LoopRunner, Provider, Section
from sitemap_middleware.web import settled
from sitemap_middleware.web.settled import settle

Render = Callable[[], bytes]
PAGE = "/sitemap-products-1.xml"
HEAD = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)
TAIL = b"</urlset>\n"


# -- the ceiling --------------------------------------------------------------------------------


def minimal(rows: list[Row]) -> Render:
    """Hand-written f-strings, str.replace escaping, no validation: what nothing can beat by much."""

    def render() -> bytes:
        parts = []
        append = parts.append
        for path, lastmod, changefreq, priority in rows:
            loc = (BASE_URL + path).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            append(
                f"<url><loc>{loc}</loc><lastmod>{lastmod.isoformat()}</lastmod>"
                f"<changefreq>{changefreq}</changefreq><priority>{priority}</priority></url>\n"
            )
        return HEAD + "".join(parts).encode() + TAIL

    return render


def minimal_gzip(rows: list[Row], module: Any = zlib, level: int = 6) -> Render:
    """The ceiling, gzipped by ``module`` (zlib, or isal's isal_zlib) at ``level``."""
    render = minimal(rows)

    def render_gz() -> bytes:
        compressor = module.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return compressor.compress(render()) + compressor.flush()

    return render_gz


# -- ours ---------------------------------------------------------------------------------------


DEFAULT = object()  # Sitemaps' own default for an argument


def _sitemaps(rows: list[Row], cache: object = None, *, entries: str = "url", **options: Any) -> Sitemaps:
    """Our configuration with a provider yielding `Url` records, as the README shows; only
    ``cache`` differs (``DEFAULT``: as `Sitemaps` has it, the in-process cache), and the
    ``options`` given (``compressor="zlib"``: the fallback without the fast extra).
    ``entries="rows"``: the provider hands over the rows as they are, as a cursor would
    (docs/large-catalogues.md), the very rows the ceiling reads."""
    if cache is not DEFAULT:
        options["cache"] = cache
    sitemaps = Sitemaps(base_url=BASE_URL, **options)

    def products() -> Iterable[Url]:
        return (Url(p, lastmod=m, changefreq=c, priority=r) for p, m, c, r in rows)

    sitemaps.add_provider("products", products if entries == "url" else lambda: iter(rows))
    return sitemaps


def ours_engine(rows: list[Row]) -> Render:
    """The page path of `Service` without HTTP: `measured_page` -> `PageWriter` -> `Normaliser`."""
    sitemaps = Sitemaps(base_url=BASE_URL)

    def products() -> Iterable[Url]:
        return (Url(p, lastmod=m, changefreq=c, priority=r) for p, m, c, r in rows)

    engine = Engine(sitemaps.site, on_skip=sitemaps.stats.skip)
    section = Section("products", Provider.wrap("products", products), MAX_URLS)
    runner = LoopRunner()

    def render() -> bytes:
        stream = measured_page(engine, section, 0, runner, "")
        assert stream is not None
        try:
            return b"".join(stream)
        finally:
            stream.close()  # type: ignore[attr-defined]

    return render


def _not_found(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"not found"]


def _wsgi_get(app: Any, headers: dict[str, str]) -> bytes:
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": PAGE, "SCRIPT_NAME": "", "QUERY_STRING": "", **headers}
    status: list[str] = []
    result = app(environ, lambda s, h, exc_info=None: status.append(s))
    try:
        body = b"".join(result)
    finally:
        close_wsgi(result)
    if not status[0].startswith("200"):
        raise RuntimeError(f"{PAGE} answered {status[0]}")
    return body


def ours_wsgi(rows: list[Row], *, gzip: bool, entries: str = "url") -> Render:
    """The real middleware, in-process, cache off: routing, headers, streaming (and gzip)."""
    app = _sitemaps(rows, entries=entries).wsgi(_not_found)
    headers = {"HTTP_ACCEPT_ENCODING": "gzip"} if gzip else {}
    return lambda: _wsgi_get(app, headers)


def ours_wsgi_cold_cached(
    rows: list[Row], *, gzip: bool = False, entries: str = "url", **options: Any
) -> Render:
    """Default configuration (cache on), emptied before each request: a cold render that also
    builds the stored gzip copy."""
    sitemaps = _sitemaps(rows, cache=DEFAULT, entries=entries, **options)
    app = sitemaps.wsgi(_not_found)
    headers = {"HTTP_ACCEPT_ENCODING": "gzip"} if gzip else {}

    def render() -> bytes:
        sitemaps.invalidate()
        return _wsgi_get(app, headers)

    return render


def unsettled(render: Render) -> Render:
    """``render`` with ISA-L's calls not settled (`web.settled`), as before issue 20: each
    leaves the vector registers dirty, and the Python after it slower. WSGI only: the
    request runs on this thread, which `timed` settles before the next case."""

    def run() -> bytes:
        settled.settle = _unsettle
        try:
            return render()
        finally:
            settled.settle = settle

    return run


def _unsettle() -> None:
    pass


# -- ours under ASGI, in-process ----------------------------------------------------------------


async def _asgi_not_found(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"not found"})


class _AsgiClient:
    """Requests straight into an ASGI app on one event loop of our own, as a server would make
    them: ``receive`` gives the (empty) request body, then waits for a disconnect that never comes."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()

    def get(self, path: str, headers: list[tuple[bytes, bytes]]) -> bytes:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "https",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"shop.example"), *headers],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        status: list[int] = []
        body: list[bytes] = []
        requested = False
        never = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await never.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            else:
                body.append(message.get("body", b""))

        self.loop.run_until_complete(self.app(scope, receive, send))
        if status != [200]:
            raise RuntimeError(f"{path} answered {status}")
        return b"".join(body)


def ours_asgi(
    rows: list[Row], *, gzip: bool, cache: object = None, entries: str = "url", **options: Any
) -> Render:
    """The real ASGI middleware in-process: worker threads for the provider and rendering,
    chunks handed back to the event loop. ``cache=DEFAULT``: the default cache, emptied
    before each request (a cold page)."""
    sitemaps = _sitemaps(rows, cache=cache, entries=entries, **options)
    client = _AsgiClient(sitemaps.asgi(_asgi_not_found))
    headers = [(b"accept-encoding", b"gzip")] if gzip else []

    def render() -> bytes:
        if cache is not None:
            sitemaps.invalidate()
        return client.get(PAGE, headers)

    return render


# -- cached pages, in-process -------------------------------------------------------------------


def cached_cases(rows: list[Row]) -> dict[str, Render]:
    """A warm page from the default cache, per request, beside a bare app answering the very
    bytes. In-process a bare app costs nothing (no socket): the ratio is `serve`'s job; this
    says what our part costs."""
    sitemaps = _sitemaps(rows, cache=DEFAULT)
    wsgi = sitemaps.wsgi(_not_found)
    asgi = _AsgiClient(sitemaps.asgi(_asgi_not_found))
    identity = _wsgi_get(wsgi, {})
    gzipped = _wsgi_get(wsgi, {"HTTP_ACCEPT_ENCODING": "gzip"})

    def bare(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "application/xml")])
        return [identity]

    gz = [(b"accept-encoding", b"gzip")]
    return {
        "cached identity, bare WSGI app (same bytes)": lambda: _wsgi_get(bare, {}),
        "cached identity, ours WSGI": lambda: _wsgi_get(wsgi, {}),
        "cached identity, ours ASGI": lambda: asgi.get(PAGE, []),
        "cached gzip, ours WSGI": lambda: _wsgi_get(wsgi, {"HTTP_ACCEPT_ENCODING": "gzip"}),
        "cached gzip, ours ASGI": lambda: asgi.get(PAGE, gz),
        "(gzip body alone)": lambda: gzipped,
    }


# -- the peers ----------------------------------------------------------------------------------


def django_sitemaps(rows: list[Row]) -> Render:
    """django.contrib.sitemaps' ``sitemap`` view and template, with a minimal configuration."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            DEBUG=False,
            ALLOWED_HOSTS=["shop.example"],
            USE_TZ=True,
            LANGUAGE_CODE="en",  # x-default of extensions.py's i18n sitemap
            INSTALLED_APPS=["django.contrib.sitemaps"],
            TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
        )
        django.setup()
    from django.contrib.sitemaps import Sitemap
    from django.contrib.sitemaps.views import sitemap
    from django.test import RequestFactory

    class Products(Sitemap):  # type: ignore[type-arg]
        limit = len(rows)
        protocol = "https"

        def items(self) -> list[Row]:
            return rows

        def location(self, item: Row) -> str:
            return item[0]

        def lastmod(self, item: Row) -> Any:
            return item[1]

        def changefreq(self, item: Row) -> str:
            return item[2]

        def priority(self, item: Row) -> float:
            return item[3]

    request = RequestFactory().get("/sitemap.xml", HTTP_HOST="shop.example")

    def render() -> bytes:
        response = sitemap(request, sitemaps={"products": Products})
        response.render()
        return bytes(response.content)

    return render


def flask_sitemap(rows: list[Row]) -> Render:
    """flask-sitemap's page view; its generator yields ``(endpoint, values, lastmod, ...)``."""
    from flask import Flask
    from flask_sitemap import Sitemap as FlaskSitemap

    app = Flask("flask_sitemap_bench")
    app.config.update(SERVER_NAME="shop.example", SITEMAP_URL_SCHEME="https", SITEMAP_MAX_URL_COUNT=len(rows))

    @app.get("/p/<slug>")
    def product(slug: str) -> str:
        return slug

    values = []
    for path, *_ in rows:
        slug, _, query = path[len("/p/") :].partition("?")
        values.append(dict(kv.split("=") for kv in query.split("&")) | {"slug": slug})
    extension = FlaskSitemap(app=app)

    @extension.register_generator
    def products() -> Iterable[tuple[Any, ...]]:
        for (_, lastmod, changefreq, priority), value in zip(rows, values, strict=True):
            yield "product", value, lastmod.isoformat(), changefreq, priority

    client = app.test_client()

    def render() -> bytes:
        response = client.get("/sitemap1.xml")
        if response.status_code != 200:
            raise RuntimeError(f"flask-sitemap answered {response.status_code}")
        return response.data

    return render


def asgi_sitemaps(rows: list[Row]) -> Render:
    """asgi-sitemaps' ASGI app, driven in-process on one event loop."""
    import asgi_sitemaps as peer

    class Products(peer.Sitemap):  # type: ignore[type-arg]
        protocol = "https"

        def items(self) -> list[Row]:
            return rows

        def location(self, item: Row) -> str:
            return item[0]

        def lastmod(self, item: Row) -> Any:
            return item[1]

        def changefreq(self, item: Row) -> str:
            return item[2]

        def priority(self, item: Row) -> float:
            return item[3]

    app = peer.SitemapApp(Products(), domain="shop.example")
    loop = asyncio.new_event_loop()
    scope = {"type": "http", "scheme": "https", "method": "GET", "path": "/sitemap.xml", "headers": []}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    def render() -> bytes:
        body: list[bytes] = []

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                body.append(message["body"])

        loop.run_until_complete(app(scope, receive, send))
        return b"".join(body)

    return render


# -- compressors alone --------------------------------------------------------------------------


def compressor_only(page: bytes) -> dict[str, Render]:
    """gzip of our page's bytes alone, so the gzip variant's cost can be split."""
    cases: dict[str, Render] = {"(zlib level 6 alone, our page)": lambda: zlib.compress(page, 6)}
    try:
        from isal import isal_zlib  # type: ignore[import-not-found]

        cases["(isal level 1 alone, our page)"] = lambda: isal_zlib.compress(page, 1)
    except ImportError:
        pass
    try:
        from zlib_ng import zlib_ng  # type: ignore[import-not-found]

        cases["(zlib-ng level 6 alone, our page)"] = lambda: zlib_ng.compress(page, 6)
    except ImportError:
        pass
    return cases


# -- running ------------------------------------------------------------------------------------


def count_urls(body: bytes) -> int:
    if body[:2] == b"\x1f\x8b":
        body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
    return body.count(b"<loc>")


def timed(render: Render) -> float:
    gc.collect()
    # Every case starts with clean vector registers: a raw ISA-L call of the case before
    # (the ceiling's own isal row) would otherwise slow whatever runs next (`web.settled`).
    settle()
    start = time.perf_counter()
    render()
    return time.perf_counter() - start


def interleaved(cases: dict[str, Render], rounds: int) -> dict[str, list[float]]:
    """``rounds`` timings of every case, the starting case rotating each round."""
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(timed(cases[name]))
        print(f"  round {number + 1}/{rounds} done", file=sys.stderr)
    return times


def report(
    cases: dict[str, Render],
    times: dict[str, list[float]],
    urls: int,
    refs: dict[str, str],
    sizes: dict[str, int],
) -> str:
    headers = ["renderer", "URLs/s (median)", "ms/page", "bytes"] + [f"vs {label}" for label in refs]
    body = []
    for name in cases:
        seconds = median(times[name])
        ms = seconds * 1000
        line: list[object] = [name, fmt_int(urls / seconds), f"{ms:,.0f}" if ms >= 10 else f"{ms:.3f}"]
        line.append(f"{sizes[name]:,}")
        for ref in refs.values():
            line.append(f"{paired(times, ref, name)[1]:.2f}x")
        body.append(line)
    return table(headers, body)


def extensions_table(rows: list[Row], rounds: int) -> str:
    """Pages with hreflang groups and with images: ours, Django's i18n, and sitemap.js if present."""
    cases, urls = extensions.cases(rows)
    sizes = check(cases, urls)
    times = interleaved(cases, rounds)
    django = "django.contrib.sitemaps i18n, alternates, x_default"
    headers = ["renderer", "URLs/s (median)", "ms/page", "bytes", "vs django i18n"]
    body: list[list[object]] = []
    for name in cases:
        seconds = median(times[name])
        body.append([name, fmt_int(urls / seconds), f"{seconds * 1000:,.0f}", f"{sizes[name]:,}"])
        body[-1].append(ratio(median(times[django]), seconds) if "image" not in name else "n/a")
    measured = extensions.sitemapjs(urls // len(extensions.LANGUAGES), rounds)
    for mode, label in (("links", "+4 links/URL"), ("images", f"{extensions.IMAGES} images/URL")):
        if measured is None:
            body.append([f"sitemap.js ({label})", "not measured: set SITEMAP_JS", "", "", ""])
            continue
        seconds, size = measured[mode]
        versus = ratio(median(times[django]), seconds) if mode == "links" else "n/a"
        body.append(
            [
                f"sitemap.js 9 on Node ({label}, own process)",
                fmt_int(urls / seconds),
                f"{seconds * 1000:,.0f}",
                f"{size:,}",
                versus,
            ]
        )
    return f"{urls:,} URLs a page\n\n" + table(headers, body)


def paired(times: dict[str, list[float]], reference: str, name: str) -> tuple[float, float, float]:
    """The ratio of ``name``'s speed to ``reference``'s in each round (both ran within seconds
    of each other), as its lower quartile, median and upper quartile: on a shared machine
    the speed drifts during a run by more than the differences measured, and a ratio of
    medians taken rounds apart carries that drift."""
    ratios = sorted(ref / mine for ref, mine in zip(times[reference], times[name], strict=True))
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return quartiles[0], median(ratios), quartiles[2]


def check(cases: dict[str, Render], urls: int) -> dict[str, int]:
    """Render each case once (a warm-up) and make sure it holds every URL; returns body sizes."""
    sizes = {}
    for name, render in cases.items():
        body = render()
        if not name.startswith("(") and count_urls(body) != urls:
            raise RuntimeError(f"{name}: {count_urls(body)} URLs rendered, expected {urls}")
        sizes[name] = len(body)
    return sizes


PROFILED: dict[str, Callable[[list[Row]], Render]] = {
    "engine": ours_engine,
    "wsgi": lambda rows: ours_wsgi(rows, gzip=False),
    "wsgi-gzip": lambda rows: ours_wsgi(rows, gzip=True),
    "wsgi-cold": ours_wsgi_cold_cached,
}


def profile(rows: list[Row], path: str, top: int = 15) -> str:
    """cProfile of one of our paths (`PROFILED`). cProfile sees only the calling thread,
    so ASGI's worker threads could not be in it: profile the WSGI twin."""
    render = PROFILED[path](rows)
    render()
    profiler = cProfile.Profile()
    profiler.enable()
    render()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime")
    stats.print_stats(top)
    return out.getvalue()


MINIMAL = "minimal f-string, no validation (ceiling)"
DJANGO = "django.contrib.sitemaps"
MINIMAL_GZ = "minimal f-string + zlib level 6 (ceiling)"
MINIMAL_ISAL = "minimal f-string + isal level 1 (our compressor)"
UNSETTLED = "ours: Sitemaps.wsgi, default cache, cold, ISA-L unsettled (before issue 20)"
ROWS = ", rows as entries"
ZLIB = {"compressor": "zlib"}  # the fallback: the default configuration without the fast extra
# Before issue 15 there was no choice: zlib it was (so the zlib rows are left out there).
CHOOSES = "compressor" in inspect.signature(Sitemaps).parameters
# Issue 15: the paths users run, each against the hand-rolled renderer of its table.
TARGETS = {
    "ours: Sitemaps.wsgi, cache=None": None,
    "ours: Sitemaps.wsgi, default cache, cold": 0.80,
    "ours: Sitemaps.asgi, cache=None": None,
    "ours: Sitemaps.asgi, default cache, cold": 0.75,
    "ours: Sitemaps.wsgi gzip, cache=None": None,
    "ours: Sitemaps.wsgi gzip, default cache, cold": None,
    "ours: Sitemaps.asgi gzip, cache=None": None,
    "ours: Sitemaps.asgi gzip, default cache, cold": 0.70,
    "ours: Sitemaps.wsgi, default cache, cold, compressor=zlib": None,
    UNSETTLED: None,
    "ours: Sitemaps.asgi, default cache, cold, compressor=zlib": None,
    "ours: Sitemaps.asgi gzip, default cache, cold, compressor=zlib": None,
    # A provider handing over its rows as they are (`ROWS`), as the ceiling reads them.
    f"ours: Sitemaps.wsgi, cache=None{ROWS}": None,
    f"ours: Sitemaps.wsgi, default cache, cold{ROWS}": None,
    f"ours: Sitemaps.asgi, default cache, cold{ROWS}": None,
    f"ours: Sitemaps.asgi gzip, default cache, cold{ROWS}": None,
}


def targets(times: dict[str, list[float]]) -> str:
    body = []
    for name, target in TARGETS.items():
        if name not in times:
            continue
        reference = MINIMAL_GZ if " gzip" in name else MINIMAL
        low, value, high = paired(times, reference, name)
        verdict = "" if target is None else f">= {target:.2f}x: {'met' if value >= target else 'not met'}"
        spread = f"{low:.2f}-{high:.2f}x"
        body.append([name.removeprefix("ours: "), reference.split(" (")[0], f"{value:.2f}x", spread, verdict])
    return table(
        ["path", "against", "ratio (median round)", "middle half of rounds", "target (issue 15)"], body
    )


# The chart's bars, top to bottom: the ceiling, our paths users run, the peers (chart.py).
CHARTED = {
    MINIMAL: "hand-rolled f-strings, no validation (ceiling)",
    "ours: Sitemaps.wsgi, cache=None": "ours: WSGI, cache=None",
    "ours: Sitemaps.wsgi, default cache, cold": "ours: WSGI, default cache, cold page",
    "ours: Sitemaps.asgi, default cache, cold": "ours: ASGI, default cache, cold page",
    "asgi-sitemaps (no escaping: invalid XML)": "asgi-sitemaps (no escaping: invalid XML)",
    "flask-sitemap": "flask-sitemap",
    DJANGO: "django.contrib.sitemaps",
}


def draw(path: str, times: dict[str, list[float]], urls: int, rounds: int, note: str) -> None:
    """The identity renderers of `CHARTED` as a bar chart at ``path``; ``note`` names the commit
    and the machine."""
    speeds = {label: urls / median(times[name]) for name, label in CHARTED.items() if name in times}
    chart.render_chart(
        path,
        speeds,
        reference=CHARTED[DJANGO],
        title=f"One sitemap page of {urls:,} URLs, identity, in-process (median of {rounds} rounds)",
        note=note,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="render", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 10,000 URLs (~10 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 9)")
    parser.add_argument("--urls", type=int, help="URLs in the page (default 50,000)")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="engine",
        choices=sorted(PROFILED),
        help="print a cProfile top-15 of our path (default: engine)",
    )
    parser.add_argument("--no-peers", action="store_true", help="leave out the peers' rows")
    parser.add_argument("--chart", metavar="PNG", help="draw the identity table as a bar chart (matplotlib)")
    args = parser.parse_args(argv)
    urls = args.urls or (10_000 if args.quick else 50_000)
    rounds = args.rounds or (3 if args.quick else 9)
    rows = make_rows(urls)
    compressor = getattr(Sitemaps(base_url=BASE_URL), "compressor", "zlib")

    plain: dict[str, Render] = {
        MINIMAL: minimal(rows),
        "ours: Engine.page (validate, escape, IRI->URI, W3C dates)": ours_engine(rows),
        "ours: Sitemaps.wsgi, cache=None": ours_wsgi(rows, gzip=False),
        "ours: Sitemaps.wsgi, default cache, cold": ours_wsgi_cold_cached(rows),
        "ours: Sitemaps.asgi, cache=None": ours_asgi(rows, gzip=False),
        "ours: Sitemaps.asgi, default cache, cold": ours_asgi(rows, gzip=False, cache=DEFAULT),
    }
    plain[f"ours: Sitemaps.wsgi, cache=None{ROWS}"] = ours_wsgi(rows, gzip=False, entries="rows")
    plain[f"ours: Sitemaps.wsgi, default cache, cold{ROWS}"] = ours_wsgi_cold_cached(rows, entries="rows")
    plain[f"ours: Sitemaps.asgi, default cache, cold{ROWS}"] = ours_asgi(
        rows, gzip=False, cache=DEFAULT, entries="rows"
    )
    fallback = ", default cache, cold, compressor=zlib"
    if CHOOSES:
        plain[f"ours: Sitemaps.wsgi{fallback}"] = ours_wsgi_cold_cached(rows, **ZLIB)
    if compressor == "isal":
        plain[UNSETTLED] = unsettled(ours_wsgi_cold_cached(rows))
        plain[f"ours: Sitemaps.asgi{fallback}"] = ours_asgi(rows, gzip=False, cache=DEFAULT, **ZLIB)
    if not args.no_peers:
        plain["asgi-sitemaps (no escaping: invalid XML)"] = asgi_sitemaps(rows)
        plain["flask-sitemap"] = flask_sitemap(rows)
        plain[DJANGO] = django_sitemaps(rows)
    gzipped: dict[str, Render] = {
        MINIMAL_GZ: minimal_gzip(rows),
        "ours: Sitemaps.wsgi gzip, cache=None": ours_wsgi(rows, gzip=True),
        "ours: Sitemaps.wsgi gzip, default cache, cold": ours_wsgi_cold_cached(rows, gzip=True),
        "ours: Sitemaps.asgi gzip, cache=None": ours_asgi(rows, gzip=True),
        "ours: Sitemaps.asgi gzip, default cache, cold": ours_asgi(rows, gzip=True, cache=DEFAULT),
        f"ours: Sitemaps.asgi gzip, default cache, cold{ROWS}": ours_asgi(
            rows, gzip=True, cache=DEFAULT, entries="rows"
        ),
    }
    if CHOOSES:
        gzipped[f"ours: Sitemaps.asgi gzip{fallback}"] = ours_asgi(rows, gzip=True, cache=DEFAULT, **ZLIB)
    gz_refs = {"minimal+zlib": MINIMAL_GZ}
    if compressor == "isal":  # our compressor: the same one for the ceiling, as a second reference
        gzipped[MINIMAL_ISAL] = minimal_gzip(rows, importlib.import_module("isal.isal_zlib"), 1)
        gz_refs["minimal+isal"] = MINIMAL_ISAL
    gzipped.update(compressor_only(minimal(rows)()))
    cached = cached_cases(rows)
    where = f"at {revision()}; {machine()}"  # taken before the run: edits made during it are not measured
    print(f"render: one page of {urls:,} URLs, {rounds} interleaved rounds, median; {where}")
    print(f"default configuration: Sitemaps(base_url=...), whose compressor here is {compressor}")
    sizes = check(plain | gzipped | cached, urls)
    times = interleaved(plain | gzipped | cached, rounds)
    refs = {"minimal": MINIMAL} if args.no_peers else {"minimal": MINIMAL, "django": DJANGO}
    print("\nidentity\n")
    print(report(plain, times, urls, refs, sizes))
    print("\ngzip\n")
    print(report(gzipped, times, urls, gz_refs, sizes))
    print("\ncached page, per request, in-process (no socket: see `serve` for the ratio to a bare app)\n")
    print(report(cached, times, urls, {"minimal": MINIMAL}, sizes))
    print("\nissue 15: the paths users run\n")
    print(targets(times))
    print("\nextensions: hreflang groups (3 languages) and images\n")
    print(extensions_table(rows, rounds))
    if args.chart:
        draw(args.chart, times, urls, rounds, where)
        print(f"\nchart: {args.chart}")
    if args.profile:
        print(f"\ncProfile of ours ({args.profile}), one page of {urls:,} URLs (by own time)\n")
        print(profile(rows, args.profile))


if __name__ == "__main__":
    main()
