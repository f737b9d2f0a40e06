"""The sitemap extensions search engines read: hreflang alternates, images, videos and news.

A `Url` carries them as records; each is checked by its rules and written here, after the
core fields of its ``<url>``, in its namespace::

    Url("/p/1",
        alternates=[Alternate("en", "/p/1"), Alternate("de", "/de/p/1")],
        images=[Image("https://cdn.example.net/p/1.jpg")],
        videos=[Video(thumbnail_loc="/t/1.jpg", title="Unboxing", description="...", content_loc="/v/1.mp4")],
        news=News(publication_name="The Example Times", language="en", publication_date=now, title="..."))

A section declares which extensions its pages carry (`Extensions.declare`), because the
``<urlset>`` head, where namespaces are declared, is written before its first entry; an
entry that uses an extension its section did not declare is refused ("undeclared
extension"). Tags Google retired in 2022 have no field, so they are never written:
image caption, title, geo_location and license; video category, gallery_loc, price,
tvshow and player_loc's allow_embed and autoplay; and news keywords, genres, access and
stock_tickers, which Google no longer reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from itertools import islice
from typing import NamedTuple, Protocol, TypeVar

from ..errors import ConfigurationError, EntryError
from .hreflang import Languages, language_tag
from .values import decimal_text, w3c_datetime
from .xmltext import escape_text, xml_text

__all__ = [
    "EXTENSIONS",
    "NEWS_END",
    "PLAIN",
    "Alternate",
    "Extensions",
    "Image",
    "News",
    "UrlRules",
    "Video",
]

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
# Per extension (by its `Url` field): the prefix we write it with and its namespace.
NAMESPACES = {
    "alternates": ("xhtml", "http://www.w3.org/1999/xhtml"),
    "images": ("image", "http://www.google.com/schemas/sitemap-image/1.1"),
    "videos": ("video", "http://www.google.com/schemas/sitemap-video/1.1"),
    "news": ("news", "http://www.google.com/schemas/sitemap-news/0.9"),
}
EXTENSIONS = tuple(NAMESPACES)
# <news:news> is the last child we write in a <url>: a page writer counts news by this end.
NEWS_END = "</news:news></url>\n"

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


class Alternate(NamedTuple):
    """One member of a page's hreflang group: a language tag (or ``x-default``) and its URL.

    ``hreflang``: ``en``, ``de-AT``, ``zh-Hant-TW`` or ``x-default``. ``href``: a URL on the
    site, by the rules of `Url.loc`.
    """

    hreflang: str
    href: str


class Image(NamedTuple):
    """An image on the page: its URL, on any host (a CDN), or a path on the site."""

    loc: str


class Video(NamedTuple):
    """A video on the page (Google's video sitemap tags, less those retired in 2022).

    Required: ``thumbnail_loc``, ``title`` (at most 100 characters), ``description`` (at
    most 2,048) and ``content_loc`` or ``player_loc``, neither the page itself. Optional:
    ``duration`` (1 to 28,800 seconds), ``expiration_date`` and ``publication_date``
    (like ``lastmod``), ``rating`` (0.0 to 5.0), ``view_count``, ``family_friendly``,
    ``requires_subscription`` and ``live`` (bools, written yes/no), ``restriction``
    (``("allow", ["IE", "GB"])`` or ``("deny", [...])``: ISO 3166 countries), ``platform``
    (the same, of ``web``, ``mobile``, ``tv``), ``uploader`` (at most 255 characters) with
    its ``uploader_info`` page on the site, and at most 32 ``tags``. URLs other than
    ``uploader_info`` may be on any host.
    """

    thumbnail_loc: str
    title: str
    description: str
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    expiration_date: datetime | date | str | None = None
    rating: float | Decimal | None = None
    view_count: int | None = None
    publication_date: datetime | date | str | None = None
    family_friendly: bool | None = None
    restriction: tuple[str, Sequence[str]] | None = None
    platform: tuple[str, Sequence[str]] | None = None
    requires_subscription: bool | None = None
    uploader: str | None = None
    uploader_info: str | None = None
    live: bool | None = None
    tags: Sequence[str] = ()


class News(NamedTuple):
    """A news article (Google News): all four fields are required.

    ``language``: the publication's ISO 639 code (``en``, ``gsw``; ``zh-cn``/``zh-tw`` for
    Chinese). ``publication_date``: when the article was first published, like ``lastmod``.
    """

    publication_name: str
    language: str
    publication_date: datetime | date | str
    title: str


R = TypeVar("R", Video, News)


class UrlRules(Protocol):
    """The URL rules of `Normaliser`: both return an absolute, canonical, XML-escaped URI."""

    def loc(self, loc: object) -> str: ...  # on the site, like a page's loc

    def resource(self, url: object) -> str: ...  # on any http(s) host, or a path on the site


@dataclass(frozen=True, slots=True)
class Extensions:
    """What the pages of one section carry: their extensions, languages and news window.

    ``head`` is the ``<urlset>`` start tag (with the XML declaration) declaring the sitemap
    namespace and exactly those of ``names``.
    """

    names: frozenset[str]
    head: bytes
    languages: Languages | None = None
    news_window: timedelta | None = None

    @classmethod
    def declare(
        cls,
        extensions: Iterable[str] = (),
        *,
        languages: Sequence[str] | Mapping[str, str] | None = None,
        x_default: str | None = None,
        news_window: timedelta | None = None,
    ) -> Extensions:
        """Check a section's declarations at registration; `ConfigurationError` if they cannot hold."""
        if isinstance(extensions, str) or not isinstance(extensions, Iterable):
            raise ConfigurationError(f"extensions must be a list of names from {list(EXTENSIONS)}")
        names = set(extensions)
        unknown = names - set(EXTENSIONS)
        if unknown:
            raise ConfigurationError(
                f"unknown extensions {sorted(map(str, unknown))}: use {list(EXTENSIONS)}"
            )
        parsed = None
        if languages is not None:
            parsed = Languages.parse(languages, x_default)
            if "news" in names:
                # A news article has one language; its translations are articles of their own.
                raise ConfigurationError(
                    "a section with languages cannot carry news: give each article its URL"
                )
            names.add("alternates")
        elif x_default is not None:
            raise ConfigurationError("x_default needs languages")
        if news_window is not None:
            if not isinstance(news_window, timedelta) or news_window <= timedelta(0):
                raise ConfigurationError(f"news_window must be a positive timedelta, not {news_window!r}")
            if "news" not in names:
                raise ConfigurationError("news_window needs the news extension: extensions=['news']")
        declared = "".join(
            f' xmlns:{prefix}="{namespace}"'
            for name, (prefix, namespace) in NAMESPACES.items()
            if name in names
        )
        head = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}"{declared}>\n'.encode()
        return cls(frozenset(names), head, parsed, news_window)

    @property
    def urls_per_entry(self) -> int:
        """URLs each provider entry becomes: one per language, or one."""
        return 1 if self.languages is None else len(self.languages.tags)

    def check(self, name: str) -> None:
        """Refuse an entry that uses extension ``name`` when its section did not declare it."""
        if name not in self.names:
            raise EntryError(
                "undeclared extension",
                f"its section does not declare {name!r}: register it with extensions=[{name!r}, ...]",
            )


PLAIN = Extensions.declare()


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
        if isinstance(item, tuple) and len(item) == 2:
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
        unknown = set(value) - set(kind._fields)
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
