"""One entry's extensions in, valid elements out (or an `EntryError` with the reason): hreflang
alternates, images, videos and news, each by its rules, and the text they carry round-tripped."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from lxml import etree

from sitemap_middleware import Alternate, EntryError, Image, News, Url, Video
from sitemap_middleware.protocol.entries import Normaliser
from sitemap_middleware.protocol.extensions import Extensions
from sitemap_middleware.protocol.uris import Site

from ..conftest import BASE
from ..xsd import parse, validate

XHTML = "{http://www.w3.org/1999/xhtml}"
IMAGE = "{http://www.google.com/schemas/sitemap-image/1.1}"
VIDEO = "{http://www.google.com/schemas/sitemap-video/1.1}"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"
ALL = Extensions.declare(["alternates", "images", "videos", "news"])
MOMENT = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
VIDEO_OK: dict[str, Any] = {
    "thumbnail_loc": "/t/1.jpg",
    "title": "Grilling steaks",
    "description": "How to grill a steak",
    "content_loc": "/v/1.mp4",
}
NEWS_OK: dict[str, Any] = {
    "publication_name": "The Example Times",
    "language": "en",
    "publication_date": MOMENT,
    "title": "Companies A, B in merger talks",
}


def normaliser(extensions: Extensions = ALL) -> Normaliser:
    return Normaliser(Site.parse(BASE), extensions=extensions)


def document(*raws: object, extensions: Extensions = ALL) -> bytes:
    """Raw entries as one urlset, as the page writer writes it for a section declaring ``extensions``."""
    element = normaliser(extensions).element
    return extensions.head + "".join(element(raw)[0] for raw in raws).encode() + b"</urlset>\n"


def url_of(raw: object) -> etree._Element:
    """The one ``<url>`` of ``raw``, validated in a urlset against the official schemas."""
    [url] = validate(document(raw))
    return url


def reason_of(raw: object, extensions: Extensions = ALL) -> str:
    with pytest.raises(EntryError) as caught:
        normaliser(extensions).element(raw)
    return caught.value.reason


def links(url: etree._Element) -> list[tuple[str, str]]:
    found = []
    for link in url.iter(f"{XHTML}link"):
        assert link.get("rel") == "alternate"
        found.append((link.get("hreflang") or "", link.get("href") or ""))
    return found


def video(**fields: Any) -> Video:
    return Video(**{**VIDEO_OK, **fields})


def news(**fields: Any) -> News:
    return News(**{**NEWS_OK, **fields})


# -- hreflang alternates ---------------------------------------------------------------------------


def test_alternates_are_written_as_xhtml_links_after_the_core_fields() -> None:
    url = url_of(
        Url(
            "/p/1",
            lastmod=MOMENT,
            priority=0.5,
            alternates=[Alternate("en", "/p/1"), Alternate("de", "/de/p/1"), Alternate("x-default", "/p/1")],
        )
    )
    assert [etree.QName(child).localname for child in url] == [
        "loc",
        "lastmod",
        "priority",
        "link",
        "link",
        "link",
    ]
    assert links(url) == [("en", f"{BASE}/p/1"), ("de", f"{BASE}/de/p/1"), ("x-default", f"{BASE}/p/1")]


@pytest.mark.parametrize(
    ("tag", "written"),
    [
        pytest.param("en", "en", id="language"),
        pytest.param("EN-us", "en-US", id="language-region-case"),
        pytest.param("zh-hant-tw", "zh-Hant-TW", id="script-and-region"),
        pytest.param("es-419", "es-419", id="un-m49-region"),
        pytest.param("gsw", "gsw", id="three-letter-language"),
        pytest.param("X-Default", "x-default", id="x-default-case"),
    ],
)
def test_hreflang_is_written_in_its_canonical_case(tag: str, written: str) -> None:
    url = url_of(Url("/p/1", alternates=[Alternate(tag, "/p/1")]))
    assert links(url) == [(written, f"{BASE}/p/1")]


@pytest.mark.parametrize(
    "tag",
    [
        pytest.param("english", id="a-word"),
        pytest.param("en_US", id="underscore"),
        pytest.param("e", id="one-letter"),
        pytest.param("en-", id="trailing-dash"),
        pytest.param("", id="empty"),
        pytest.param("en-UK", id="uk-is-gb"),
        pytest.param("en-US-x-private", id="private-use"),
        pytest.param("de\u00e9", id="non-ascii"),
        pytest.param("x-default ", id="space"),
        pytest.param(12, id="not-a-string"),
        pytest.param(None, id="none"),
    ],
)
def test_invalid_hreflang_is_rejected(tag: object) -> None:
    raw = Url("/p/1", alternates=[Alternate(tag, "/p/1")])  # type: ignore[arg-type]
    assert reason_of(raw) == "invalid hreflang"


@pytest.mark.parametrize(
    "href",
    [
        pytest.param("https://evil.example/p/1", id="other-host"),
        pytest.param("http://shop.example/p/1", id="other-scheme"),
        pytest.param("javascript:alert(1)", id="javascript"),
        pytest.param("/p/1\n", id="control"),
        pytest.param("", id="empty"),
        pytest.param(None, id="none"),
        pytest.param("/" + "a" * 2047, id="too-long"),
    ],
)
def test_alternate_href_follows_the_rules_of_loc(href: object) -> None:
    raw = Url("/p/1", alternates=[Alternate("en", "/p/1"), Alternate("de", href)])  # type: ignore[arg-type]
    assert reason_of(raw) == "invalid alternate href"


def test_alternate_hrefs_are_made_absolute_and_canonical_like_loc() -> None:
    url = url_of(
        Url(
            "/p/1",
            alternates=[
                Alternate("en", "/p/1"),
                Alternate("fr", "https://SHOP.example/fr/caf\u00e9?a=1&b=2"),
            ],
        )
    )
    assert links(url)[1] == ("fr", f"{BASE}/fr/caf%C3%A9?a=1&b=2")


@pytest.mark.parametrize(
    "group",
    [
        pytest.param([Alternate("de", "/de/p/1"), Alternate("fr", "/fr/p/1")], id="other-pages-only"),
        pytest.param([Alternate("en", "/p/1/"), Alternate("de", "/de/p/1")], id="near-miss"),
    ],
)
def test_a_group_must_include_the_page_itself(group: list[Alternate]) -> None:
    assert reason_of(Url("/p/1", alternates=group)) == "hreflang group misses the page"


def test_the_page_is_found_in_its_group_by_its_canonical_url() -> None:
    url = url_of(Url("/p/caf\u00e9", alternates=[Alternate("fr", "https://shop.example/p/caf%C3%A9")]))
    assert links(url) == [("fr", f"{BASE}/p/caf%C3%A9")]


@pytest.mark.parametrize(
    "group",
    [
        pytest.param([Alternate("en", "/p/1"), Alternate("en", "/en/p/1")], id="same-tag"),
        pytest.param([Alternate("en-US", "/p/1"), Alternate("en-us", "/us/p/1")], id="same-tag-other-case"),
        pytest.param(
            [Alternate("en", "/p/1"), Alternate("x-default", "/p/1"), Alternate("X-DEFAULT", "/int/p/1")],
            id="two-x-defaults",
        ),
    ],
)
def test_no_tag_twice_in_a_group_and_one_x_default_at_most(group: list[Alternate]) -> None:
    assert reason_of(Url("/p/1", alternates=group)) == "duplicate hreflang"


@pytest.mark.parametrize(
    "alternates",
    [
        pytest.param("en", id="a-string"),
        pytest.param([("en",)], id="a-one-tuple"),
        pytest.param([{"hreflang": "en"}], id="mapping-without-href"),
        pytest.param([{"hreflang": "en", "href": "/p/1", "rel": "x"}], id="mapping-with-other-keys"),
        pytest.param(42, id="a-number"),
    ],
)
def test_alternates_of_another_shape_are_rejected(alternates: object) -> None:
    assert reason_of(Url("/p/1", alternates=alternates)) == "invalid alternates"  # type: ignore[arg-type]


def test_alternates_as_pairs_and_mappings_are_read_like_records() -> None:
    raw = Url("/p/1", alternates=[("en", "/p/1"), {"hreflang": "de", "href": "/de/p/1"}])  # type: ignore[list-item]
    assert links(url_of(raw)) == [("en", f"{BASE}/p/1"), ("de", f"{BASE}/de/p/1")]


def test_fifty_alternates_are_accepted() -> None:
    tags = [f"{a}{b}" for a in "abcdefghij" for b in "klmno"]
    group = [Alternate(tag, f"/{tag}/p/1") for tag in tags]
    url = url_of(Url("/aa/p/1", alternates=[Alternate("x-default", "/aa/p/1"), *group]))
    assert len(links(url)) == 51


# -- images ----------------------------------------------------------------------------------------


def test_image_is_written_with_its_loc_only() -> None:
    url = url_of(Url("/p/1", images=[Image("/img/1.jpg"), "/img/2.jpg"]))  # a string is a loc alone
    images = url.findall(f"{IMAGE}image")
    assert [[child.tag for child in image] for image in images] == [[f"{IMAGE}loc"], [f"{IMAGE}loc"]]
    assert [image.findtext(f"{IMAGE}loc") for image in images] == [f"{BASE}/img/1.jpg", f"{BASE}/img/2.jpg"]


def test_image_record_has_no_field_google_retired() -> None:
    # Google, 2022: image:caption, image:title, image:geo_location and image:license are ignored.
    assert Image.__struct_fields__ == ("loc",)


@pytest.mark.parametrize(
    ("loc", "written"),
    [
        pytest.param("https://cdn.example.net/i/1.jpg", "https://cdn.example.net/i/1.jpg", id="cdn"),
        pytest.param("http://cdn.example.net/i/1.jpg", "http://cdn.example.net/i/1.jpg", id="cdn-http"),
        pytest.param("//cdn.example.net/i/1.jpg", "https://cdn.example.net/i/1.jpg", id="scheme-relative"),
        pytest.param(
            "https://b\u00fccher.example/caf\u00e9.jpg",
            "https://xn--bcher-kva.example/caf%C3%A9.jpg",
            id="idn",
        ),
        pytest.param(
            "https://CDN.example.net:443/a/../i.jpg#x", "https://cdn.example.net/i.jpg", id="canonical"
        ),
        pytest.param("/img/caf\u00e9.jpg?w=1&h=2", f"{BASE}/img/caf%C3%A9.jpg?w=1&h=2", id="relative"),
    ],
)
def test_image_loc_may_be_on_any_host_and_is_canonical(loc: str, written: str) -> None:
    url = url_of(Url("/p/1", images=[Image(loc)]))
    assert url.findtext(f"{IMAGE}image/{IMAGE}loc") == written


@pytest.mark.parametrize(
    "loc",
    [
        pytest.param("javascript:alert(1)", id="javascript"),
        pytest.param("ftp://cdn.example.net/i.jpg", id="ftp"),
        pytest.param("data:image/png;base64,AAAA", id="data"),
        pytest.param("https://", id="no-host"),
        pytest.param("https://user:pw@cdn.example.net/i.jpg", id="credentials"),
        pytest.param("/i.jpg\x00", id="control"),
        pytest.param("", id="empty"),
        pytest.param(None, id="none"),
        pytest.param("https://cdn.example.net/" + "i" * 2030, id="too-long"),
    ],
)
def test_invalid_image_loc_is_rejected(loc: object) -> None:
    assert reason_of(Url("/p/1", images=[Image(loc)])) == "invalid image loc"  # type: ignore[arg-type]


def test_a_thousand_images_are_accepted_and_one_more_is_not() -> None:
    images = [Image(f"/img/{n}.jpg") for n in range(1000)]
    assert len(url_of(Url("/p/1", images=images)).findall(f"{IMAGE}image")) == 1000
    assert reason_of(Url("/p/1", images=[*images, Image("/img/x.jpg")])) == "too many images"


def test_too_many_images_from_a_generator_are_never_all_read() -> None:
    pulled = 0

    def endless() -> Any:
        nonlocal pulled
        while True:
            pulled += 1
            yield Image("/img/1.jpg")

    assert reason_of(Url("/p/1", images=endless())) == "too many images"
    assert pulled == 1001


@pytest.mark.parametrize(
    "images",
    [
        pytest.param("/img/1.jpg", id="a-string"),
        pytest.param([{"loc": "/i.jpg", "caption": "retired"}], id="retired-caption"),
        pytest.param([{"loc": "/i.jpg", "title": "retired"}], id="retired-title"),
        pytest.param([42], id="a-number"),
    ],
)
def test_images_of_another_shape_are_rejected(images: object) -> None:
    assert reason_of(Url("/p/1", images=images)) == "invalid images"  # type: ignore[arg-type]


# -- videos ----------------------------------------------------------------------------------------

VIDEO_CHILDREN = [  # sitemap-video.xsd's sequence, less the tags Google retired in 2022
    "thumbnail_loc",
    "title",
    "description",
    "content_loc",
    "player_loc",
    "duration",
    "expiration_date",
    "rating",
    "view_count",
    "publication_date",
    "tag",
    "tag",
    "family_friendly",
    "restriction",
    "requires_subscription",
    "uploader",
    "platform",
    "live",
]


def full_video() -> Video:
    return Video(
        thumbnail_loc="https://cdn.example.net/t/1.jpg",
        title="Grilling steaks for summer",
        description="Alkis shows you how to get perfectly done steaks every time",
        content_loc="https://cdn.example.net/v/1.mp4",
        player_loc="/player?video=1&autoplay=0",
        duration=600,
        expiration_date=date(2030, 1, 1),
        rating=4.2,
        view_count=12345,
        publication_date=datetime(2024, 5, 1, 14, 30, tzinfo=timezone(timedelta(hours=2))),
        family_friendly=True,
        restriction=("allow", ["ie", "GB"]),
        platform=("deny", ["TV"]),
        requires_subscription=False,
        uploader="GrillyMcGrillerson",
        uploader_info="/users/grilly",
        live=False,
        tags=["steak", "summer"],
    )


def test_video_is_written_in_schema_order_without_retired_tags() -> None:
    [element] = url_of(Url("/p/1", videos=[full_video()])).findall(f"{VIDEO}video")
    assert [etree.QName(child).localname for child in element] == VIDEO_CHILDREN
    text = {etree.QName(child).localname: child.text for child in element}
    assert text["player_loc"] == f"{BASE}/player?video=1&autoplay=0"
    assert text["publication_date"] == "2024-05-01T12:30:00+00:00"
    assert text["expiration_date"] == "2030-01-01"
    assert text["rating"] == "4.2"
    assert (text["family_friendly"], text["requires_subscription"], text["live"]) == ("yes", "no", "no")
    assert text["restriction"] == "IE GB"
    assert element.find(f"{VIDEO}restriction").get("relationship") == "allow"
    assert text["platform"] == "tv"
    assert element.find(f"{VIDEO}player_loc").attrib == {}  # allow_embed and autoplay are retired
    assert element.find(f"{VIDEO}uploader").get("info") == f"{BASE}/users/grilly"


def test_video_record_has_no_field_google_retired() -> None:
    # Google, 2022: category, gallery_loc, price, tvshow and player_loc's allow_embed/autoplay.
    retired = {"category", "gallery_loc", "price", "tvshow", "allow_embed", "autoplay"}
    assert not retired & set(Video.__struct_fields__)


def test_minimal_video_with_a_player_only_is_valid() -> None:
    url = url_of(Url("/p/1", videos=[video(content_loc=None, player_loc="https://player.example.net/1")]))
    assert url.findtext(f"{VIDEO}video/{VIDEO}player_loc") == "https://player.example.net/1"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        pytest.param({"thumbnail_loc": None}, "invalid video thumbnail_loc", id="no-thumbnail"),
        pytest.param({"thumbnail_loc": "javascript:x"}, "invalid video thumbnail_loc", id="bad-thumbnail"),
        pytest.param({"title": ""}, "invalid video title", id="empty-title"),
        pytest.param({"title": " \t"}, "invalid video title", id="blank-title"),
        pytest.param({"title": "t" * 101}, "invalid video title", id="title-over-100"),
        pytest.param({"title": None}, "invalid video title", id="no-title"),
        pytest.param({"description": "d" * 2049}, "invalid video description", id="description-over-2048"),
        pytest.param({"description": ""}, "invalid video description", id="empty-description"),
        pytest.param({"content_loc": None}, "invalid video", id="neither-content-nor-player"),
        pytest.param({"content_loc": "/p/1"}, "invalid video content_loc", id="content-is-the-page"),
        pytest.param({"player_loc": "/p/1"}, "invalid video player_loc", id="player-is-the-page"),
        pytest.param({"content_loc": "ftp://x.example/v.mp4"}, "invalid video content_loc", id="bad-content"),
        pytest.param({"duration": 0}, "invalid video duration", id="duration-0"),
        pytest.param({"duration": 28_801}, "invalid video duration", id="duration-over-8h"),
        pytest.param({"duration": 1.5}, "invalid video duration", id="duration-float"),
        pytest.param({"duration": True}, "invalid video duration", id="duration-bool"),
        pytest.param({"rating": -0.1}, "invalid video rating", id="rating-negative"),
        pytest.param({"rating": 5.01}, "invalid video rating", id="rating-over-5"),
        pytest.param({"rating": math.nan}, "invalid video rating", id="rating-nan"),
        pytest.param({"rating": "4"}, "invalid video rating", id="rating-text"),
        pytest.param({"view_count": -1}, "invalid video view_count", id="views-negative"),
        pytest.param({"view_count": False}, "invalid video view_count", id="views-bool"),
        pytest.param({"publication_date": "yesterday"}, "invalid video publication_date", id="bad-date"),
        pytest.param({"expiration_date": 2030}, "invalid video expiration_date", id="bad-expiry"),
        pytest.param({"family_friendly": "maybe"}, "invalid video family_friendly", id="yes-no-text"),
        pytest.param({"live": 1}, "invalid video live", id="yes-no-int"),
        pytest.param({"tags": ["t"] * 33}, "invalid video tags", id="33-tags"),
        pytest.param({"tags": "steak"}, "invalid video tags", id="tags-a-string"),
        pytest.param({"tags": [""]}, "invalid video tags", id="empty-tag"),
        pytest.param({"restriction": ("allow", ["GBR"])}, "invalid video restriction", id="alpha-3"),
        pytest.param({"restriction": ("block", ["GB"])}, "invalid video restriction", id="bad-relationship"),
        pytest.param({"restriction": ("allow", [])}, "invalid video restriction", id="no-country"),
        pytest.param({"restriction": "GB"}, "invalid video restriction", id="not-a-pair"),
        pytest.param({"platform": ("allow", ["phone"])}, "invalid video platform", id="bad-platform"),
        pytest.param({"uploader": "u" * 256}, "invalid video uploader", id="uploader-over-255"),
        pytest.param({"uploader_info": "/u/1"}, "invalid video uploader_info", id="info-without-uploader"),
        pytest.param(
            {"uploader": "u", "uploader_info": "https://evil.example/u"},
            "invalid video uploader_info",
            id="info-other-host",
        ),
    ],
)
def test_invalid_video_is_rejected_with_its_reason(fields: dict[str, Any], reason: str) -> None:
    assert reason_of(Url("/p/1", videos=[video(**fields)])) == reason


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"duration": 1}, id="duration-1"),
        pytest.param({"duration": 28_800}, id="duration-8h"),
        pytest.param({"rating": 0}, id="rating-0"),
        pytest.param({"rating": 5.0}, id="rating-5"),
        pytest.param({"title": "t" * 100}, id="title-of-100"),
        pytest.param({"description": "d" * 2048}, id="description-of-2048"),
        pytest.param({"tags": [f"t{n}" for n in range(32)]}, id="32-tags"),
        pytest.param({"view_count": 0}, id="no-views"),
        pytest.param({"publication_date": "2024-05-01T12:00:00"}, id="naive-iso-text"),
    ],
)
def test_video_at_the_limits_is_accepted(fields: dict[str, Any]) -> None:
    url_of(Url("/p/1", videos=[video(**fields)]))


def test_several_videos_are_accepted() -> None:
    url = url_of(Url("/p/1", videos=[video(), video(content_loc="/v/2.mp4")]))
    assert len(url.findall(f"{VIDEO}video")) == 2


# -- news ------------------------------------------------------------------------------------------


def test_news_is_written_with_its_four_required_fields_only() -> None:
    [element] = url_of(Url("/a/1", news=news())).findall(f"{NEWS}news")
    assert [etree.QName(child).localname for child in element.iter()][1:] == [
        "publication",
        "name",
        "language",
        "publication_date",
        "title",
    ]
    assert element.findtext(f"{NEWS}publication/{NEWS}name") == "The Example Times"
    assert element.findtext(f"{NEWS}publication_date") == "2024-05-01T12:30:00+00:00"


@pytest.mark.parametrize(
    ("language", "written"),
    [
        pytest.param("en", "en", id="two-letters"),
        pytest.param("EN", "en", id="upper"),
        pytest.param("gsw", "gsw", id="three-letters"),
        pytest.param("zh-TW", "zh-tw", id="traditional-chinese"),
        pytest.param("zh-cn", "zh-cn", id="simplified-chinese"),
    ],
)
def test_news_language_is_what_the_schema_spells(language: str, written: str) -> None:
    url = url_of(Url("/a/1", news=news(language=language)))
    assert url.findtext(f"{NEWS}news/{NEWS}publication/{NEWS}language") == written


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        pytest.param({"language": "en-US"}, "invalid news language", id="language-region"),
        pytest.param({"language": "english"}, "invalid news language", id="language-word"),
        pytest.param({"language": None}, "invalid news language", id="no-language"),
        pytest.param({"publication_name": ""}, "invalid news publication_name", id="empty-name"),
        pytest.param({"publication_name": 7}, "invalid news publication_name", id="name-not-text"),
        pytest.param({"title": "\x00\x01"}, "invalid news title", id="title-of-controls-only"),
        pytest.param({"title": None}, "invalid news title", id="no-title"),
        pytest.param({"publication_date": None}, "invalid news publication_date", id="no-date"),
        pytest.param({"publication_date": "2024-13-01"}, "invalid news publication_date", id="bad-date"),
    ],
)
def test_invalid_news_is_rejected_with_its_reason(fields: dict[str, Any], reason: str) -> None:
    assert reason_of(Url("/a/1", news=news(**fields))) == reason


def test_news_of_another_shape_is_rejected() -> None:
    assert reason_of(Url("/a/1", news="The Example Times")) == "invalid news"  # type: ignore[arg-type]
    retired = {**NEWS_OK, "keywords": "merger"}
    assert reason_of(Url("/a/1", news=retired)) == "invalid news"  # type: ignore[arg-type]


def test_news_as_a_mapping_is_read_like_a_record() -> None:
    url = url_of(Url("/a/1", news=dict(NEWS_OK)))  # type: ignore[arg-type]
    assert url.findtext(f"{NEWS}news/{NEWS}title") == NEWS_OK["title"]


# -- text ------------------------------------------------------------------------------------------

HOSTILE = [
    pytest.param("Fish & Chips <b>", id="markup"),
    pytest.param("a ]]> b", id="cdata-end"),
    pytest.param("\"double\" and 'single'", id="quotes"),
    pytest.param("\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 \u202eevil", id="rtl"),
    pytest.param("\U0001f969 \U0001d11e \U00020000", id="astral"),
    pytest.param("tab\tline\nreturn\r\nend\r", id="whitespace"),
    pytest.param("&amp; &#x41; &lt;", id="entities-as-text"),
]


@pytest.mark.parametrize("text", HOSTILE)
def test_titles_and_descriptions_round_trip_any_text(text: str) -> None:
    url = url_of(Url("/p/1", videos=[video(title=text[:100], description=text)], news=news(title=text)))
    assert url.findtext(f"{VIDEO}video/{VIDEO}title") == text[:100]
    assert url.findtext(f"{VIDEO}video/{VIDEO}description") == text
    assert url.findtext(f"{NEWS}news/{NEWS}title") == text


def test_xml_illegal_characters_are_dropped_from_text() -> None:
    title = "a\x00b\x08c\x0bd\x1fe\ufffef\uffffg\ud800h"
    url = url_of(Url("/a/1", news=news(title=title, publication_name="Times\x07")))
    assert url.findtext(f"{NEWS}news/{NEWS}title") == "abcdefgh"
    assert url.findtext(f"{NEWS}news/{NEWS}publication/{NEWS}name") == "Times"


def test_limits_count_characters_after_illegal_ones_are_dropped() -> None:
    url_of(Url("/p/1", videos=[video(title="\U0001f969" * 100 + "\x00")]))


# -- which extensions a section declares --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        pytest.param(Url("/p/1", alternates=[Alternate("en", "/p/1")]), "alternates", id="alternates"),
        pytest.param(Url("/p/1", images=["/i.jpg"]), "images", id="images"),
        pytest.param(Url("/p/1", videos=[Video(**VIDEO_OK)]), "videos", id="videos"),
        pytest.param(Url("/p/1", news=News(**NEWS_OK)), "news", id="news"),
    ],
)
def test_an_extension_the_section_did_not_declare_is_refused(raw: Url, name: str) -> None:
    others = Extensions.declare(
        [other for other in ("alternates", "images", "videos", "news") if other != name]
    )
    with pytest.raises(EntryError) as caught:
        normaliser(others).element(raw)
    assert caught.value.reason == "undeclared extension"
    assert repr(name) in caught.value.detail
    assert reason_of(raw, Extensions.declare([])) == "undeclared extension"


def test_empty_extension_lists_need_no_declaration() -> None:
    plain = Extensions.declare([])
    assert normaliser(plain).element(Url("/p/1", alternates=[], images=(), videos=[]))[0] == (
        f"<url><loc>{BASE}/p/1</loc></url>\n"
    )


def test_a_plain_section_head_declares_the_sitemap_namespace_only() -> None:
    root = parse(Extensions.declare([]).head + b"</urlset>")
    assert root.nsmap == {None: "http://www.sitemaps.org/schemas/sitemap/0.9"}


def test_a_head_declares_exactly_the_namespaces_of_its_extensions() -> None:
    root = parse(Extensions.declare(["images", "news"]).head + b"</urlset>")
    assert root.nsmap == {
        None: "http://www.sitemaps.org/schemas/sitemap/0.9",
        "image": "http://www.google.com/schemas/sitemap-image/1.1",
        "news": "http://www.google.com/schemas/sitemap-news/0.9",
    }
