"""What one sitemap entry is, and how a raw provider value becomes a valid one.

Providers yield `Url` records, plain strings (a loc alone) or mappings with the same
keys. `Url` never raises on bad values: checking happens here, per entry, when the
middleware pulls it, so one bad row skips one URL instead of killing the whole file::

    site = Site.parse("https://shop.example")
    normalise = Normaliser(site)
    normalise(Url("/p/caf\u00e9?a=1&b=2", lastmod=date(2024, 5, 1)))
    # NormalUrl(loc='https://shop.example/p/caf%C3%A9?a=1&amp;b=2', lastmod='2024-05-01', ...)

Every string in a `NormalUrl` is ready to be placed in XML text as is. The page
writer asks for the finished element instead, the one place a ``<url>`` is written::

    normalise.element(Url("/p/1", changefreq="daily"))
    # ('<url><loc>https://shop.example/p/1</loc><changefreq>daily</changefreq></url>\n', None)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import NamedTuple
from urllib.parse import urlsplit

from ..errors import EntryError
from .uris import Site, canonical_host, quote_uri, remove_dot_segments
from .xmltext import escape_uri

__all__ = [
    "CHANGEFREQS",
    "NormalUrl",
    "Normaliser",
    "Url",
    "w3c_datetime",
]

# sitemaps.org 0.9: the seven values the schema's tChangeFreq enumerates.
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})

# sitemaps.org: "must be less than 2,048 characters"; the XSD also demands at least 12.
MAX_LOC_LENGTH = 2047
MIN_LOC_LENGTH = 12

_UTC = UTC
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# A path on our site ("/..." but not "//host/...") made only of these needs no quoting and
# holds nothing to reject: the fast path, checked in one match. Not "#", and no "." or ".."
# segment before any "?": those take the slow path, which drops the fragment and removes
# dot-segments. The lookahead scans the path once more; checking segment by segment inside
# the main loop measured twice as slow. Not "%": an escape may need fixing.
_PLAIN_PATH = re.compile(r"(?![^?]*/\.\.?(?:[/?]|\Z))/(?!/)[A-Za-z0-9\-._~:/?@!$&'()*+,;=]*")
# XML 1.0 forbids C0 controls except tab/LF/CR; in a URL even those are malformed.
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")


class Url(NamedTuple):
    """One page of the site, as a provider describes it.

    Example::

        Url("/p/blue-shoe", lastmod=product.updated_at, changefreq="daily", priority=0.8)

    - ``loc``: absolute URL on the site's origin, or a path joined to ``base_url``.
    - ``lastmod``: `datetime` (aware ones are converted to UTC, naive ones taken as UTC),
      `date`, or an ISO 8601 string; ``None`` omits the element.
    - ``changefreq``: one of `CHANGEFREQS` (case-insensitive).
    - ``priority``: a number from 0.0 to 1.0.

    Nothing is checked here: values are validated when the entry is rendered, and a
    bad entry is skipped and logged (or raises, with ``Sitemaps(strict=True)``).
    Immutable; a NamedTuple rather than a frozen dataclass because providers build
    millions of them and a frozen dataclass costs twice as much to construct.
    """

    loc: str
    lastmod: datetime | date | str | None = None
    changefreq: str | None = None
    priority: float | Decimal | None = None


class NormalUrl(NamedTuple):
    """A validated entry; every field is XML-escaped text, ``None`` where absent."""

    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None


def w3c_datetime(value: object) -> str:
    """Format a lastmod in W3C Datetime, UTC, with an explicit offset.

    Aware datetimes are converted to UTC; naive ones are taken as UTC (the documented
    rule, so that a server's local zone never leaks into the output). Dates stay dates.
    Seconds precision: crawlers ignore fractions and HTTP dates have none.
    """
    if type(value) is datetime and value.tzinfo is _UTC and not value.microsecond:
        # The common case, first: a UTC datetime to the second is its own isoformat(). A test
        # (tests/test_rules.py) holds this branch to what the general one below writes.
        return value.isoformat()
    if isinstance(value, datetime):
        zone = value.tzinfo
        if zone is not None and zone is not _UTC:
            if value.utcoffset() is None:
                zone = None  # a tzinfo that names no offset leaves the datetime naive
            else:
                try:
                    value = value.astimezone(_UTC)
                except OverflowError:
                    # 0001-01-01T00:30+01:00 is a real instant with no year-1-or-later UTC form.
                    raise EntryError("invalid lastmod", f"{value!r} is out of range in UTC") from None
                zone = _UTC
        if value.microsecond:
            value = value.replace(microsecond=0)
        # isoformat() is C and several times faster than formatting the fields ourselves.
        return value.isoformat() if zone is _UTC else value.isoformat() + "+00:00"
    if isinstance(value, date):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                return w3c_datetime(date.fromisoformat(text))
            if len(text) >= 16 and text[10] in "Tt ":
                return w3c_datetime(datetime.fromisoformat(text))
        except ValueError:
            pass
        raise EntryError("invalid lastmod", repr(value))
    raise EntryError("invalid lastmod", f"{type(value).__name__} is not a date or datetime")


def _priority(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise EntryError("invalid priority", f"{type(value).__name__} is not a number")
    # Decimal NaNs are checked before comparing: ordering a Decimal NaN raises InvalidOperation.
    nan = value.is_nan() if isinstance(value, Decimal) else isinstance(value, float) and math.isnan(value)
    if nan or not 0 <= value <= 1:
        raise EntryError("invalid priority", f"{value!r} is not between 0.0 and 1.0")
    # xsd:decimal has no exponent form, so never let repr() produce one; abs() because
    # -0.0 passes the range check but would print its sign.
    text = f"{abs(value):.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


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


class Normaliser:
    """Turns raw provider values into `NormalUrl`s for one site, or raises `EntryError`.

    ``prefix`` is the app's mount path (SCRIPT_NAME / root_path, URI-encoded): a relative
    loc is a path as the app sees it, so it is joined below ``base_url`` + ``prefix``.
    """

    __slots__ = ("_max_path", "_min_path", "_origin_slash", "_priority_xml", "_root", "site")

    def __init__(self, site: Site, prefix: str = "") -> None:
        self.site = site
        self._root = site.root + prefix  # relative locs live under the app's mount point
        # Plain paths within these lengths are neither too long nor too short as URLs.
        self._min_path = MIN_LOC_LENGTH - len(self._root)
        self._max_path = MAX_LOC_LENGTH + 1 - len(self._root)
        self._origin_slash = site.origin + "/"
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
        if type(raw) is Url:
            loc, lastmod, changefreq, priority = raw
        else:
            loc, lastmod, changefreq, priority = _fields(raw)
        if type(loc) is str and self._min_path <= len(loc) < self._max_path and _PLAIN_PATH.fullmatch(loc):
            loc_text = escape_uri(self._root + loc)  # `loc`'s common case, of a length known to be valid
        else:
            loc_text = self.loc(loc)
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
        # One f-string, not appends: measured 30% faster.
        lastmod_xml = "" if lastmod_text is None else f"<lastmod>{lastmod_text}</lastmod>"
        return f"<url><loc>{loc_text}</loc>{lastmod_xml}{changefreq_xml}{priority_xml}</url>\n", lastmod_text

    def __call__(self, raw: object) -> NormalUrl:
        """``raw``'s validated fields, by the same rules `element` writes them with."""
        loc, lastmod, changefreq, priority = _fields(raw)
        return NormalUrl(
            self.loc(loc),
            None if lastmod is None else w3c_datetime(lastmod),
            None if changefreq is None else _changefreq(changefreq),
            None if priority is None else _priority(priority),
        )

    def loc(self, loc: object) -> str:
        """Validate and canonicalise one loc; the result is absolute, ASCII and XML-escaped."""
        if not isinstance(loc, str):
            raise EntryError("invalid loc", f"{type(loc).__name__} is not a string")
        if not loc:
            raise EntryError("invalid loc", "empty")
        if _PLAIN_PATH.fullmatch(loc) is not None:
            absolute = self._root + loc  # the common case: a plain path on our site
        elif loc.startswith(self._origin_slash) and _PLAIN_PATH.fullmatch(loc, len(self._origin_slash) - 1):
            absolute = loc  # a plain absolute URL on our origin: its path is checked in place
        else:
            absolute = self._slow_loc(loc)
        if len(absolute) > MAX_LOC_LENGTH:
            raise EntryError("loc too long", f"{len(absolute):,} characters, the limit is {MAX_LOC_LENGTH:,}")
        if len(absolute) < MIN_LOC_LENGTH:
            raise EntryError("loc too short", absolute)
        return escape_uri(absolute)

    def _slow_loc(self, loc: str) -> str:
        """Every loc that needs quoting, joining or a host check (or holds something bad).

        A fragment is dropped: it names a part of the page, and the sitemap lists the page
        (crawlers drop it too). A ``#!`` one is refused instead, as "invalid loc": each
        names another view of an AJAX app, and dropping it would list the page once per view.
        Dot-segments are removed (RFC 3986 §5.2.4) from the loc's own path before it is
        joined, so a relative loc never climbs out of ``base_url`` and the mount path.
        """
        if _CONTROL.search(loc) is not None:
            raise EntryError("invalid loc", "whitespace or control character")
        if not loc.isascii():
            try:
                loc.encode("utf-8")
            except UnicodeEncodeError:
                raise EntryError("invalid loc", "not valid Unicode (lone surrogate)") from None
        loc, _, fragment = loc.partition("#")
        if fragment.startswith("!"):
            raise EntryError("invalid loc", "a #! fragment names a view the page alone cannot stand for")
        if loc.startswith(self._origin_slash):
            # Quote only after the authority: an IPv6 host's brackets must stay as they are.
            absolute = self.site.origin + remove_dot_segments(quote_uri(loc[len(self._origin_slash) - 1 :]))
        elif loc[:1] == "/" and not loc.startswith("//"):
            absolute = self._root + remove_dot_segments(quote_uri(loc))
        elif loc.startswith("//") or _SCHEME.match(loc) is not None:
            absolute = self._absolute(loc)
        else:
            absolute = self._root + remove_dot_segments(f"/{quote_uri(loc)}")
        return absolute

    def _absolute(self, loc: str) -> str:
        site = self.site
        # EntryError is a ValueError: raise it outside the try, or its reason would be lost.
        try:
            parts = urlsplit(f"{site.scheme}:{loc}" if loc.startswith("//") else loc)
            hostname, port = parts.hostname, parts.port
        except ValueError:
            raise EntryError("invalid loc", loc[:100]) from None
        scheme = parts.scheme.lower()
        if scheme != site.scheme:
            raise EntryError("other scheme", loc[:100])
        if not hostname:
            raise EntryError("invalid loc", loc[:100])
        if parts.username is not None or parts.password is not None:
            # https://shop.example@evil.com/ is evil.com; credentials never belong in a sitemap.
            raise EntryError("other host", loc[:100])
        try:
            host = canonical_host(scheme, hostname, port)
        except UnicodeError:
            raise EntryError("invalid loc", loc[:100]) from None
        if host != site.host:
            raise EntryError("other host", loc[:100])
        # The authority follows the first "//" (a scheme cannot hold "/"); searching for the
        # netloc text instead would find "s" inside "https" for a host named "s".
        tail = loc[loc.index("//") + 2 + len(parts.netloc) :]
        return site.origin + remove_dot_segments(quote_uri(tail or "/"))


_URL_KEYS = frozenset({"loc", "lastmod", "changefreq", "priority"})


def _fields(raw: object) -> tuple[object, object, object, object]:
    """The four raw fields of any entry shape a provider may yield."""
    if isinstance(raw, Url):
        return raw
    if isinstance(raw, str):
        return raw, None, None, None
    if isinstance(raw, Mapping):
        return _from_mapping(raw)
    raise EntryError("unsupported entry type", type(raw).__name__)


def _from_mapping(raw: Mapping[object, object]) -> Url:
    unknown = set(raw) - _URL_KEYS
    if unknown or "loc" not in raw:
        detail = f"unknown keys {sorted(map(str, unknown))}" if unknown else "no 'loc' key"
        raise EntryError("unsupported entry type", f"mapping with {detail}")
    return Url(**raw)  # type: ignore[arg-type]
