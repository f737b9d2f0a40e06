"""Sections with extensions, over HTTP on both adapters: what each declares, how its pages are
cut (by count, bytes and news), the news window, and a section's languages expanded."""

from __future__ import annotations

import gzip
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from lxml import etree

from sitemap_middleware import Alternate, ConfigurationError, EntryError, Image, News, Sitemaps, Url
from sitemap_middleware.protocol.render import MAX_BYTES

from ..conftest import BASE, NOW, SitemapClient, counter
from ..crawl import EXTENSION_SECTIONS, assert_reciprocal, extension_shop, hreflang_groups
from ..crawl import crawl as crawl_tree
from ..xsd import NS, locs, parse, validate

if TYPE_CHECKING:
    from ..servers import Server

SITEMAP_NS = NS["sm"]
XHTML = "http://www.w3.org/1999/xhtml"
IMAGE = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS = "http://www.google.com/schemas/sitemap-news/0.9"
PUBLISHED = datetime.fromtimestamp(NOW, UTC) - timedelta(hours=1)

MakeClient = Callable[..., SitemapClient]


def crawl(client: SitemapClient) -> dict[str, etree._Element]:
    """Every page the index lists, validated, by path (the index's order)."""
    index = client.get("/sitemap-index.xml")
    assert index.status == 200
    pages = {}
    for loc in locs(validate(index.body)):
        path = loc.removeprefix(BASE)
        response = client.get(path)
        assert response.status == 200, path
        pages[path] = validate(response.body)
    return pages


def article(n: int, published: datetime = PUBLISHED) -> Url:
    return Url(
        f"/a/{n}",
        news=News(
            publication_name="The Example Times", language="en", publication_date=published, title=f"A{n}"
        ),
    )


# -- all four, validated -----------------------------------------------------------------------------


def test_pages_mixing_all_four_extensions_validate_against_the_official_schemas(
    make_client: MakeClient,
) -> None:
    sitemaps, expected = extension_shop()
    pages = crawl(make_client(sitemaps))
    found = Counter(etree.QName(element).text for page in pages.values() for element in page.iter())
    for tag in (f"{{{XHTML}}}link", f"{{{IMAGE}}}image", f"{{{VIDEO}}}video", f"{{{NEWS}}}news"):
        assert found[tag] > 0, tag
    served = [loc for page in pages.values() for loc in locs(page)]
    assert Counter(served) == Counter(expected)
    assert not any(
        name.startswith("skipped:") for counts in sitemaps.stats.snapshot().values() for name in counts
    )


def test_each_section_declares_exactly_the_namespaces_it_uses(make_client: MakeClient) -> None:
    sitemaps, _ = extension_shop()
    pages = crawl(make_client(sitemaps))
    declared = {
        path.removeprefix("/sitemap-").rsplit("-", 1)[0]: set(page.nsmap.values()) - {SITEMAP_NS}
        for path, page in pages.items()
    }
    assert declared == {
        name: {{"alternates": XHTML, "images": IMAGE, "videos": VIDEO, "news": NEWS}[used] for used in uses}
        for name, uses in EXTENSION_SECTIONS.items()
    }


