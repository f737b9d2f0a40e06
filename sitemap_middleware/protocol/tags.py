"""The extension elements of one ``<url>``, each written by its rules (or an `EntryError`).

    alternates_xml(rules, declared, page, [Alternate("en", "/p/1"), Alternate("de", "/de/p/1")])
    # '<xhtml:link rel="alternate" hreflang="en" href="https://shop.example/p/1"/>...'
    images_xml(rules, declared, [Image("https://cdn.example.net/1.jpg")])
    videos_xml(rules, declared, (page,), [Video(...)]); news_xml(declared, News(...), cutoff)

``rules`` are the page's URL rules (`locs.LocRules`), ``declared`` its section's
`Extensions`: an extension the section did not declare is refused before anything is
written. `entries.Normaliser` calls these, in this order, after a URL's core fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice
from typing import Protocol, TypeVar

from ..errors import EntryError
from .extensions import Alternate, Extensions, Image, News, Video
from .hreflang import language_tag
from .values import decimal_text, w3c_datetime
from .xmltext import escape_text, xml_text

__all__ = ["UrlRules", "alternates_xml", "images_xml", "link", "news_xml", "videos_xml"]

# Google: at most 1,000 images per URL (image sitemaps); the video limits are the schema's.
MAX_IMAGES = 1000
MAX_VIDEO_TITLE = 100
MAX_VIDEO_DESCRIPTION = 2048
MAX_VIDEO_DURATION = 28_800
MAX_VIDEO_TAGS = 32
MAX_UPLOADER = 255
# sitemap-news.xsd: an ISO 639 code of 2 or 3 letters, or zh-cn / zh-tw.
_NEWS_LANGUAGE = re.compile(r"zh-cn|zh-tw|[a-z]{2,3}")
_COUNTRY = re.compile(r"[A-Z]{2}")  # ISO 3166-1 alpha-2, sitemap-video.xsd's tCountryList
_PLATFORMS = frozenset({"web", "mobile", "tv"})
_RELATIONSHIPS = frozenset({"allow", "deny"})


R = TypeVar("R", Video, News)


class UrlRules(Protocol):
    """The URL rules of `Normaliser`: both return an absolute, canonical, XML-escaped URI."""

    def loc(self, loc: object) -> str: ...  # on the site, like a page's loc

    def resource(self, url: object) -> str: ...  # on any http(s) host, or a path on the site


# -- alternates ------------------------------------------------------------------------------------


def alternates_xml(rules: UrlRules, declared: Extensions, page: str, alternates: object) -> str:
    """The ``<xhtml:link>`` elements of one hreflang group; ``page`` is the page's own loc.

    Google: a group lists every language version, the page itself included; a tag (or
    x-default) appears once.
    """
    items = _items(alternates, "invalid alternates")
    if not items:
        return ""
    declared.check("alternates")
    seen: set[str] = set()
    parts: list[str] = []
    itself = False
    for item in items:
        if isinstance(item, Alternate):
            tag, href = item.hreflang, item.href
        elif isinstance(item, tuple) and len(item) == 2:
            tag, href = item
        elif isinstance(item, Mapping) and set(item) == {"hreflang", "href"}:
            tag, href = item["hreflang"], item["href"]
        else:
            raise EntryError("invalid alternates", f"{type(item).__name__} is not an Alternate")
        tag = language_tag(tag)
        if tag in seen:
            raise EntryError("duplicate hreflang", f"{tag!r} twice in one group")
        seen.add(tag)
        uri = _url(rules.loc, href, "invalid alternate href")
        itself = itself or uri == page
        parts.append(link(tag, uri))
    if not itself:
        raise EntryError("hreflang group misses the page", f"no alternate's href is {page}")
    return "".join(parts)


def link(tag: str, uri: str) -> str:
    """One ``<xhtml:link>``; ``tag`` and ``uri`` are already checked (and escaped)."""
    return f'<xhtml:link rel="alternate" hreflang="{tag}" href="{uri}"/>'


# -- images ----------------------------------------------------------------------------------------


def images_xml(rules: UrlRules, declared: Extensions, images: object) -> str:
    """The ``<image:image>`` elements of one URL: ``image:loc`` alone, at most 1,000."""
    if isinstance(images, str | bytes | Mapping) or not isinstance(images, Iterable):
        raise EntryError("invalid images", f"{type(images).__name__} is not a list of images")
    # Never read more than one past the limit: images may be a generator.
    items = list(islice(images, MAX_IMAGES + 1))
    if len(items) > MAX_IMAGES:
        raise EntryError("too many images", f"more than {MAX_IMAGES:,} on one URL")
    if not items:
        return ""
    declared.check("images")
    parts = []
    for image in items:
        if isinstance(image, str):
            loc: object = image
        elif isinstance(image, Image):
            loc = image.loc
        elif isinstance(image, Mapping) and set(image) == {"loc"}:
            loc = image["loc"]
        else:
            raise EntryError(
                "invalid images", f"{_shape(image)} is not an Image (only loc: Google retired the rest)"
            )
        uri = _url(rules.resource, loc, "invalid image loc")
        parts.append(f"<image:image><image:loc>{uri}</image:loc></image:image>")
    return "".join(parts)


# -- videos ----------------------------------------------------------------------------------------


def videos_xml(rules: UrlRules, declared: Extensions, pages: Sequence[str], videos: object) -> str:
    """The ``<video:video>`` elements of one URL, children in sitemap-video.xsd's order.

    ``pages``: the URL's own loc(s); Google wants a video's file or player elsewhere.
    """
    items = _items(videos, "invalid videos")
    if not items:
        return ""
    declared.check("videos")
    return "".join(_video(rules, pages, _record(Video, item, "invalid videos")) for item in items)


def _video(rules: UrlRules, pages: Sequence[str], video: Video) -> str:
    thumbnail = _url(rules.resource, video.thumbnail_loc, "invalid video thumbnail_loc")
    title = _text(video.title, "invalid video title", MAX_VIDEO_TITLE)
    description = _text(video.description, "invalid video description", MAX_VIDEO_DESCRIPTION)
    out = [
        f"<video:video><video:thumbnail_loc>{thumbnail}</video:thumbnail_loc><video:title>{title}"
        f"</video:title><video:description>{description}</video:description>"
    ]
    if video.content_loc is None and video.player_loc is None:
        raise EntryError("invalid video", "it needs a content_loc or a player_loc")
    for name, value in (("content_loc", video.content_loc), ("player_loc", video.player_loc)):
        if value is not None:
            uri = _url(rules.resource, value, f"invalid video {name}")
            if uri in pages:
                raise EntryError(f"invalid video {name}", "it is the page itself")
            out.append(f"<video:{name}>{uri}</video:{name}>")
    if video.duration is not None:
        duration = video.duration
        if type(duration) is not int or not 1 <= duration <= MAX_VIDEO_DURATION:
            raise EntryError(
                "invalid video duration", f"{duration!r} is not 1 to {MAX_VIDEO_DURATION:,} seconds"
            )
        out.append(f"<video:duration>{duration}</video:duration>")
    if video.expiration_date is not None:
        expires = w3c_datetime(video.expiration_date, "invalid video expiration_date")
        out.append(f"<video:expiration_date>{expires}</video:expiration_date>")
    if video.rating is not None:
        out.append(f"<video:rating>{decimal_text(video.rating, 0, 5, 'invalid video rating')}</video:rating>")
    if video.view_count is not None:
        views = video.view_count
        if type(views) is not int or views < 0:
            raise EntryError("invalid video view_count", f"{views!r} is not a count")
        out.append(f"<video:view_count>{views}</video:view_count>")
    if video.publication_date is not None:
        published = w3c_datetime(video.publication_date, "invalid video publication_date")
        out.append(f"<video:publication_date>{published}</video:publication_date>")
    tags = _items(video.tags, "invalid video tags")
    if len(tags) > MAX_VIDEO_TAGS:
        raise EntryError("invalid video tags", f"{len(tags)} tags, the limit is {MAX_VIDEO_TAGS}")
    out.extend(f"<video:tag>{_text(tag, 'invalid video tags')}</video:tag>" for tag in tags)
    out.append(_yes_no("family_friendly", video.family_friendly))
    if video.restriction is not None:
        out.append(_listing("restriction", video.restriction, _countries))
    out.append(_yes_no("requires_subscription", video.requires_subscription))
    if video.uploader is not None:
        uploader = _text(video.uploader, "invalid video uploader", MAX_UPLOADER)
        info = ""
        if video.uploader_info is not None:
            info = f' info="{_url(rules.loc, video.uploader_info, "invalid video uploader_info")}"'
        out.append(f"<video:uploader{info}>{uploader}</video:uploader>")
    elif video.uploader_info is not None:
        raise EntryError("invalid video uploader_info", "it describes an uploader, and there is none")
    if video.platform is not None:
        out.append(_listing("platform", video.platform, _platforms))
    out.append(_yes_no("live", video.live))
    out.append("</video:video>")
    return "".join(out)


def _yes_no(name: str, value: object) -> str:
    # sitemap-video.xsd's tYesNo; we write its lowercase spelling.
    if value is None:
        return ""
    if value is True or value is False:
        return f"<video:{name}>{'yes' if value else 'no'}</video:{name}>"
    raise EntryError(f"invalid video {name}", f"{value!r} is not a bool")


def _listing(name: str, value: object, codes: Callable[[list[str]], list[str]]) -> str:
    """``<video:restriction>`` or ``<video:platform>``: an allow/deny relationship and its list."""
    reason = f"invalid video {name}"
    if not isinstance(value, tuple) or len(value) != 2:
        raise EntryError(reason, f'{value!r} is not a pair like ("allow", [...])')
    relationship, listed = value
    if not isinstance(relationship, str) or relationship not in _RELATIONSHIPS:
        raise EntryError(reason, f"relationship {relationship!r} is not 'allow' or 'deny'")
    items = _items(listed, reason)
    if not items or not all(isinstance(item, str) for item in items):
        raise EntryError(reason, f"{listed!r} is not a non-empty list of codes")
    try:
        written = codes(items)  # type: ignore[arg-type]
    except ValueError as error:
        raise EntryError(reason, str(error)) from None
    return f'<video:{name} relationship="{relationship}">{" ".join(written)}</video:{name}>'


def _countries(items: list[str]) -> list[str]:
    codes = [item.upper() for item in items]
    bad = [code for code in codes if _COUNTRY.fullmatch(code) is None]
    if bad:
        raise ValueError(f"{bad} are not ISO 3166-1 alpha-2 country codes")
    return codes


def _platforms(items: list[str]) -> list[str]:
    codes = [item.lower() for item in items]
    bad = [code for code in codes if code not in _PLATFORMS]
    if bad:
        raise ValueError(f"{bad} are not platforms: use web, mobile, tv")
    return codes


# -- news ------------------------------------------------------------------------------------------


def news_xml(declared: Extensions, news: object, cutoff: str | None) -> tuple[str, bool]:
    """The ``<news:news>`` of one URL, and whether it is written: not when ``cutoff`` (a W3C
    datetime in UTC) is later than its publication date."""
    declared.check("news")
    article = _record(News, news, "invalid news")
    name = _text(article.publication_name, "invalid news publication_name")
    language = article.language.lower() if isinstance(article.language, str) else article.language
    if not isinstance(language, str) or _NEWS_LANGUAGE.fullmatch(language) is None:
        raise EntryError(
            "invalid news language", f"{article.language!r}: use an ISO 639 code, or zh-cn / zh-tw"
        )
    if article.publication_date is None:
        raise EntryError("invalid news publication_date", "missing")
    published = w3c_datetime(article.publication_date, "invalid news publication_date")
    title = _text(article.title, "invalid news title")
    # UTC W3C strings order like the instants they name; a date alone is its whole day.
    if cutoff is not None and published < (cutoff[:10] if len(published) == 10 else cutoff):
        return "", False
    return (
        f"<news:news><news:publication><news:name>{name}</news:name><news:language>{language}"
        f"</news:language></news:publication><news:publication_date>{published}</news:publication_date>"
        f"<news:title>{title}</news:title></news:news>"
    ), True


# -- shared rules ----------------------------------------------------------------------------------


def _items(value: object, reason: str) -> list[object]:
    """A list of extension records given as any iterable but a string, bytes or mapping."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise EntryError(reason, f"{type(value).__name__} is not a list")
    return list(value)


