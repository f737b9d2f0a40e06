"""``sitemaps.on_change``: each batch of changes reaches the callback off the request path,
is given again while it raises, and never again once it returned."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import pytest

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.changes import Change

from ..conftest import BASE, counter
from .conftest import Shelf, locs

Make = Callable[..., Sitemaps]


class Calls:
    """A callback that records each batch and the thread it ran on; fails its first ``fail``."""

    def __init__(self, fail: int = 0) -> None:
        self.batches: list[list[tuple[str, str]]] = []
        self.threads: list[str] = []
        self.fail = fail
        self.called = threading.Event()

    def __call__(self, changes: Sequence[Change]) -> None:
        self.threads.append(threading.current_thread().name)
        self.batches.append([(change.kind, change.loc) for change in changes])
        self.called.set()
        if len(self.batches) <= self.fail:
            raise RuntimeError("the webhook is down")


def test_the_callback_gets_each_change_once_on_the_push_thread(make_shop: Make) -> None:
    shelf = Shelf(3)
    sitemaps = make_shop(shelf, targets=[])
    calls = sitemaps.on_change(Calls(), name="search-index")
    sitemaps.refresh()
    shelf.rows["/p/new"] = None
    del shelf.rows["/p/00000"]
    sitemaps.refresh()
    assert calls.called.wait(10)
    assert sitemaps.push_now() == []  # waits for the thread's pass: nothing is left
    [batch] = calls.batches
    assert sorted(batch) == [("added", *locs("/p/new")), ("removed", *locs("/p/00000"))]
    assert calls.threads == ["sitemap-push"]
    assert counter(sitemaps, f"hook:search-index|{BASE}", "sent") == 1


def test_a_callback_that_raises_is_logged_counted_and_given_the_same_batch_again(
    make_shop: Make, caplog: pytest.LogCaptureFixture
) -> None:
    shelf = Shelf(3)
    sitemaps = make_shop(shelf, targets=[], window=30.0)
    calls = sitemaps.on_change(Calls(fail=2), name="webhook")
    sitemaps.refresh()
    shelf.rows["/p/new"] = None
    sitemaps.refresh()
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        sitemaps.push_now()  # raises: retried
        sitemaps.push_now()  # raises again
        sitemaps.push_now()  # returns
    assert sitemaps.push_now() == []  # once it returned, never again
    assert calls.batches == [[("added", *locs("/p/new"))]] * 3
    consumer = f"hook:webhook|{BASE}"
    assert (counter(sitemaps, consumer, "retried"), counter(sitemaps, consumer, "sent")) == (2, 1)
    assert any("the webhook is down" in record.getMessage() for record in caplog.records)


def test_a_hook_added_later_gets_nothing_recorded_before_it(make_shop: Make) -> None:
    shelf = Shelf(3)
    sitemaps = make_shop(shelf, targets=[], window=30.0)
    sitemaps.refresh()
    shelf.rows["/p/before"] = None
    sitemaps.refresh()
    calls = sitemaps.on_change(Calls(), name="late")
    shelf.rows["/p/after"] = None
    sitemaps.refresh()
    sitemaps.push_now()
    assert calls.batches == [[("added", *locs("/p/after"))]]


def test_on_change_without_a_change_log_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="changes=ChangeLog"):
        Sitemaps(base_url=BASE).on_change(Calls())


def test_two_hooks_of_one_name_are_a_configuration_error(make_shop: Make) -> None:
    sitemaps = make_shop(Shelf(1), targets=[])
    sitemaps.on_change(Calls(), name="twice")
    with pytest.raises(ConfigurationError, match="already registered"):
        sitemaps.on_change(Calls(), name="twice")
