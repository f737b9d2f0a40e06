"""What a provider may be, and how its entries are pulled in batches from any of those shapes.

A provider is a plain callable taking no arguments (or, by keyword, ``base_url``, and
``offset`` with ``limit``; anything else it requires is refused when it is registered).
It may return a sequence, a (sync) iterable or generator, an async iterable, or an
awaitable of any of those::

    def pages(): return ["/", "/about"]
    def products(): yield from (Url(f"/p/{p.slug}") for p in db.products())
    async def articles():
        async for row in db.stream("SELECT slug FROM articles"):
            yield f"/a/{row.slug}"

How a provider is called (its keywords checked at registration, an async one driven
through an `AsyncRunner`) is `callables`; this module pulls what it returns, whatever its
shape, and says what a section is. ``AsyncRunner``, ``Call``, ``LoopRunner`` and
``resolve`` are importable from here too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

from .callables import (
    OFFERED_KEYWORDS,
    WINDOW_KEYWORDS,
    AsyncRunner,
    Call,
    LoopRunner,
    resolve,
    takes_keyword,
)
from .errors import ProviderError
from .protocol.extensions import PLAIN, Extensions
from .protocol.hreflang import Localised
from .protocol.render import MAX_URLS
from .sources import Key, PagedSource

__all__ = [
    "AsyncRunner",
    "Batches",
    "Call",
    "LoopRunner",
    "Provider",
    "ProviderFunc",
    "Section",
    "localised",
    "resolve",
]

Batches = Generator[list[object], None, None]
ProviderResult = Iterable[object] | AsyncIterable[object] | Awaitable[Any]
ProviderFunc = Callable[..., ProviderResult]

# Batches start small so the first URL leaves at once even when a provider is slow,
# then grow so a fast provider pays the per-batch cost rarely.
FIRST_BATCH = 1
MAX_BATCH = 1024


@dataclass(frozen=True, slots=True)
class Provider:
    """A registered callable (or paged source) and the shape-agnostic way to pull its entries.

    A provider whose callable takes ``offset`` and ``limit`` keyword arguments is
    *windowed*: it is asked for exactly the rows of one page (``LIMIT``/``OFFSET`` in
    SQL), instead of being iterated from the start and skipped forward. ``limit`` is
    ``None`` when every row from ``offset`` on is wanted. A `sources.PagedSource` is
    asked for one page's entries from its first key on (``WHERE key >= :first``).
    """

    name: str
    call: Call
    source: PagedSource | None = None
    ranged: bool = False  # a paged source whose entries() takes ``end``: it reads whole key ranges

    @classmethod
    def wrap(cls, name: str, func: ProviderFunc | PagedSource) -> Provider:
        """Check ``func``'s signature (a `ConfigurationError` if we could never call it)."""
        if isinstance(func, PagedSource) and not callable(func):
            # A ranged source's entries() stops before ``end`` (`sources.PagedSource`).
            return cls(name, Call(func.entries), func, takes_keyword(func.entries, "end"))
        assert callable(func)
        return cls(name, Call.of(func, offered=OFFERED_KEYWORDS, what=f"provider for {name!r}"))

    @property
    def windowed(self) -> bool:
        return self.call.accepts >= WINDOW_KEYWORDS

    def batches(
        self,
        start: Key | None,
        run_async: AsyncRunner,
        limit: int | None = None,
        *,
        base_url: str = "",
        end: Key | None = None,
    ) -> Batches:
        """At most ``limit`` entries from ``start`` on, in growing batches: a raw position,
        or a paged source's key (and a `ranged` one's keys stop before ``end``; its
        ``start`` is ``None`` on page 1, whose range is open below).

        Closing the returned generator closes the provider's iterator too, so database
        cursors are released when a client goes away mid-page.
        """
        skip = 0  # entries to pass over first (a provider that is neither windowed nor paged)
        if self.source is not None:
            # A page of a paged source is never more than 50,000 entries.
            entries: Callable[..., object] = self.source.entries
            if self.ranged:
                entries = partial(entries, end=end)
            result = self._resolve(run_async, partial(entries, start, limit or MAX_URLS))
        elif self.windowed:
            assert start is not None
            result = self._call(run_async, base_url=base_url, offset=start, limit=limit)
        else:
            assert isinstance(start, int)
            result = self._call(run_async, base_url=base_url)
            skip = start
        if isinstance(result, (str, bytes, Mapping)):
            raise self._wrong_type(result)
        if isinstance(result, Sequence):
            batches = _sequence_batches(result, skip)
        elif isinstance(result, Iterable):
            batches = _iterator_batches(iter(result), skip)
        elif isinstance(result, AsyncIterable):
            batches = _async_batches(result.__aiter__(), skip, run_async)
        else:
            raise self._wrong_type(result)
        return batches if limit is None else _capped(batches, limit)

    def _call(self, run_async: AsyncRunner, **offered: object) -> object:
        return self._resolve(run_async, partial(self.call, **offered))

    def _resolve(self, run_async: AsyncRunner, call: Callable[[], object]) -> object:
        try:
            return resolve(call(), run_async)
        except Exception as exc:
            raise ProviderError(f"provider {self.name!r} raised {exc!r}") from exc

    def _wrong_type(self, result: object) -> ProviderError:
        return ProviderError(
            f"provider {self.name!r} returned {type(result).__name__}; expected an iterable, "
            "async iterable or sequence of entries (a Url, a str loc or a mapping)"
        )


