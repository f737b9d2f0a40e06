"""Issue 9 ("Smaller"): bounded log lines, strict hosts, future If-Modified-Since."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from sitemap_middleware import EntryError, Sitemaps, Url
from sitemap_middleware.entries import Normaliser
from sitemap_middleware.stats import Stats
from sitemap_middleware.uris import Site

from .conftest import SitemapClient

BASE = "https://shop.example"
HUGE = "9" * 5_000_000  # a 5 MB lastmod or changefreq, as a broken export produces
MAX_LOG_LINE = 1024

MakeClient = Callable[..., SitemapClient]


# -- log lines stay small ----------------------------------------------------------------------


def skip_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "sitemap_middleware" and r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(Url("/p/1", lastmod=HUGE), id="lastmod"),
        pytest.param(Url("/p/1", changefreq=HUGE), id="changefreq"),
    ],
)
def test_skip_log_line_is_bounded_and_names_the_reason(entry: Url, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(EntryError) as caught:
        Normaliser(Site.parse(BASE))(entry)
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        Stats().skip("products", caught.value, entry)
    [record] = skip_records(caplog)
    message = record.getMessage()
    assert len(message) < MAX_LOG_LINE
    assert caught.value.reason in message
    assert "products" in message


def test_skip_log_record_holds_no_huge_argument(caplog: pytest.LogCaptureFixture) -> None:
    # A structured handler may serialise the arguments themselves, not just the message.
    entry = Url("/p/1", lastmod=HUGE)
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        Stats().skip("products", EntryError("invalid lastmod", repr(HUGE)), entry)
    [record] = skip_records(caplog)
    assert all(len(str(arg)) < MAX_LOG_LINE for arg in record.args or ())


def test_short_skip_log_line_is_quoted_whole(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        Stats().skip("products", EntryError("invalid changefreq", "'sometimes'"), Url("/p/1"))
    [record] = skip_records(caplog)
    assert record.getMessage() == (
        "sitemap section 'products': skipped entry Url(loc='/p/1', lastmod=None, changefreq=None, "
        "priority=None): invalid changefreq: 'sometimes'"
    )


def test_served_page_logs_a_huge_bad_lastmod_in_a_bounded_line(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(lambda: ["/p/1", Url("/p/2", lastmod=HUGE)])
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        assert make_client(sitemaps).get("/sitemap-products-1.xml").status == 200
    records = skip_records(caplog)
    assert records
    for record in records:
        message = record.getMessage()
        assert len(message) < MAX_LOG_LINE
        assert "invalid lastmod" in message
