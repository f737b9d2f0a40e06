"""Property tests (hypothesis) of extensions over HTTP, on both adapters.

Hypothesis builds sections whose entries carry hreflang groups (spread over two sections),
images, videos and news with hostile text (control characters, ``]]>``, ``&``, quotes,
right-to-left and astral characters), mixed with entries each broken in one extension, and
a section that declares its languages. Whatever it builds: every page served is
well-formed and valid against the official schemas, every valid entry is served exactly
once with its text as given (less what XML cannot carry), every hreflang group is
reciprocal across pages and sections, and only the broken entries are skipped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_middleware import Alternate, Image, News, Sitemaps, Url, Video
from sitemap_middleware.protocol.xmltext import xml_text

from ..conftest import BASE, SitemapClient
from ..crawl import assert_reciprocal, hreflang_groups
from ..xsd import NS, locs, validate

VIDEO = "{http://www.google.com/schemas/sitemap-video/1.1}"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"
ALL = ["alternates", "images", "videos", "news"]
PUBLISHED = datetime(2026, 1, 1, tzinfo=UTC)

MakeClient = Callable[..., SitemapClient]

FUZZ = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

HOSTILE_PIECES = [
    *["]]>", "&", "&amp;", "<", ">", '"', "'", "<![CDATA[", "-->", "\t", "\n", "\r", "\r\n"],
    *["\u202e", "\u200f", "\u05e9\u05dc\u05d5\u05dd", "\u0645\u0631\u062d\u0628\u0627", "\ufeff"],
    *["\U0001f969", "\U0001d11e", "\U00020000", "\U0010fffd", "\U0001fffe"],
    *[
        "\x00",
        "\x01",
        "\x0b",
        "\x1f",
        "\ufffe",
        "\uffff",
        "\ud800",
        "\udfff",
    ],  # dropped: XML cannot carry them
]
hostile_text = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(HOSTILE_PIECES)), max_size=6).map(
    "".join
)
# Text a required field accepts: something XML can carry is left once the rest is dropped.
required_text = st.tuples(
    hostile_text, st.sampled_from(["a", "\u05e9", "\U0001f969", "]]>", "&"]), hostile_text
).map("".join)
TAGS = ["en", "de", "fr-CH", "zh-Hant-TW", "pt-BR", "es-419", "gsw"]
image_locs = st.sampled_from(
    ["/i/1.jpg", "https://cdn.example.net/i/2.jpg?w=1&h=2", "//cdn.example.net/caf\u00e9.png", "/i/a%20b.jpg"]
)


@st.composite
def extras(draw: st.DrawFn) -> dict[str, Any]:
    """Valid images, videos and news for one URL, their text hostile."""
    fields: dict[str, Any] = {}
    if draw(st.booleans()):
        fields["images"] = draw(st.lists(image_locs.map(Image), max_size=3))
    if draw(st.booleans()):
        title = draw(required_text.filter(lambda text: len(xml_text(text)) <= 100))
        fields["videos"] = [
            Video(
                thumbnail_loc="/t/1.jpg",
                title=title,
                description=draw(required_text),
                content_loc="https://cdn.example.net/v/1.mp4",
                tags=draw(st.lists(required_text, max_size=3)),
            )
        ]
    if draw(st.booleans()):
        fields["news"] = News(draw(required_text), "en", PUBLISHED, draw(required_text))
    return fields


@st.composite
def groups(draw: st.DrawFn, number: int) -> list[tuple[str, Url]]:
    """One hreflang group as (section, entry) pairs: a URL per language, spread over two sections."""
    tags = draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=4, unique=True))
    group = [Alternate(tag, f"/g{number}/{tag}") for tag in tags]
    if draw(st.booleans()):
        group.append(Alternate("x-default", draw(st.sampled_from(group)).href))
    entries = []
    for alternate in group:
        if alternate.hreflang != "x-default":
            url = Url(alternate.href, alternates=draw(st.permutations(group)), **draw(extras()))
            entries.append((draw(st.sampled_from(["one", "two"])), url))
    return entries


# Entries each broken in exactly one extension: each must be skipped, and counted.
BROKEN = [
    Url("/bad/1", alternates=[Alternate("english", "/bad/1")]),
    Url("/bad/2", alternates=[Alternate("en", "/bad/2"), Alternate("EN", "/bad/2b")]),
    Url("/bad/3", alternates=[Alternate("en", "/elsewhere")]),
    Url("/bad/4", images=["javascript:alert(1)"]),
    Url("/bad/5", videos=[Video("/t.jpg", "t" * 101, "d", content_loc="/v.mp4")]),
    Url("/bad/6", videos=[Video("/t.jpg", "t", "d")]),
    Url("/bad/7", news=News("Times", "en-US", PUBLISHED, "t")),
    Url("/bad/8", news=News("\x00\x01", "en", PUBLISHED, "t")),
]


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[tuple[str, object]], list[str], list[str]]:
    """(section, entry) pairs, every loc served in sections "one"/"two", and the languages of "three"."""
    pairs = [pair for number in range(draw(st.integers(0, 5))) for pair in draw(groups(number))]
    pairs += [(draw(st.sampled_from(["one", "two"])), url) for url in draw(st.lists(st.sampled_from(BROKEN)))]
    served = [BASE + url.loc for _, url in pairs if isinstance(url, Url) and url not in BROKEN]
    pairs = draw(st.permutations(pairs))
    languages = draw(st.lists(st.sampled_from(TAGS), min_size=1, max_size=3, unique=True))
    return pairs, served, languages


paths = st.lists(st.text("abcxyz019-_~&=", min_size=1, max_size=12), max_size=6, unique=True)


def crawl(client: SitemapClient) -> dict[str, Any]:
    """Every page the index lists, validated; page 1 of each section is asked for in any case
    (it renders, and counts its skips, even when nothing in it is valid)."""
    for name in ("one", "two", "three"):
        assert client.get(f"/sitemap-{name}-1.xml").status in (200, 404)
    index = client.get("/sitemap-index.xml")
    if index.status == 404:
        return {}
    pages = {}
    for loc in locs(validate(index.body)):
        response = client.get(loc.removeprefix(BASE))
        assert response.status == 200
        pages[loc] = validate(response.body)  # well-formed, and valid against the official XSDs
    return pages


@FUZZ
@given(
    tree=trees(),
    items=paths,
    x_default=st.booleans(),
    page_size=st.integers(1, 4),
    max_bytes=st.sampled_from([16_384, 50 * 1024 * 1024]),
)
def test_any_entries_with_extensions_give_valid_pages_each_valid_url_once_and_reciprocal_groups(
    make_client: MakeClient,
    tree: tuple[list[tuple[str, object]], list[str], list[str]],
    items: list[str],
    x_default: bool,
    page_size: int,
    max_bytes: int,
) -> None:
    pairs, served, languages = tree
    sitemaps = Sitemaps(base_url=BASE, max_page_bytes=max_bytes)
    for name in ("one", "two"):
        entries = [entry for section, entry in pairs if section == name]
        sitemaps.add_provider(name, lambda entries=entries: entries, page_size=page_size, extensions=ALL)
    sitemaps.add_provider(
        "three",
        lambda: ["/l/" + item for item in items],
        page_size=page_size,
        languages=languages,
        x_default=languages[0] if x_default else None,
        extensions=["images"],
    )
    pages = crawl(make_client(sitemaps))

    expected = served + [f"{BASE}/{tag}/l/{item}" for item in items for tag in languages]
    assert Counter(loc for page in pages.values() for loc in locs(page)) == Counter(expected)
    groups = hreflang_groups(pages.values())
    assert_reciprocal(groups)
    assert all(loc in groups for loc in expected if "/l/" in loc or "/g" in loc)
    counters = sitemaps.stats.snapshot()
    skipped = sum(
        value for section in counters.values() for name, value in section.items() if "skipped" in name
    )
    assert skipped == sum(isinstance(entry, Url) and entry in BROKEN for _, entry in pairs)

    # Text reads back as given, less what XML 1.0 cannot carry.
    written = {BASE + url.loc: url for _, url in pairs if isinstance(url, Url) and url not in BROKEN}
    for page in pages.values():
        for element in page:
            url = written.get(element.findtext("sm:loc", namespaces=NS) or "")
            if url is None:
                continue
            if url.videos:
                video = url.videos[0]
                assert element.findtext(f"{VIDEO}video/{VIDEO}title") == xml_text(video.title)
                assert element.findtext(f"{VIDEO}video/{VIDEO}description") == xml_text(video.description)
                assert [tag.text for tag in element.iter(f"{VIDEO}tag")] == [xml_text(t) for t in video.tags]
            if url.news is not None:
                assert element.findtext(f"{NEWS}news/{NEWS}title") == xml_text(url.news.title)
                name = element.findtext(f"{NEWS}news/{NEWS}publication/{NEWS}name")
                assert name == xml_text(url.news.publication_name)