def _sequence_batches(items: Sequence[object], start: int) -> Batches:
    # Slicing lets sequences that page lazily fetch only the window they are asked for.
    offset, size, total = start, FIRST_BATCH, len(items)
    while offset < total:
        yield list(items[offset : offset + size])
        offset += size
        size = min(size * 4, MAX_BATCH)


def _iterator_batches(iterator: Iterator[object], start: int) -> Batches:
    try:
        if start:
            deque(islice(iterator, start), maxlen=0)
        size = FIRST_BATCH
        while batch := list(islice(iterator, size)):
            yield batch
            size = min(size * 4, MAX_BATCH)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def _async_batches(iterator: AsyncIterator[object], start: int, run_async: AsyncRunner) -> Batches:
    try:
        if start:
            run_async(_skip, iterator, start)
        size = FIRST_BATCH
        while batch := run_async(_take, iterator, size):
            yield batch
            size = min(size * 4, MAX_BATCH)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with suppress(Exception):
                run_async(aclose)


def _capped(batches: Batches, limit: int) -> Batches:
    """Stop after ``limit`` entries: a page of a counted section ends where its window does."""
    try:
        for batch in batches:
            if len(batch) >= limit:
                yield batch[:limit]
                return
            limit -= len(batch)
            yield batch
    finally:
        batches.close()


async def _take(iterator: AsyncIterator[object], size: int) -> list[object]:
    batch: list[object] = []
    with suppress(StopAsyncIteration):
        while len(batch) < size:
            batch.append(await iterator.__anext__())
    return batch


async def _skip(iterator: AsyncIterator[object], count: int) -> None:
    with suppress(StopAsyncIteration):
        for _ in range(count):
            await iterator.__anext__()


class Section:
    """A named part of the sitemap tree: one provider, URLs per file, an optional version.

    ``version`` is a cheap callable (sync or async) returning a value that changes
    whenever the section's URLs do: a `datetime` of the last change (one
    ``SELECT MAX(updated_at)``), a counter or a hash. ``count`` is a cheap callable
    returning how many entries the provider yields (``SELECT COUNT(*)``): with it,
    pages are fixed windows of ``page_size`` entries and the index never iterates.
    ``extensions``: what its pages carry (their namespaces, languages, news window).
    """

    __slots__ = ("count", "extensions", "name", "page_size", "provider", "recorded", "version")

    def __init__(
        self,
        name: str,
        provider: Provider,
        page_size: int,
        version: Call | None = None,
        count: Call | None = None,
        extensions: Extensions = PLAIN,
        recorded: bool = True,
    ) -> None:
        self.name = name
        self.provider = provider
        self.page_size = page_size
        self.version = version
        self.count = count
        self.extensions = extensions
        # Its pages go to the change log, and its plans are held to the shrink rule: a recent
        # section's are not (its URLs are other sections' changes; it empties as they age).
        self.recorded = recorded

    def batches(
        self,
        start: Key | None,
        run_async: AsyncRunner,
        limit: int | None = None,
        *,
        base_url: str = "",
        end: Key | None = None,
    ) -> Batches:
        """The provider's batches from position ``start``, as the section's pages count them.

        In a section with languages, positions count URLs: entry ``n`` in language ``k`` is
        position ``n * languages + k`` (`localised`).
        """
        if self.extensions.languages is None:
            return self.provider.batches(start, run_async, limit, base_url=base_url, end=end)
        per_entry = self.extensions.urls_per_entry
        assert isinstance(start, int)  # a paged source takes no languages (add_provider refuses it)
        first, skip = divmod(start, per_entry)
        entries = None if limit is None else -(-(skip + limit) // per_entry)
        batches = self.provider.batches(first, run_async, entries, base_url=base_url)
        return localised(batches, per_entry, skip, limit)


def localised(batches: Batches, per_entry: int, skip: int = 0, limit: int | None = None) -> Batches:
    """Each entry as ``per_entry`` `Localised` ones, in batches of at most `MAX_BATCH`: one
    batch of entries times languages is never held, let alone the section's.

    The first ``skip`` are left out (a page may start inside an entry), and at most ``limit`` given.
    """
    try:
        batch: list[object] = []
        for entries in batches:
            for entry in entries:
                for language in range(per_entry):
                    if skip:
                        skip -= 1
                        continue
                    if limit is not None:
                        if limit == 0:
                            if batch:
                                yield batch
                            return
                        limit -= 1
                    batch.append(Localised(entry, language))
                    if len(batch) >= MAX_BATCH:
                        yield batch
                        batch = []
            if batch:
                yield batch  # as soon as the provider's batch is spent: a slow provider streams
                batch = []
    finally:
        batches.close()
