"""When a delivery is tried again: ``Retry-After`` read as RFC 9110 says, and the backoff."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from werkzeug.http import http_date

from sitemap_middleware import ConfigurationError
from sitemap_middleware.push import Backoff, retry_after

NOW = 1_780_000_000.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        pytest.param("120", 120.0, id="delay-seconds"),
        pytest.param(http_date(NOW + 90), 90.0, id="http-date"),
        pytest.param(http_date(NOW - 90), 0.0, id="http-date-past"),
        pytest.param("99999999999", 24 * 3600.0, id="capped-at-a-day"),
        pytest.param("soon", None, id="unreadable"),
        pytest.param(None, None, id="absent"),
        pytest.param("-5", None, id="negative"),
    ],
)
def test_retry_after_is_seconds_or_an_http_date(value: str | None, seconds: float | None) -> None:
    assert retry_after(value, now=NOW) == seconds


@given(
    st.floats(0.001, 10.0),
    st.floats(1.0, 1000.0),
    st.integers(1, 200),
)
def test_each_backoff_delay_is_in_the_upper_half_of_its_doubling_and_capped(
    first: float, factor: float, attempt: int
) -> None:
    backoff = Backoff(first=first, cap=first * factor)
    ceiling = min(backoff.cap, first * 2 ** (attempt - 1))
    assert ceiling / 2 <= backoff.delay(attempt) <= ceiling


@pytest.mark.parametrize(
    "options",
    [{"first": 0}, {"first": -1.0}, {"cap": float("inf")}, {"first": 2.0, "cap": 1.0}, {"first": True}],
)
def test_a_backoff_out_of_range_is_a_configuration_error(options: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError):
        Backoff(**options)