def test_an_extension_its_section_did_not_declare_skips_the_entry_and_says_how_to_declare_it(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(lambda: ["/p/1", Url("/p/2", images=[Image("/i/2.jpg")]), "/p/3"])
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        response = make_client(sitemaps).get("/sitemap-products-1.xml")
    assert locs(validate(response.body)) == [f"{BASE}/p/1", f"{BASE}/p/3"]
    assert counter(sitemaps, "products", "skipped:undeclared extension") == 1
    assert "extensions=['images'" in caplog.text


def test_an_undeclared_extension_raises_in_strict_mode(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE, strict=True)
    sitemaps.provider("products", extensions=["images"])(lambda: [Url("/p/1", news=article(1).news)])
    with pytest.raises(EntryError, match="undeclared extension"):
        make_client(sitemaps).get("/sitemap-products-1.xml")


def test_a_bad_extension_skips_its_entry_counted_by_reason(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products", extensions=["images", "alternates"])(
        lambda: [
            Url("/p/1", images=["javascript:alert(1)"]),
            Url("/p/2", alternates=[Alternate("de", "/de/p/2")]),
            Url("/p/3", images=["/i/3.jpg"], alternates=[Alternate("en", "/p/3")]),
        ]
    )
    assert locs(validate(make_client(sitemaps).get("/sitemap-products-1.xml").body)) == [f"{BASE}/p/3"]
    counters = sitemaps.stats.snapshot()["products"]
    assert counters["skipped:invalid image loc"] == counters["skipped:hreflang group misses the page"] == 1


# -- registration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"extensions": ["image"]}, id="unknown-extension"),
        pytest.param({"extensions": "images"}, id="extensions-a-string"),
        pytest.param({"news_window": timedelta(days=2)}, id="window-without-news"),
        pytest.param({"extensions": ["news"], "news_window": 2}, id="window-not-a-timedelta"),
        pytest.param({"extensions": ["news"], "news_window": timedelta(0)}, id="window-of-nothing"),
        pytest.param({"languages": []}, id="no-language"),
        pytest.param({"languages": "en"}, id="languages-a-string"),
        pytest.param({"languages": ["en", "EN"]}, id="language-twice"),
        pytest.param({"languages": ["en", "english"]}, id="not-a-language"),
        pytest.param({"languages": ["en", "x-default"]}, id="x-default-as-a-language"),
        pytest.param({"languages": {"en": "", "de": "de"}}, id="prefix-without-slash"),
        pytest.param({"languages": {"en": "", "de": "/de/"}}, id="prefix-with-trailing-slash"),
        pytest.param({"languages": {"en": "/x", "de": "/x"}}, id="one-prefix-twice"),
        pytest.param({"languages": ["en", "de"], "x_default": "fr"}, id="x-default-not-a-language"),
        pytest.param({"x_default": "en"}, id="x-default-without-languages"),
        pytest.param({"languages": ["en", "de"], "extensions": ["news"]}, id="languages-with-news"),
    ],
)
def test_impossible_declarations_are_refused_at_registration(options: dict[str, Any]) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    with pytest.raises(ConfigurationError):
        sitemaps.add_provider("products", lambda: [], **options)
    assert sitemaps.sections == ()


# -- cuts ------------------------------------------------------------------------------------------


def test_news_pages_are_cut_at_a_thousand_news_entries(make_client: MakeClient) -> None:
    def entries() -> Iterator[Url]:
        for n in range(2500):
            yield article(n)
            if n % 2:
                yield Url(f"/plain/{n}")  # no news: never counts towards the cut

    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW)
    sitemaps.provider("news", extensions=["news"])(entries)
    pages = crawl(make_client(sitemaps))
    news_per_page = [len(page.findall(f"sm:url/{{{NEWS}}}news", NS)) for page in pages.values()]
    assert news_per_page == [1000, 1000, 500]
    served = [loc for page in pages.values() for loc in locs(page)]
    assert len(served) == len(set(served)) == 2500 + 1250


def test_a_thousand_long_images_on_each_of_60_urls_cut_pages_by_bytes(make_client: MakeClient) -> None:
    # About 1.05 MB per URL, 63 MB in all: more than one file of 50 MiB can hold.
    def products() -> Iterator[Url]:
        for n in range(60):
            yield Url(
                f"/p/{n}",
                images=[Image(f"https://cdn.example.net/{n}/{i:04d}/{'x' * 990}.jpg") for i in range(1000)],
            )

    sitemaps = Sitemaps(base_url=BASE, cache=None)
    sitemaps.provider("products", extensions=["images"])(products)
    client = make_client(sitemaps)
    index = locs(validate(client.get("/sitemap-index.xml").body))
    assert len(index) == 2
    served: list[str] = []
    for loc in index:
        body = client.get(loc.removeprefix(BASE)).body
        assert len(body) <= MAX_BYTES
        page = parse(body)
        assert all(len(url.findall(f"{{{IMAGE}}}image")) == 1000 for url in page)
        served += locs(page)
    assert served == [f"{BASE}/p/{n}" for n in range(60)]
    assert client.get("/sitemap-products-3.xml").status == 404


@pytest.mark.parametrize("page_size", [50_000, 20])
def test_many_alternates_cut_pages_by_bytes_and_the_index_lists_exactly_those(
    make_client: MakeClient, page_size: int
) -> None:
    tags = [f"{a}{b}" for a in "abcdefghij" for b in "klmno"]  # 50 languages

    def products() -> Iterator[Url]:
        for n in range(20):
            group = [Alternate(tag, f"/{tag}/p/{n}") for tag in tags]
            yield from (Url(alternate.href, alternates=group) for alternate in group)

    sitemaps = Sitemaps(base_url=BASE, max_page_bytes=100_000)  # about 25 URLs of 50 alternates
    sitemaps.provider("products", extensions=["alternates"], page_size=page_size)(products)
    client = make_client(sitemaps)
    pages = crawl(client)
    assert len(pages) > 1
    assert all(len(client.get(path).body) <= 100_000 for path in pages)
    served = [loc for page in pages.values() for loc in locs(page)]
    assert len(served) == len(set(served)) == 1000
    assert client.get(f"/sitemap-products-{len(pages) + 1}.xml").status == 404


