"""Entries to XML bytes: the urlset of one page and the sitemap index. Pure: no I/O, no HTTP.

The page writer is fed raw provider values in batches and hands back UTF-8 chunks,
so a caller can stream a page of 50,000 URLs without ever holding it whole::

    page = PageWriter(Normaliser(site), limits=Limits(), on_skip=log_skip)
    out = [page.head()]
    for batch in batches:
        out.append(page.feed(batch))
        if page.full:
            break
    out.append(page.tail())

It stops a page before either protocol limit would break and says where it stopped
(`consumed`), which is how pages are cut by bytes as well as by count (and, in a section
with news, at 1,000 news entries). A section with extensions passes its own ``head``,
which declares their namespaces.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import EntryError
from .entries import Normaliser
from .extensions import NEWS_END
from .lastmods import FIRST_WEB, Plausible

__all__ = ["IndexEntry", "Limits", "PageWriter", "render_index"]

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
URLSET_HEAD = (XML_DECLARATION + f'<urlset xmlns="{SITEMAP_NS}">\n').encode()
URLSET_TAIL = b"</urlset>\n"
INDEX_HEAD = (XML_DECLARATION + f'<sitemapindex xmlns="{SITEMAP_NS}">\n').encode()
INDEX_TAIL = b"</sitemapindex>\n"

# sitemaps.org: at most 50,000 URLs and 50 MiB (52,428,800 bytes) uncompressed per file,
# and at most 50,000 sitemaps per index file.
MAX_URLS = 50_000
MAX_BYTES = 50 * 1024 * 1024
MAX_SITEMAPS = 50_000
# Google News: at most 1,000 <news:news> per file.
MAX_NEWS = 1000

SkipHandler = Callable[[EntryError, object], None]
# (reason, the lastmod not published, the raw entry): counted and logged by the engine.
LastmodHandler = Callable[[str, str, object], None]
_ANY_TEXT = "\U0010ffff"  # later than every lastmod: nothing is looked at closer


@dataclass(frozen=True, slots=True)
class Limits:
    """How much one urlset file may hold; both default to the protocol's maximum.

    ``max_news``: news entries per file, in a section with news (``None``: not counted).
    """

    max_urls: int = MAX_URLS
    max_bytes: int = MAX_BYTES
    max_news: int | None = None


class PageWriter:
    """Renders one urlset file from raw entries, enforcing the count and byte limits.

    Attributes read after feeding: ``count`` (URLs written), ``consumed`` (raw values
    taken, including skipped ones: the next page starts there), ``full`` (a limit was
    reached and the last batch was not taken whole) and ``lastmod`` (newest lastmod
    written, or ``None`` when no entry had one). ``head``: the urlset start tag.
    """

    __slots__ = (
        "_budget",
        "_empty_budget",
        "_head",
        "_news",
        "_normalise",
        "_on_lastmod",
        "_on_skip",
        "_plausible",
        "consumed",
        "count",
        "full",
        "lastmod",
        "limits",
    )

    def __init__(
        self,
        normalise: Normaliser,
        *,
        limits: Limits,
        on_skip: SkipHandler,
        head: bytes = URLSET_HEAD,
        plausible: Plausible | None = None,
        on_lastmod: LastmodHandler | None = None,
    ) -> None:
        self._normalise = normalise
        self._on_skip = on_skip
        # Lastmods later than this, or before the web, are not published (`lastmods`).
        self._plausible = plausible
        self._on_lastmod = on_lastmod
        self._head = head
        self.limits = limits
        self._budget = self._empty_budget = limits.max_bytes - len(head) - len(URLSET_TAIL)
        self._news = 0
        self.count = 0
        self.consumed = 0
        self.full = False
        self.lastmod: str | None = None

    def head(self) -> bytes:
        return self._head

    @staticmethod
    def tail() -> bytes:
        return URLSET_TAIL

    def feed(self, batch: Sequence[object]) -> bytes:
        """Render as much of ``batch`` as fits; returns the UTF-8 bytes written."""
        element = self._normalise.element
        max_urls = self.limits.max_urls
        max_news = self.limits.max_news
        parts: list[str] = []
        size = 0
        budget = self._budget
        count = self.count
        lastmod = self.lastmod
        plausible = self._plausible
        latest = _ANY_TEXT if plausible is None else plausible.latest
        taken = 0
        for raw in batch:
            try:
                text, entry_lastmod = element(raw)
                if entry_lastmod is not None and (entry_lastmod > latest or entry_lastmod < FIRST_WEB):
                    text, entry_lastmod = self._believable(text, entry_lastmod, raw)
            except EntryError as error:
                taken += 1
                self._on_skip(error, raw)
                continue
            # Text is ASCII unless a future extension adds Unicode; measure bytes then.
            length = len(text) if text.isascii() else len(text.encode())
            if length > self._empty_budget:
                # Larger than an empty page: it can never be placed, so skip it here, even
                # after a full page (no later page would ever see it, or count it).
                taken += 1
                self._on_skip(EntryError("entry too large", f"{length} bytes"), raw)
                continue
            if count >= max_urls or size + length > budget:
                self.full = True
                break
            if max_news is not None and text.endswith(NEWS_END):
                if self._news >= max_news:
                    self.full = True
                    break
                self._news += 1
            taken += 1
            size += length
            count += 1
            parts.append(text)
            if entry_lastmod is not None and (lastmod is None or entry_lastmod > lastmod):
                # UTC-normalised W3C strings order like the instants they name.
                lastmod = entry_lastmod
        self._budget = budget - size
        self.count = count
        self.consumed += taken
        self.lastmod = lastmod
        return "".join(parts).encode()

    def _believable(self, text: str, lastmod: str, raw: object) -> tuple[str, str | None]:
        """``text`` as published: without its ``<lastmod>`` when that cannot be believed
        (reported to ``on_lastmod``, which may raise: ``strict``)."""
        plausible = self._plausible
        if plausible is None:
            return text, lastmod
        fault = plausible.fault(lastmod)
        if fault is None:
            return text, lastmod
        if self._on_lastmod is not None:
            self._on_lastmod(fault, lastmod, raw)
        return text.replace(f"<lastmod>{lastmod}</lastmod>", "", 1), None


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One ``<sitemap>`` of an index: an absolute, escaped URL and its true lastmod."""

    loc: str
    lastmod: str | None = None


def render_index(entries: Iterable[IndexEntry]) -> bytes:
    """A whole ``<sitemapindex>``; callers keep it under `MAX_SITEMAPS` children."""
    parts = [INDEX_HEAD.decode()]
    for entry in entries:
        parts.append(f"<sitemap><loc>{entry.loc}</loc>")
        if entry.lastmod is not None:
            parts.append(f"<lastmod>{entry.lastmod}</lastmod>")
        parts.append("</sitemap>\n")
    parts.append(INDEX_TAIL.decode())
    return "".join(parts).encode()
