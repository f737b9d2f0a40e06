"""The change log's outbox: each consumer is delivered every change once it subscribed, in order,
by one holder at a time; a delivery not acknowledged is delivered again, and nothing twice after."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from sitemap_middleware.changes import ChangeLog, Trimmed

from ..conftest import BASE
from .test_ledger import render, seen

OTHER = "https://other.example"  # another site sharing the log


@pytest.fixture
def log(reopen: Callable[[], ChangeLog]) -> ChangeLog:
    """A baselined log, on each backend (`conftest.reopen`)."""
    log = reopen()
    render(log, [["/a"]], at=1000.0)  # the baseline
    return log


def paths(delivery: object) -> list[str]:
    return [change.loc.removeprefix(BASE) for change in delivery.changes]  # type: ignore[attr-defined]


def test_a_consumer_gets_the_changes_recorded_after_it_subscribed_in_order(log: ChangeLog) -> None:
    render(log, [["/a", "/before"]], at=2000.0)
    log.subscribe("hook")
    render(log, [["/a", "/before", "/1"]], at=3000.0)
    render(log, [["/a", "/before", "/1", "/2"]], at=4000.0)
    delivery = log.claim("hook", "worker-1")
    assert delivery is not None and paths(delivery) == ["/1", "/2"]
    assert log.acknowledge(delivery)
    assert log.claim("hook", "worker-1") is None
    assert log.pending("hook") == 0


def test_a_delivery_is_leased_to_one_holder_and_released_to_the_next(log: ChangeLog) -> None:
    log.subscribe("hook")
    render(log, [["/a", "/1"]], at=2000.0)
    first = log.claim("hook", "worker-1")
    assert first is not None
    assert log.claim("hook", "worker-2") is None  # worker 1 delivers it now
    log.release(first)  # not answered
    again = log.claim("hook", "worker-2")
    assert again is not None and paths(again) == ["/1"]
    assert not log.acknowledge(first)  # its lease is gone: it cannot move the cursor
    assert log.acknowledge(again)


def test_an_expired_lease_is_taken_over_and_a_restart_sends_nothing_answered(
    reopen: Callable[[], ChangeLog],
) -> None:
    log = reopen()
    render(log, [["/a"]], at=1000.0)
    log.subscribe("hook")
    render(log, [["/a", "/1"]], at=2000.0)
    assert log.claim("hook", "crashed", lease=-1.0) is not None  # its holder died mid-delivery
    restarted = reopen()
    restarted.subscribe("hook")  # a consumer keeps its cursor
    delivery = restarted.claim("hook", "worker-2")
    assert delivery is not None and paths(delivery) == ["/1"]
    assert restarted.acknowledge(delivery)
    render(restarted, [["/a", "/1", "/2"]], at=3000.0)
    assert paths(reopen().claim("hook", "worker-3")) == ["/2"]


def test_a_claim_is_at_most_its_limit_and_only_of_its_scope(log: ChangeLog) -> None:
    log.subscribe("indexnow")
    log.subscribe("indexnow|other")
    render(log, [["/a", "/1", "/2", "/3"]], at=2000.0)
    first = log.claim("indexnow", "w", limit=2)
    assert first is not None and paths(first) == ["/1", "/2"]
    assert log.acknowledge(first)
    assert log.claim("indexnow|other", "w", scope=OTHER) is None
    rest = log.claim("indexnow", "w", scope=BASE)
    assert rest is not None and paths(rest) == ["/3"]


def test_a_consumer_of_one_site_passes_what_another_site_changed(log: ChangeLog) -> None:
    """A log several sites share: a claim that finds nothing of its site moves its cursor past
    what the others recorded, so a quiet site's consumer neither counts their changes as its
    own pending ones nor keeps them from being trimmed; its own changes still reach it."""
    log.subscribe("indexnow|other")
    render(log, [["/a", "/1"]], at=2000.0)  # this site's change
    assert log.pending("indexnow|other") == 2  # the URL and its page, of the other site
    assert log.claim("indexnow|other", "w", scope=OTHER) is None
    assert log.pending("indexnow|other") == 0
    assert log.trim(datetime.fromtimestamp(2500.0, UTC)) == Trimmed(2)
    elsewhere = [seen(1, ["/x"]), seen(1, ["/x", "/y"])]
    for at, page in enumerate(elsewhere, 3000):
        log.record(replace(page, scope=OTHER), pages=1, at=float(at))  # a baseline, then /y
    delivery = log.claim("indexnow|other", "w", scope=OTHER)
    assert delivery is not None and paths(delivery) == ["/y"]


def test_claiming_for_a_consumer_never_subscribed_is_an_error(log: ChangeLog) -> None:
    with pytest.raises(LookupError, match="subscribe"):
        log.claim("nobody", "w")


def test_a_delivery_names_the_pages_whose_bytes_changed(log: ChangeLog) -> None:
    render(log, [["/a", "/b"], ["/c"]], at=1500.0)  # pages recorded after the baseline of [["/a"]]
    log.subscribe("cdn")
    render(log, [["/a", "/b"], ["/c", "/d"]], at=2000.0)
    delivery = log.claim("cdn", "w")
    assert delivery is not None and paths(delivery) == ["/d"]
    assert [(page.scope, page.section, page.page) for page in delivery.pages] == [(BASE, "products", 2)]
    assert all(change.kind != "page" for change in log.since())  # URL changes only