# -- the news window -------------------------------------------------------------------------------


def test_without_a_window_every_article_keeps_its_news(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW)
    old = PUBLISHED - timedelta(days=30)
    sitemaps.provider("news", extensions=["news"])(lambda: [article(1), article(2, old)])
    [page] = crawl(make_client(sitemaps)).values()
    assert len(page.findall(f"sm:url/{{{NEWS}}}news", NS)) == 2


def test_an_article_outside_the_news_window_keeps_its_url_and_loses_its_news_counted(
    make_client: MakeClient,
) -> None:
    now = datetime.fromtimestamp(NOW, UTC)
    dates = [now - timedelta(hours=47), now - timedelta(hours=49), (now - timedelta(days=2)).date(), now]
    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW)
    sitemaps.provider("news", extensions=["news"], news_window=timedelta(days=2))(
        lambda: [article(n, published) for n, published in enumerate(dates)]  # type: ignore[arg-type]
    )
    [page] = crawl(make_client(sitemaps)).values()
    assert locs(page) == [f"{BASE}/a/{n}" for n in range(4)]
    with_news = [
        url.findtext("sm:loc", namespaces=NS) for url in page if url.find(f"{{{NEWS}}}news") is not None
    ]
    assert with_news == [f"{BASE}/a/0", f"{BASE}/a/2", f"{BASE}/a/3"]  # a date alone is its whole day
    assert counter(sitemaps, "news", "news_outside_window") == 1
    assert not any(name.startswith("skipped:") for name in sitemaps.stats.snapshot()["news"])


def test_the_news_window_never_raises_in_strict_mode(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW, strict=True)
    old = PUBLISHED - timedelta(days=3)
    sitemaps.provider("news", extensions=["news"], news_window=timedelta(days=2))(lambda: [article(1, old)])
    assert make_client(sitemaps).get("/sitemap-news-1.xml").status == 200


# -- languages -------------------------------------------------------------------------------------


def test_a_section_with_languages_serves_each_entry_in_each_language_with_the_whole_group(
    make_client: MakeClient,
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products", languages=["en", "de", "fr-CH"], x_default="en", extensions=["images"])(
        lambda: [Url("/p/1", priority=0.5, images=["/i/1.jpg"]), "/p/2"]
    )
    [page] = crawl(make_client(sitemaps)).values()
    assert locs(page) == [f"{BASE}/{lang}/p/{n}" for n in (1, 2) for lang in ("en", "de", "fr-CH")]
    group_1 = [("en", f"{BASE}/en/p/1"), ("de", f"{BASE}/de/p/1"), ("fr-CH", f"{BASE}/fr-CH/p/1")]
    groups = hreflang_groups([page])
    assert all(groups[loc] == [*group_1, ("x-default", f"{BASE}/en/p/1")] for _, loc in group_1)
    assert all(len(url.findall(f"{{{IMAGE}}}image")) == (1 if "/p/1" in url[0].text else 0) for url in page)
    assert all(
        url.findtext("sm:priority", namespaces=NS) == ("0.5" if "/p/1" in url[0].text else None)
        for url in page
    )


