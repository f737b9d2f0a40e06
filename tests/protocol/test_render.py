"""Entries to XML bytes: the page writer's count and byte limits, skips, lastmod, and the index."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta, timezone

from sitemap_middleware import EntryError, Url
from sitemap_middleware.protocol.entries import Normaliser
from sitemap_middleware.protocol.render import (
    URLSET_HEAD,
    URLSET_TAIL,
    IndexEntry,
    Limits,
    PageWriter,
    render_index,
)
from sitemap_middleware.protocol.uris import Site

from ..conftest import BASE
from ..xsd import lastmods, locs, validate

NORMALISE = Normaliser(Site.parse(BASE))
FRAME = len(URLSET_HEAD) + len(URLSET_TAIL)


class Page:
    """A page writer with its skips recorded and its output collected."""

    def __init__(self, limits: Limits) -> None:
        self.skips: list[tuple[str, object]] = []
        self.writer = PageWriter(NORMALISE, limits=limits, on_skip=self._skip)
        self.chunks = [self.writer.head()]

    def _skip(self, error: EntryError, raw: object) -> None:
        self.skips.append((error.reason, raw))

    def feed(self, batch: Sequence[object]) -> bytes:
        chunk = self.writer.feed(batch)
        self.chunks.append(chunk)
        return chunk

    def document(self) -> bytes:
        return b"".join([*self.chunks, self.writer.tail()])


def size_of(raw: object) -> int:
    """Bytes one entry takes in a urlset."""
    return len(NORMALISE.element(raw)[0].encode())


def paths(n: int, start: int = 0) -> list[str]:
    return [f"/p/{i:04d}" for i in range(start, start + n)]


# -- count limit -----------------------------------------------------------------------------------


def test_page_stops_at_max_urls() -> None:
    page = Page(Limits(max_urls=3))
    page.feed(paths(5))
    assert (page.writer.count, page.writer.consumed, page.writer.full) == (3, 3, True)
    assert locs(validate(page.document())) == [f"{BASE}{p}" for p in paths(3)]


def test_page_counts_across_batches() -> None:
    page = Page(Limits(max_urls=3))
    page.feed(paths(2))
    page.feed(paths(2, start=2))
    assert (page.writer.count, page.writer.consumed, page.writer.full) == (3, 3, True)
    assert locs(validate(page.document())) == [f"{BASE}{p}" for p in paths(3)]


def test_page_filled_exactly_by_a_batch_is_full_only_when_more_is_offered() -> None:
    page = Page(Limits(max_urls=3))
    page.feed(paths(3))
    assert (page.writer.count, page.writer.full) == (3, False)
    assert page.feed(paths(1, start=3)) == b""
    assert (page.writer.count, page.writer.consumed, page.writer.full) == (3, 3, True)


def test_invalid_entries_do_not_count_towards_max_urls() -> None:
    page = Page(Limits(max_urls=3))
    page.feed(["/p/1", "https://evil.example/", "/p/2", 42, "/p/3", "/p/4"])
    assert (page.writer.count, page.writer.consumed) == (3, 5)
    assert locs(validate(page.document())) == [f"{BASE}/p/1", f"{BASE}/p/2", f"{BASE}/p/3"]


# -- byte limit ------------------------------------------------------------------------------------


def test_page_stops_before_exceeding_max_bytes() -> None:
    entry = size_of(paths(1)[0])
    max_bytes = FRAME + 2 * entry + entry // 2  # room for two and a half entries
    page = Page(Limits(max_bytes=max_bytes))
    page.feed(paths(10))
    document = page.document()
    assert len(document) <= max_bytes
    assert (page.writer.count, page.writer.consumed, page.writer.full) == (2, 2, True)
    assert locs(validate(document)) == [f"{BASE}{p}" for p in paths(2)]


def test_page_may_fill_max_bytes_exactly() -> None:
    max_bytes = FRAME + 2 * size_of(paths(1)[0])
    page = Page(Limits(max_bytes=max_bytes))
    page.feed(paths(3))
    document = page.document()
    assert len(document) == max_bytes
    assert len(locs(validate(document))) == 2


def test_byte_limit_holds_across_batches() -> None:
    entry = size_of(paths(1)[0])
    max_bytes = FRAME + 5 * entry - 1  # room for four
    page = Page(Limits(max_bytes=max_bytes))
    for start in range(0, 9, 3):
        page.feed(paths(3, start=start))
        if page.writer.full:
            break
    assert (page.writer.count, page.writer.consumed, page.writer.full) == (4, 4, True)
    assert len(page.document()) <= max_bytes
    validate(page.document())


def test_entry_larger_than_an_empty_page_is_skipped_as_too_large() -> None:
    small = size_of("/p/1")
    huge = "/" + "x" * 500
    page = Page(Limits(max_bytes=FRAME + small + 10))
    page.feed([huge, "/p/1"])
    assert page.skips == [("entry too large", huge)]
    assert (page.writer.count, page.writer.consumed) == (1, 2)
    assert locs(validate(page.document())) == [f"{BASE}/p/1"]


def test_entry_too_large_for_the_rest_of_a_page_starts_the_next_one() -> None:
    # Not skipped: it fits on an empty page, so the next page begins with it.
    big = "/" + "x" * 100
    page = Page(Limits(max_bytes=FRAME + size_of("/p/1") + size_of(big) - 1))
    page.feed(["/p/1", big, "/p/2"])
    assert page.skips == []
    assert (page.writer.count, page.writer.consumed, page.writer.full) == (1, 1, True)

    next_page = Page(page.writer.limits)
    next_page.feed(["/p/1", big, "/p/2"][page.writer.consumed :])
    assert locs(validate(next_page.document())) == [f"{BASE}{big}"]


# -- skips and lastmod -----------------------------------------------------------------------------


def test_invalid_entries_are_reported_to_on_skip_with_reason_and_raw_value() -> None:
    bad_host = Url("https://evil.example/p/1")
    bad_priority = Url("/p/2", priority=7)
    page = Page(Limits())
    page.feed(["/p/1", bad_host, bad_priority, b"/p/3"])
    assert page.skips == [
        ("other host", bad_host),
        ("invalid priority", bad_priority),
        ("unsupported entry type", b"/p/3"),
    ]
    assert locs(validate(page.document())) == [f"{BASE}/p/1"]


def test_lastmod_is_the_newest_of_the_page() -> None:
    page = Page(Limits())
    page.feed(
        [
            Url("/p/1", lastmod=datetime(2024, 1, 2, 3, 0, tzinfo=UTC)),
            # 23:00 at -05:00 is 04:00 UTC the next day: the newest instant, the smallest wall time.
            Url("/p/2", lastmod=datetime(2024, 1, 1, 23, 0, tzinfo=timezone(timedelta(hours=-5)))),
            Url("/p/3", lastmod=date(2023, 12, 31)),
            Url("/p/4"),
        ]
    )
    assert page.writer.lastmod == "2024-01-02T04:00:00+00:00"


def test_lastmod_is_none_when_no_entry_has_one() -> None:
    page = Page(Limits())
    page.feed(["/p/1", Url("/p/2")])
    assert page.writer.lastmod is None


def test_lastmod_of_skipped_entries_is_ignored() -> None:
    page = Page(Limits())
    page.feed(
        [
            Url("/p/1", lastmod=date(2024, 1, 1)),
            Url("https://evil.example/", lastmod=date(2030, 1, 1)),
            Url("/p/2", priority=3, lastmod=date(2031, 1, 1)),
        ]
    )
    assert page.writer.lastmod == "2024-01-01"


def test_lastmod_of_entries_left_for_the_next_page_is_ignored() -> None:
    page = Page(Limits(max_urls=1))
    page.feed([Url("/p/1", lastmod=date(2024, 1, 1)), Url("/p/2", lastmod=date(2030, 1, 1))])
    assert page.writer.lastmod == "2024-01-01"


def test_page_document_carries_every_field() -> None:
    page = Page(Limits())
    page.feed([Url("/p/1", lastmod=date(2024, 5, 1), changefreq="daily", priority=0.8), "/p/2"])
    root = validate(page.document())
    assert locs(root) == [f"{BASE}/p/1", f"{BASE}/p/2"]
    assert lastmods(root) == ["2024-05-01", None]


# -- index -----------------------------------------------------------------------------------------


def test_index_is_valid_and_lists_its_entries_in_order() -> None:
    entries = [
        IndexEntry(f"{BASE}/sitemap-products-1.xml", "2024-05-01T10:00:00+00:00"),
        IndexEntry(f"{BASE}/sitemap-products-2.xml"),
        IndexEntry(f"{BASE}/sitemap-pages-1.xml", "2024-05-01"),
    ]
    root = validate(render_index(entries))
    assert locs(root) == [entry.loc for entry in entries]
    assert lastmods(root) == ["2024-05-01T10:00:00+00:00", None, "2024-05-01"]


def test_index_loc_is_placed_as_given_already_escaped() -> None:
    root = validate(render_index([IndexEntry(f"{BASE}/a&amp;b/sitemap-pages-1.xml")]))
    assert locs(root) == [f"{BASE}/a&b/sitemap-pages-1.xml"]
