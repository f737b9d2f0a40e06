"""A change of an added or changed URL carries the lastmod its page published (`Change.lastmod`).

The log reads it back from the page's bytes, right after the ``<loc>`` of each ``<url>``;
every form of element the renderer writes (`protocol.entries`, languages, extensions) is
rendered here for real, so a form that put its lastmod elsewhere would fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from sitemap_middleware import Alternate, Image, News, Sitemaps, Url, Video
from sitemap_middleware.changes import ChangeLog

from ..conftest import BASE

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
BEFORE = "2026-11-01"
AFTER = "2026-11-30T08:15:00+00:00"


def plain(path: str, lastmod: str) -> Url:
    return Url(path, lastmod=lastmod)


def full(path: str, lastmod: str) -> Url:
    return Url(path, lastmod=lastmod, changefreq="daily", priority=0.5)


def alternates(path: str, lastmod: str) -> Url:
    group = [Alternate("en", f"{BASE}{path}"), Alternate("de", f"{BASE}/de{path}")]
    return Url(path, lastmod=lastmod, alternates=group)


def images(path: str, lastmod: str) -> Url:
    return Url(path, lastmod=lastmod, images=[Image(f"{BASE}/i{path}.jpg")])


def videos(path: str, lastmod: str) -> Url:
    video = Video(f"{BASE}/t.jpg", "A title", "A description", content_loc=f"{BASE}/v.mp4")
    return Url(path, lastmod=lastmod, videos=[video], priority=0.3)


def news(path: str, lastmod: str) -> Url:
    return Url(path, lastmod=lastmod, news=News("The Paper", "en", "2026-11-30", "A headline"))


FORMS: dict[str, tuple[Any, dict[str, Any]]] = {
    "plain": (plain, {}),
    "changefreq-priority": (full, {}),
    "alternates": (alternates, {"extensions": ["alternates"]}),
    "images": (images, {"extensions": ["images"]}),
    "videos": (videos, {"extensions": ["videos"]}),
    "news": (news, {"extensions": ["news"]}),
    "languages": (full, {"languages": {"en": "", "de": "/de"}, "x_default": "en"}),
}


class Rows:
    """A section's rows (path -> lastmod, ``None``: published without one), in path order."""

    def __init__(self, make: Any, rows: dict[str, str | None]) -> None:
        self.make = make
        self.rows = rows

    def __call__(self) -> Iterator[Url]:
        for path, lastmod in sorted(self.rows.items()):
            yield Url(path) if lastmod is None else self.make(path, lastmod)


def published(log: ChangeLog) -> dict[tuple[str, str], str | None]:
    return {(change.kind, change.loc.removeprefix(BASE)): change.lastmod for change in log.since()}


@pytest.mark.parametrize("form", list(FORMS))
def test_a_changed_url_carries_the_lastmod_its_page_published(
    reopen: Callable[[], ChangeLog], form: str
) -> None:
    make, options = FORMS[form]
    log = reopen()  # on each backend (`conftest.reopen`)
    rows = Rows(make, {"/a": BEFORE, "/b": BEFORE, "/c": BEFORE})
    sitemaps = Sitemaps(base_url=BASE, page_size=2, changes=log, clock=lambda: NOW)
    sitemaps.add_provider("pages", rows, **options)
    sitemaps.refresh()  # the baseline
    rows.rows.update({"/b": AFTER, "/d": AFTER, "/e": None})
    del rows.rows["/a"]
    sitemaps.refresh()
    got = published(log)
    if form == "languages":  # each entry is published once per language, each its own URL
        assert got[("changed", "/de/b")] == AFTER
        assert got[("added", "/de/d")] == AFTER
        got = {key: value for key, value in got.items() if not key[1].startswith("/de/")}
    assert got == {
        ("changed", "/b"): AFTER,
        ("added", "/d"): AFTER,
        ("added", "/e"): None,  # published without a lastmod
        ("removed", "/a"): None,
    }


def test_a_lastmod_is_kept_across_a_restart_on_the_same_log(reopen: Callable[[], ChangeLog]) -> None:
    rows = Rows(plain, {"/a": BEFORE})

    def site() -> Sitemaps:
        sitemaps = Sitemaps(base_url=BASE, changes=reopen(), clock=lambda: NOW)
        sitemaps.add_provider("pages", rows)
        return sitemaps

    site().refresh()
    rows.rows["/a"] = AFTER
    site().refresh()
    assert published(reopen()) == {("changed", "/a"): AFTER}
