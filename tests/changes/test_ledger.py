"""The change log's one algorithm (`changes.ledger.record`) over each backend (SQLite, Redis).

Pages are rendered by the real renderer (`PageWriter`), so the log reads exactly what
crawlers read; sections here are lists of pages, each a list of (path, lastmod).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import pytest

from sitemap_middleware import Url
from sitemap_middleware.changes import Change, ChangeLog
from sitemap_middleware.changes.fingerprints import pack, read_page, unpack
from sitemap_middleware.changes.model import Seen
from sitemap_middleware.protocol.entries import Normaliser
from sitemap_middleware.protocol.render import Limits, PageWriter
from sitemap_middleware.protocol.uris import Site

from ..conftest import BASE

SCOPE = BASE
NORMALISE = Normaliser(Site.parse(BASE))
Page = Sequence[str | Url]


def body(page: Page) -> bytes:
    writer = PageWriter(NORMALISE, limits=Limits(), on_skip=lambda error, raw: pytest.fail(str(error)))
    return writer.head() + writer.feed(list(page)) + writer.tail()


def seen(number: int, page: Page, section: str = "products", *, by_position: bool = True) -> Seen:
    xml = body(page)
    return Seen(SCOPE, section, number, hashlib.sha256(xml).digest(), lambda: xml, by_position)


def render(log: ChangeLog, pages: Sequence[Page], at: float, section: str = "products") -> list[Change]:
    """One pass: every page recorded in order; the changes it reported."""
    changes: list[Change] = []
    for number, page in enumerate(pages, 1):
        changes += log.record(seen(number, page, section), pages=len(pages), at=at).changes
    return changes


def kinds(changes: Sequence[Change]) -> set[tuple[str, str]]:
    return {(change.kind, change.loc.removeprefix(BASE)) for change in changes}


@pytest.fixture
def log(reopen: Callable[[], ChangeLog]) -> ChangeLog:
    return reopen()


def test_a_page_reads_back_as_its_locs_and_fingerprints() -> None:
    entries = read_page(body(["/a?x=1&y=2", Url("/b", lastmod="2026-11-30"), "/c"]))
    assert list(entries) == [f"{BASE}/a?x=1&amp;y=2".encode(), f"{BASE}/b".encode(), f"{BASE}/c".encode()]
    assert len(set(entries.values())) == 3
    assert unpack(pack(entries)) == entries
    assert unpack(pack({})) == {}


def test_the_first_pass_is_a_baseline_and_reports_nothing(log: ChangeLog) -> None:
    assert render(log, [["/a", "/b"], ["/c"]], at=1000.0) == []
    state = log.state(SCOPE, "products")
    assert state is not None and state.baselined and state.urls == 3 and state.pages == 2


def test_added_changed_and_removed_are_reported_once_after_the_baseline(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c", "/d"]], at=1000.0)
    changes = render(log, [["/a", Url("/b", changefreq="daily")], ["/c", "/e"]], at=2000.0)
    assert kinds(changes) == {("changed", "/b"), ("added", "/e"), ("removed", "/d")}
    assert all(change.at.timestamp() == 2000.0 and change.section == "products" for change in changes)
    assert render(log, [["/a", Url("/b", changefreq="daily")], ["/c", "/e"]], at=3000.0) == []
    assert kinds(log.since()) == kinds(changes)


def test_a_url_moved_to_the_next_page_by_an_insert_before_it_is_neither_removed_nor_added(
    log: ChangeLog,
) -> None:
    render(log, [["/a", "/b"], ["/c", "/d"], ["/e"]], at=1000.0)
    # "/0" inserted first: every URL moves one place on, across each page boundary.
    assert kinds(render(log, [["/0", "/a"], ["/b", "/c"], ["/d", "/e"]], at=2000.0)) == {("added", "/0")}


def test_a_url_moved_back_by_a_delete_before_it_is_neither_removed_nor_added(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c", "/d"], ["/e"]], at=1000.0)
    assert kinds(render(log, [["/b", "/c"], ["/d", "/e"]], at=2000.0)) == {("removed", "/a")}


def test_a_url_moved_back_onto_a_page_recorded_earlier_in_the_pass_is_never_reported_removed(
    log: ChangeLog,
) -> None:
    render(log, [["/a", "/b"], ["/c", "/d"]], at=1000.0)
    # Page 1 is recorded, then "/b" is deleted: "/c" moves back onto page 1, recorded before it came.
    assert log.record(seen(1, ["/a", "/b"]), pages=2, at=2000.0).changes == []
    ended = log.record(seen(2, ["/d"]), pages=2, at=2000.0)
    assert ended.completed and ended.changes == []  # "/c" left page 2's head: it may be on page 1
    # The next pass finds it there: "/b" is removed, "/c" never was.
    assert kinds(render(log, [["/a", "/c"], ["/d"]], at=3000.0)) == {("removed", "/b")}
    assert render(log, [["/a", "/c"], ["/d"]], at=4000.0) == []
    assert kinds(log.since()) == {("removed", "/b")}


def test_a_url_deleted_from_the_head_of_its_page_is_removed_one_pass_later(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c", "/d"]], at=1000.0)
    assert render(log, [["/a", "/b"], ["/d"]], at=2000.0) == []  # "/c" may be on page 1 now
    assert kinds(render(log, [["/a", "/b"], ["/d"]], at=3000.0)) == {("removed", "/c")}


def test_a_url_deleted_from_the_head_of_the_first_page_is_removed_when_the_pass_ends(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c"]], at=1000.0)
    assert kinds(render(log, [["/b"], ["/c"]], at=2000.0)) == {("removed", "/a")}  # no page before it


def test_a_url_deleted_from_the_head_of_a_keyed_page_is_removed_when_the_pass_ends(log: ChangeLog) -> None:
    """A keyed page is a range of its key: deleting rows moves no URL onto another page."""

    def keyed(pages: Sequence[Page], at: float) -> list[Change]:
        changes: list[Change] = []
        for number, page in enumerate(pages, 1):
            changes += log.record(seen(number, page, by_position=False), pages=len(pages), at=at).changes
        return changes

    keyed([["/a", "/b"], ["/c", "/d"]], at=1000.0)
    assert kinds(keyed([["/a", "/b"], ["/d"]], at=2000.0)) == {("removed", "/c")}


def test_a_removal_waits_for_the_pass_to_end(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c"]], at=1000.0)
    assert log.record(seen(1, ["/a"]), pages=2, at=2000.0).changes == []  # "/b" may be on page 2 now
    assert kinds(log.record(seen(2, ["/c"]), pages=2, at=2000.0).changes) == {("removed", "/b")}


def test_urls_on_pages_past_the_plans_end_are_removed_when_the_pass_ends(log: ChangeLog) -> None:
    render(log, [["/a"], ["/b"], ["/c"]], at=1000.0)
    assert kinds(render(log, [["/a"], ["/b"]], at=2000.0)) == {("removed", "/c")}
    assert log.state(SCOPE, "products").pages == 2  # type: ignore[union-attr]


def test_an_unchanged_page_is_not_read_again(log: ChangeLog) -> None:
    render(log, [["/a"]], at=1000.0)
    xml = body(["/a"])

    def unread() -> bytes:
        raise AssertionError("the page's bytes were read though its digest was recorded")

    same = Seen(SCOPE, "products", 1, hashlib.sha256(xml).digest(), unread)
    recorded = log.record(same, pages=1, at=2000.0)
    assert recorded.changes == [] and recorded.completed


def test_without_a_known_plan_no_pass_ends(log: ChangeLog) -> None:
    render(log, [["/a", "/b"]], at=1000.0)
    recorded = log.record(seen(1, ["/a", "/c"]), pages=None, at=2000.0)
    assert kinds(recorded.changes) == {("added", "/c")} and not recorded.completed


def test_a_restart_on_the_same_log_reports_nothing_twice(reopen: Callable[[], ChangeLog]) -> None:
    render(reopen(), [["/a", "/b"]], at=1000.0)
    render(reopen(), [["/a", "/c"]], at=2000.0)
    again = reopen()
    assert render(again, [["/a", "/c"]], at=3000.0) == []
    assert kinds(again.since()) == {("added", "/c"), ("removed", "/b")}


def test_since_is_after_a_time_and_by_section(log: ChangeLog) -> None:
    from datetime import UTC, datetime

    for section in ("products", "posts"):
        render(log, [["/a"]], at=1000.0, section=section)
        render(log, [["/a", f"/{section}-1"]], at=2000.0, section=section)
        render(log, [["/a", f"/{section}-1", f"/{section}-2"]], at=3000.0, section=section)
    later = log.since(datetime.fromtimestamp(2000.0, UTC), section="posts")
    assert [change.loc.removeprefix(BASE) for change in later] == ["/posts-2"]
    assert [change.loc.removeprefix(BASE) for change in log.since(section="products")] == [
        "/products-1",
        "/products-2",
    ]


def test_a_published_loc_is_reported_as_the_url_it_names(log: ChangeLog) -> None:
    render(log, [["/a"]], at=1000.0)
    [change] = render(log, [["/a", "/s?q=1&sort=new"]], at=2000.0)
    assert change.loc == f"{BASE}/s?q=1&sort=new"


def test_a_url_that_moves_to_another_page_and_changes_is_changed(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c", "/d"]], at=1000.0)
    changes = render(log, [["/0", "/a"], [Url("/b", changefreq="daily"), "/c"], ["/d"]], at=2000.0)
    assert kinds(changes) == {("added", "/0"), ("changed", "/b")}


def test_a_url_missing_from_its_page_that_comes_back_changed_is_changed(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c"]], at=1000.0)
    log.record(seen(1, ["/a"]), pages=2, at=2000.0)  # "/b" gone from page 1: missing
    recorded = log.record(seen(2, [Url("/b", priority=0.2), "/c"]), pages=2, at=2000.0)
    assert kinds(recorded.changes) == {("changed", "/b")}
