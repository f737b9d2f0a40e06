"""What one sitemap entry is, and how a raw provider value becomes a valid one.

Providers yield `Url` records, plain strings (a loc alone), mappings with the same
keys, or rows: plain tuples of `Url`'s fields in order, ``(loc, lastmod, changefreq,
priority, ...)``, as a database cursor returns them (no record built per URL). `Url` never
raises on bad values: checking happens here, per entry, when the middleware pulls it, so
one bad row skips one URL instead of killing the whole file::

    site = Site.parse("https://shop.example")
    normalise = Normaliser(site)
    normalise(Url("/p/caf\u00e9?a=1&b=2", lastmod=date(2024, 5, 1)))
    # NormalUrl(loc='https://shop.example/p/caf%C3%A9?a=1&amp;b=2', lastmod='2024-05-01', ...)

Every string in a `NormalUrl` is ready to be placed in XML text as is. The page
writer asks for the finished element instead, the one place a ``<url>`` is written::

    normalise.element(Url("/p/1", changefreq="daily"))
    # ('<url><loc>https://shop.example/p/1</loc><changefreq>daily</changefreq></url>\n', None)

A `Url` may carry extensions (hreflang ``alternates``, ``images``, ``videos``, ``news``),
written after its core fields by the rules in extensions.py, when its section declares
them; a section with languages hands the writer `Localised` entries, each one URL of its
entry's reciprocal group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import NamedTuple

import msgspec

from ..errors import EntryError
from .extensions import PLAIN, Alternate, Extensions, Image, News, Video
from .hreflang import X_DEFAULT, Localised
from .locs import MAX_LOC_LENGTH, PLAIN_PATH, LocRules
from .tags import alternates_xml, images_xml, link, news_xml, videos_xml
from .uris import Site
from .values import decimal_text, w3c_datetime
from .xmltext import escape_uri

_plain_path = PLAIN_PATH.fullmatch

__all__ = [
    "CHANGEFREQS",
    "NormalUrl",
    "Normaliser",
    "Url",
    "w3c_datetime",
]

# sitemaps.org 0.9: the seven values the schema's tChangeFreq enumerates.
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})


class Url(msgspec.Struct, frozen=True):
    """One page of the site, as a provider describes it.

    Example::

        Url("/p/blue-shoe", lastmod=product.updated_at, changefreq="daily", priority=0.8)

    - ``loc``: absolute URL on the site's origin, or a path joined to ``base_url``.
    - ``lastmod``: `datetime` (aware ones are converted to UTC, naive ones taken as UTC),
      `date`, or an ISO 8601 string; ``None`` omits the element.
    - ``changefreq``: one of `CHANGEFREQS` (case-insensitive).
    - ``priority``: a number from 0.0 to 1.0.
    - ``alternates``: the page's hreflang group, `Alternate` records (itself included).
    - ``images``: `Image` records (or their locs), at most 1,000.
    - ``videos``: `Video` records.
    - ``news``: a `News` record.

    Extensions are written only in sections that declare them (``extensions=`` when the
    provider is registered). Nothing is checked here: values are validated when the entry is
    rendered, and a bad entry is skipped and logged (or raises, with ``Sitemaps(strict=True)``).
    Immutable, compared and hashed by value; ``msgspec.structs.replace(url, lastmod=...)``
    makes a changed copy. A msgspec `Struct` because providers build millions of them and
    it is built in C: 50,000 made with keywords take 7 ms, against 60 as a NamedTuple and
    twice that as a frozen dataclass (benchmarks/HISTORY.md, "A `Url` built in C").
    """

    loc: str
    lastmod: datetime | date | str | None = None
    changefreq: str | None = None
    priority: float | Decimal | None = None
    alternates: Sequence[Alternate] | None = None
    images: Sequence[Image | str] | None = None
    videos: Sequence[Video] | None = None
    news: News | None = None

    def __repr__(self) -> str:
        # Log lines quote skipped entries: the extensions an entry does not use stay out.
        values = msgspec.structs.astuple(self)
        shown = (
            f"{name}={value!r}"
            for index, (name, value) in enumerate(zip(_URL_FIELDS, values, strict=True))
            if index < 4 or value is not None
        )
        return f"Url({', '.join(shown)})"


class NormalUrl(NamedTuple):
    """A validated entry; every field is XML-escaped text, ``None`` where absent."""

    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None


def _priority(value: object) -> str:
    return decimal_text(value, 0, 1, "invalid priority")


# Finished child elements by value. Only changefreq's seven and exact floats are keys:
# True == 1 and an unhashable value would otherwise find (or break on) another's entry.
_CHANGEFREQ_XML = {value: f"<changefreq>{value}</changefreq>" for value in CHANGEFREQS}
_CACHE_LIMIT = 1024  # distinct priorities worth remembering; real sites use a handful


def _changefreq(value: object) -> str:
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in CHANGEFREQS:
            return lowered
    raise EntryError("invalid changefreq", repr(value))


class Normaliser(LocRules):
    """Turns raw provider values into `NormalUrl`s for one site, or raises `EntryError`.

    ``prefix`` is the app's mount path (SCRIPT_NAME / root_path, URI-encoded): a relative
    loc is a path as the app sees it, so it is joined below ``base_url`` + ``prefix``.
    ``extensions``: what the section being written declares. ``now`` (a Unix time) places
    its news window: a news article published before it is written without its
    ``<news:news>``, and ``on_outside_window`` is called. A normaliser for a section with
    extensions writes one page (it remembers the last entry a language section expanded).
    """

    __slots__ = ("_cutoff", "_extensions", "_group", "_on_outside_window", "_priority_xml", "_root_text")

    def __init__(
        self,
        site: Site,
        prefix: str = "",
        *,
        extensions: Extensions = PLAIN,
        now: float | None = None,
        on_outside_window: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(site, prefix)
        self._root_text = escape_uri(self._root)
        self._extensions = extensions
        window = extensions.news_window
        self._cutoff = None
        if window is not None and now is not None:
            self._cutoff = w3c_datetime(datetime.fromtimestamp(now, UTC) - window)
        self._on_outside_window = on_outside_window
        self._group: tuple[object, tuple[tuple[str, ...], str, str | None] | EntryError] | None = None
        self._priority_xml: dict[float, str] = {}

    def element(self, raw: object) -> tuple[str, str | None]:
        """``raw`` as its ``<url>`` element, and its W3C lastmod; or raises `EntryError`.

        The one place a ``<url>`` is written. Each field passes its one rule (`loc`,
        `w3c_datetime`, `_changefreq`, `_priority`; the last two through bounded caches
        of their finished elements). This runs once per URL: the unpacking, the local
        names and the inlined plain-path test are measured choices (benchmarks/render.py).
        """
        loc: object
        lastmod: object
        changefreq: object
        priority: object
        alternates: object
        images: object
        videos: object
        news: object
        if type(raw) is Url:
            loc, lastmod, changefreq, priority = raw.loc, raw.lastmod, raw.changefreq, raw.priority
            alternates, images, videos, news = raw.alternates, raw.images, raw.videos, raw.news
        elif type(raw) is tuple and len(raw) == 2:
            # A row's common shape, (loc, lastmod), unpacked here: 70 ms for 50,000 against 80
            # through `_fields` (benchmarks/HISTORY.md, "Rows as entries").
            loc, lastmod = raw
            changefreq = priority = alternates = images = videos = news = None
        elif type(raw) is Localised:
            return self._localised(raw)
        else:
            loc, lastmod, changefreq, priority, alternates, images, videos, news = _fields(raw)
        if type(loc) is str and self._min_path <= len(loc) < self._max_path and _plain_path(loc):
            # `loc`'s common case, of a length known to be valid: the root, escaped once
            # (`escape_uri` of a concatenation is the concatenation of its escapes).
            root_text, loc_text = self._root_text, escape_uri(loc)
        else:
            root_text, loc_text = "", self.loc(loc)
        lastmod_text = None if lastmod is None else w3c_datetime(lastmod)
        changefreq_xml: str | None = ""
        if changefreq is not None:
            changefreq_xml = _CHANGEFREQ_XML.get(changefreq) if type(changefreq) is str else None
            if changefreq_xml is None:
                changefreq_xml = _CHANGEFREQ_XML[_changefreq(changefreq)]
        priority_xml: str | None = ""
        if type(priority) is float:
            priority_xml = self._priority_xml.get(priority)
            if priority_xml is None:
                priority_xml = f"<priority>{_priority(priority)}</priority>"
                if len(self._priority_xml) < _CACHE_LIMIT:
                    self._priority_xml[priority] = priority_xml
        elif priority is not None:
            priority_xml = f"<priority>{_priority(priority)}</priority>"
        # One f-string per shape, not appends nor a separate <lastmod> f-string: for the
        # common shapes (no extension, with or without a lastmod) the fastest of the three
        # (benchmarks/HISTORY.md, "Figures behind the code's choices").
        if alternates is None and images is None and videos is None and news is None:
            if lastmod_text is None:
                return f"<url><loc>{root_text}{loc_text}</loc>{changefreq_xml}{priority_xml}</url>\n", None
            return (
                f"<url><loc>{root_text}{loc_text}</loc><lastmod>{lastmod_text}</lastmod>"
                f"{changefreq_xml}{priority_xml}</url>\n",
                lastmod_text,
            )
        loc_text = root_text + loc_text
        lastmod_xml = "" if lastmod_text is None else f"<lastmod>{lastmod_text}</lastmod>"
        extended = self._extended(loc_text, alternates, images, videos, news)
        return (
            f"<url><loc>{loc_text}</loc>{lastmod_xml}{changefreq_xml}{priority_xml}{extended}</url>\n",
            lastmod_text,
        )

    def _extended(self, page: str, alternates: object, images: object, videos: object, news: object) -> str:
        """The extension elements of the page at ``page``, in the order the page writer relies on
        (`extensions.NEWS_END`: news last)."""
        declared = self._extensions
        parts = []
        if alternates is not None:
            parts.append(alternates_xml(self, declared, page, alternates))
        if images is not None:
            parts.append(images_xml(self, declared, images))
        if videos is not None:
            parts.append(videos_xml(self, declared, (page,), videos))
        if news is not None:
            written, inside = news_xml(declared, news, self._cutoff)
            if not inside and self._on_outside_window is not None:
                self._on_outside_window()  # news comes last: nothing after it can refuse the entry
            parts.append(written)
        return "".join(parts)

    def _localised(self, item: Localised) -> tuple[str, str | None]:
        """One language's ``<url>`` of an entry: its loc, and the group and fields all its URLs share.

        An entry's URLs come one after another, so what they share is made once, with the
        first, and kept until the next entry; so is the error of an entry that is refused.
        """
        entry, index = item
        group = self._group
        if group is None or group[0] is not entry:
            try:
                group = (entry, self._expand(entry))
            except EntryError as error:
                group = (entry, error)
            self._group = group
        made = group[1]
        if isinstance(made, EntryError):
            raise made
        locs, shared, lastmod_text = made
        return f"<url><loc>{locs[index]}</loc>{shared}</url>\n", lastmod_text

    def _expand(self, entry: object) -> tuple[tuple[str, ...], str, str | None]:
        """An entry's URL in each of its section's languages, and the elements they all carry."""
        loc, lastmod, changefreq, priority, alternates, images, videos, news = _fields(entry)
        languages = self._extensions.languages
        assert languages is not None  # only a section with languages yields Localised entries
        if alternates is not None and alternates != [] and alternates != ():
            raise EntryError("invalid alternates", "a section with languages writes each group itself")
        base = self._canonical(loc)
        if not base.startswith(self._root + "/"):
            raise EntryError("invalid loc", f"{base[:100]} is outside base_url: no language prefix applies")
        rest = base[len(self._root) :]
        locs = []
        for prefix in languages.prefixes:
            url = self._root + prefix + rest
            if len(url) > MAX_LOC_LENGTH:
                raise EntryError("loc too long", f"{len(url):,} characters, the limit is {MAX_LOC_LENGTH:,}")
            locs.append(escape_uri(url))
        lastmod_text = None if lastmod is None else w3c_datetime(lastmod)
        shared = [] if lastmod_text is None else [f"<lastmod>{lastmod_text}</lastmod>"]
        if changefreq is not None:
            shared.append(_CHANGEFREQ_XML[_changefreq(changefreq)])
        if priority is not None:
            shared.append(f"<priority>{_priority(priority)}</priority>")
        # Google: every URL of a group lists the whole group, itself included, and one x-default.
        shared.extend(link(tag, url) for tag, url in zip(languages.tags, locs, strict=True))
        if languages.x_default is not None:
            shared.append(link(X_DEFAULT, locs[languages.x_default]))
        if images is not None:
            shared.append(images_xml(self, self._extensions, images))
        if videos is not None:
            shared.append(videos_xml(self, self._extensions, locs, videos))
        if news is not None:
            self._extensions.check("news")  # never declared with languages: always refused
        return tuple(locs), "".join(shared), lastmod_text

    def __call__(self, raw: object) -> NormalUrl:
        """``raw``'s validated core fields, by the same rules `element` writes them with.

        An entry whose extensions `element` refuses is refused here too.
        """
        fields = _fields(raw)
        if any(value is not None for value in fields[4:]):
            self.element(raw)
        loc, lastmod, changefreq, priority = fields[:4]
        return NormalUrl(
            self.loc(loc),
            None if lastmod is None else w3c_datetime(lastmod),
            None if changefreq is None else _changefreq(changefreq),
            None if priority is None else _priority(priority),
        )


_URL_FIELDS = Url.__struct_fields__
_URL_KEYS = frozenset(_URL_FIELDS)
_NO_FIELDS = (None,) * (len(_URL_FIELDS) - 1)
# What a row of n values lacks of `Url`'s fields, by n.
_ROW_PADDING = {length: (None,) * (len(_URL_FIELDS) - length) for length in range(1, len(_URL_FIELDS) + 1)}


def _fields(raw: object) -> tuple[object, ...]:
    """The raw fields of any entry shape a provider may yield, in `Url`'s order."""
    if isinstance(raw, Url):
        return msgspec.structs.astuple(raw)
    if type(raw) is tuple:
        # A row: `Url`'s fields in order, as a database cursor hands them over. Only a plain
        # tuple: another NamedTuple's fields have names of their own, in an order of their own.
        padding = _ROW_PADDING.get(len(raw))
        if padding is None:
            raise EntryError("unsupported entry type", f"a row of {len(raw)} values: Url's 1 to 8 fields")
        return raw + padding
    if isinstance(raw, str):
        return (raw, *_NO_FIELDS)
    if isinstance(raw, Mapping):
        return _from_mapping(raw)
    raise EntryError("unsupported entry type", type(raw).__name__)


def _from_mapping(raw: Mapping[object, object]) -> tuple[object, ...]:
    unknown = set(raw) - _URL_KEYS
    if unknown or "loc" not in raw:
        detail = f"unknown keys {sorted(map(str, unknown))}" if unknown else "no 'loc' key"
        raise EntryError("unsupported entry type", f"mapping with {detail}")
    return tuple(raw.get(name) for name in _URL_FIELDS)