def _record(kind: type[R], value: object, reason: str) -> R:
    """``value`` as a ``kind`` record: one already, or a mapping of its fields."""
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - set(kind.__struct_fields__)
        if not unknown:
            try:
                return kind(**value)
            except TypeError:
                pass
        detail = f"unknown keys {sorted(map(str, unknown))}" if unknown else "required keys missing"
        raise EntryError(reason, f"a mapping with {detail} (Google retired the tags we do not write)")
    raise EntryError(reason, f"{type(value).__name__} is not a {kind.__name__}")


def _url(rule: Callable[[object], str], value: object, reason: str) -> str:
    try:
        return rule(value)
    except EntryError as error:
        raise EntryError(
            reason, f"{error.reason}: {error.detail}" if error.detail else error.reason
        ) from None


def _text(value: object, reason: str, limit: int | None = None) -> str:
    """Free text, XML-escaped: characters XML cannot carry are dropped, then the limit is checked."""
    if not isinstance(value, str):
        raise EntryError(reason, f"{type(value).__name__} is not text")
    text = xml_text(value)
    if not text.strip():
        raise EntryError(reason, "empty")
    if limit is not None and len(text) > limit:
        raise EntryError(reason, f"{len(text):,} characters, the limit is {limit:,}")
    return escape_text(text)


def _shape(value: object) -> str:
    return (
        f"a mapping with keys {sorted(map(str, value))}"
        if isinstance(value, Mapping)
        else type(value).__name__
    )
