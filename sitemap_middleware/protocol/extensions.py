"""The sitemap extensions search engines read: hreflang alternates, images, videos and news.

A `Url` carries them as records (immutable msgspec `Struct`s, as `Url` is; a mapping of a
record's fields, or an ``(hreflang, href)`` pair for an alternate, is read alike); tags.py
checks each by its rules and writes it after the core fields of its ``<url>``, in its
namespace::

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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

import msgspec

from ..errors import ConfigurationError, EntryError
from .hreflang import Languages

__all__ = [
    "EXTENSIONS",
    "NEWS_END",
    "PLAIN",
    "Alternate",
    "Extensions",
    "Image",
    "News",
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


class Alternate(msgspec.Struct, frozen=True):
    """One member of a page's hreflang group: a language tag (or ``x-default``) and its URL.

    ``hreflang``: ``en``, ``de-AT``, ``zh-Hant-TW`` or ``x-default``. ``href``: a URL on the
    site, by the rules of `Url.loc`.
    """

    hreflang: str
    href: str


class Image(msgspec.Struct, frozen=True):
    """An image on the page: its URL, on any host (a CDN), or a path on the site."""

    loc: str


class Video(msgspec.Struct, frozen=True):
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


class News(msgspec.Struct, frozen=True):
    """A news article (Google News): all four fields are required.

    ``language``: the publication's ISO 639 code (``en``, ``gsw``; ``zh-cn``/``zh-tw`` for
    Chinese). ``publication_date``: when the article was first published, like ``lastmod``.
    """

    publication_name: str
    language: str
    publication_date: datetime | date | str
    title: str


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