def test_a_section_of_one_language_still_gets_its_prefix_and_its_group(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages", languages=["en"], x_default="en")(lambda: ["/p/1"])
    [page] = crawl(make_client(sitemaps)).values()
    assert hreflang_groups([page]) == {
        f"{BASE}/en/p/1": [("en", f"{BASE}/en/p/1"), ("x-default", f"{BASE}/en/p/1")]
    }


def test_language_prefixes_may_be_given_and_the_default_language_may_have_none(
    make_client: MakeClient,
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages", languages={"en": "", "pt-BR": "/br"})(lambda: ["/", "/about?x=1&y=2"])
    [page] = crawl(make_client(sitemaps)).values()
    assert locs(page) == [f"{BASE}/", f"{BASE}/br/", f"{BASE}/about?x=1&y=2", f"{BASE}/br/about?x=1&y=2"]
    assert hreflang_groups([page])[f"{BASE}/br/"] == [("en", f"{BASE}/"), ("pt-BR", f"{BASE}/br/")]


def test_language_urls_live_below_the_mount_path(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=f"{BASE}/store")
    sitemaps.provider("pages", languages=["en", "de"])(lambda: ["/p/1", f"{BASE}/store/shop/p/2"])
    client = make_client(sitemaps, mount="/shop")
    page = validate(client.get("/sitemap-pages-1.xml").body)
    assert locs(page) == [
        f"{BASE}/store/shop/en/p/1",
        f"{BASE}/store/shop/de/p/1",
        f"{BASE}/store/shop/en/p/2",
        f"{BASE}/store/shop/de/p/2",
    ]


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        pytest.param(Url("/p/1", alternates=[Alternate("en", "/p/1")]), "invalid alternates", id="own-group"),
        pytest.param(f"{BASE}/elsewhere", "invalid loc", id="outside-the-mount-path"),
        pytest.param("/" + "a" * 2020, "loc too long", id="too-long-with-a-prefix"),
        pytest.param(Url("/p/1", images=["ftp://x.example/i.jpg"]), "invalid image loc", id="bad-image"),
    ],
)
def test_a_bad_entry_of_a_section_with_languages_is_skipped_once_whole(
    make_client: MakeClient, entry: object, reason: str
) -> None:
    sitemaps = Sitemaps(base_url=f"{BASE}/store")
    sitemaps.provider("pages", languages={"en": "", "de": "/deutsch"}, extensions=["images"])(
        lambda: ["/ok", entry, "/ok2"]
    )
    page = validate(make_client(sitemaps).get("/sitemap-pages-1.xml").body)
    assert locs(page) == [
        f"{BASE}/store/ok",
        f"{BASE}/store/deutsch/ok",
        f"{BASE}/store/ok2",
        f"{BASE}/store/deutsch/ok2",
    ]
    counters = sitemaps.stats.snapshot()["pages"]
    assert {name: value for name, value in counters.items() if name.startswith("skipped:")} == {
        f"skipped:{reason}": 1
    }


@pytest.mark.parametrize("count", [False, True])
@pytest.mark.parametrize("page_size", [1, 2, 5, 7])
def test_language_urls_are_each_served_once_across_pages_cut_inside_an_entry(
    make_client: MakeClient, page_size: int, count: bool
) -> None:
    def rows(offset: int = 0, limit: int | None = None) -> list[str]:
        return [f"/p/{n}" for n in range(10)][offset : None if limit is None else offset + limit]

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider(
        "products",
        rows,
        page_size=page_size,
        languages=["en", "de", "fr"],
        count=(lambda: 10) if count else None,
    )
    pages = crawl(make_client(sitemaps))
    assert len(pages) == -(-30 // page_size)
    served = [loc for page in pages.values() for loc in locs(page)]
    assert served == [f"{BASE}/{lang}/p/{n}" for n in range(10) for lang in ("en", "de", "fr")]
    groups = hreflang_groups(pages.values())
    for loc in served:
        path = "/p/" + loc.rsplit("/p/", 1)[1]
        assert groups[loc] == [(lang, f"{BASE}/{lang}{path}") for lang in ("en", "de", "fr")]
    assert counter(sitemaps, "products", "count_mismatch") == 0


def test_a_section_with_languages_never_holds_items_times_languages(make_client: MakeClient) -> None:
    pulled = 0
    languages = [f"{a}{b}" for a in "abcde" for b in "fghij"]  # 25

    def endless() -> Iterator[str]:
        nonlocal pulled
        while True:
            pulled += 1
            yield f"/p/{pulled}"

    sitemaps = Sitemaps(base_url=BASE, page_size=1000)
    sitemaps.provider("products", languages=languages)(endless)
    page = validate(make_client(sitemaps).get("/sitemap-products-1.xml").body)
    assert len(page) == 1000
    assert pulled <= 1000 // 25 + 1024  # the page's 40 entries, and at most one batch more


# -- real servers ----------------------------------------------------------------------------------


@pytest.mark.server
def test_pages_mixing_all_four_extensions_validate_under_real_servers(
    serve: Callable[[Sitemaps], Server],
) -> None:
    sitemaps, expected = extension_shop()
    server = serve(sitemaps)
    tree = crawl_tree(server.fetch)  # validates the index and every page it lists
    assert Counter(loc for page in tree.pages.values() for loc in page) == Counter(expected)
    assert_reciprocal(hreflang_groups(validate(server.fetch(loc.removeprefix(BASE))) for loc in tree.index))
    mixed = validate(gzip.decompress(server.fetch("/sitemap-mixed-1.xml.gz")))
    assert len(mixed.findall(f"sm:url/{{{NEWS}}}news", NS)) == 2
