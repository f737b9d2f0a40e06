"""One place per protocol rule: XML escaping, W3C Datetime, and limits named as configured."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemap_middleware import Sitemaps
from sitemap_middleware.protocol.entries import w3c_datetime
from sitemap_middleware.protocol.xmltext import escape, escape_uri

from ..conftest import BASE, SitemapClient

PROPERTY = settings(max_examples=300, deadline=None, database=None)

MakeClient = Callable[..., SitemapClient]

# RFC 3986 §2: every character a URI may hold (unreserved, reserved and '%').
URI_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
# XML 1.0 §2.2: the characters a document may hold at all (less CR, which parsers normalise).
xml_characters = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\ufffe\uffff").filter(
    lambda c: c in "\t\n" or ord(c) >= 0x20
)


@PROPERTY
@given(text=st.text(xml_characters))
def test_escaped_text_reads_back_as_itself_inside_an_element(text: str) -> None:
    element = etree.fromstring(f"<loc>{escape(text)}</loc>".encode())
    assert (element.text or "") == text
    assert len(element) == 0  # no markup got through


@PROPERTY
@given(uri=st.text(URI_CHARACTERS))
def test_uri_escaping_is_the_escaper_for_every_uri(uri: str) -> None:
    assert escape_uri(uri) == escape(uri)


@PROPERTY
@given(moment=st.datetimes(timezones=st.just(UTC)).map(lambda moment: moment.replace(microsecond=0)))
@example(moment=datetime(1, 1, 1, tzinfo=UTC))  # the fast branch's year table holds 1970 to 2099
@example(moment=datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC))
@example(moment=datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC))
@example(moment=datetime(1970, 1, 1, tzinfo=UTC))
@example(moment=datetime(2099, 12, 31, 23, 59, 59, tzinfo=UTC))
@example(moment=datetime(2100, 1, 1, tzinfo=UTC))
@example(moment=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
def test_w3c_datetime_of_a_utc_second_is_what_the_general_rule_writes(moment: datetime) -> None:
    # The common case (UTC, whole seconds) has a fast branch; any other UTC tzinfo takes the general one.
    assert w3c_datetime(moment) == w3c_datetime(moment.replace(tzinfo=timezone(timedelta(0), "UTC+0")))


def test_a_window_over_max_page_bytes_names_the_configured_limit(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    def rows(offset: int, limit: int | None) -> Iterator[str]:
        return (f"/p/{n}?{'x' * 900}" for n in range(offset, min(10, offset + (limit or 10))))

    sitemaps = Sitemaps(base_url=BASE, max_page_bytes=4096)
    sitemaps.add_provider("products", rows, page_size=10, count=lambda: 10)
    with caplog.at_level(logging.ERROR, logger="sitemap_middleware"):
        make_client(sitemaps).get("/sitemap-products-1.xml")
    [message] = [record.getMessage() for record in caplog.records]
    assert "4,096 bytes" in message
    assert "50 MiB" not in message
