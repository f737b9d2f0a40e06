"""``validate`` warns when more than half of a file's URLs share one lastmod to the second:
a build time stamped on everything, which tells crawlers nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .test_cli import SITE, run, url, urlset

STAMP = "2026-01-01T10:00:00+00:00"


def entries(shared: int, other: int, stamp: str = STAMP) -> list[str]:
    same = [url(f"{SITE}/s/{n}", f"<lastmod>{stamp}</lastmod>") for n in range(shared)]
    own = [
        url(f"{SITE}/o/{n}", f"<lastmod>2025-06-01T10:{n // 60:02}:{n % 60:02}Z</lastmod>")
        for n in range(other)
    ]
    return same + own


def check(tmp_path, document: str) -> tuple[int, list[str]]:
    path = tmp_path / "sitemap.xml"
    path.write_text(document)
    return run("validate", str(path), "--base-url", f"{SITE}/")


def test_a_lastmod_most_urls_share_to_the_second_is_a_warning_at_its_first_lastmod(tmp_path):
    code, lines = check(tmp_path, urlset(*entries(11, 9)))
    [warning] = [text for text in lines if "shared" in text]
    assert code == 0  # a warning, not a problem
    assert warning == (
        f"{tmp_path / 'sitemap.xml'}:3: warning: lastmod {STAMP} is shared, to the second, by 11 of "
        "the file's 20 URLs: a build time, not each page's last change"
    )


def test_the_same_instant_written_in_another_zone_counts_as_shared(tmp_path):
    same = [url(f"{SITE}/z/{n}", "<lastmod>2026-01-01T11:00:00+01:00</lastmod>") for n in range(6)]
    code, lines = check(tmp_path, urlset(*entries(6, 8), *same))
    assert code == 0
    assert any("is shared, to the second, by 12 of the file's 20 URLs" in text for text in lines), lines


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(urlset(*entries(10, 10)), id="half-is-not-more-than-half"),
        pytest.param(urlset(*entries(20, 0, stamp="2026-01-01")), id="a-date-alone"),
        pytest.param(urlset(*entries(9, 0)), id="fewer-than-10-urls"),
    ],
)
def test_no_warning_when_not_more_than_half_share_a_second(tmp_path, document):
    code, lines = check(tmp_path, document)
    assert code == 0 and not [text for text in lines if "shared" in text], lines


@settings(max_examples=25, deadline=None)
@given(shared=st.integers(0, 30), other=st.integers(0, 30))
def test_the_warning_comes_exactly_when_more_than_half_of_10_or_more_share(tmp_path_factory, shared, other):
    _, lines = check(tmp_path_factory.mktemp("lastmod"), urlset(*entries(shared, other)))
    total = shared + other
    warned = [text for text in lines if "shared" in text]
    expected = total >= 10 and 2 * max(shared, 1 if other else 0) > total
    assert bool(warned) == expected, (shared, other, lines)
