"""robots.txt merging, decided by one pure function: `merged_robots` (robots.py)."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware.web.robots import RobotsAnswer, default_robots, merge_robots, merged_robots

INDEX = "https://shop.example/sitemap-index.xml"
OTHER_INDEX = "https://shop.example/de/sitemap-index.xml"
LINE = f"Sitemap: {INDEX}\n".encode()
BOM = b"\xef\xbb\xbf"
UTF8 = "text/plain; charset=utf-8"
PLAIN = [("Content-Type", "text/plain")]
MAX_INFLATED = 512 * 1024
PROPERTY = settings(max_examples=300, deadline=None, database=None)


def answer(body: bytes, content_type: str = UTF8) -> RobotsAnswer:
    return RobotsAnswer(body=body, content_type=content_type)


def sitemap_values(body: bytes) -> list[bytes]:
    """The values of every ``Sitemap:`` record, the way a crawler reads them."""
    values = []
    for line in body.removeprefix(BOM).splitlines():
        field, sep, value = line.split(b"#", 1)[0].partition(b":")
        if sep and field.strip().lower() == b"sitemap":
            values.append(value.strip())
    return values


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"),
    [
        # -- which answers are ours to change -------------------------------------------------
        pytest.param(301, PLAIN, b"", None, id="redirect-passes-through"),
        pytest.param(304, PLAIN, b"", None, id="not-modified-passes-through"),
        pytest.param(500, PLAIN, b"oops", None, id="server-error-passes-through"),
        pytest.param(403, PLAIN, b"", None, id="forbidden-passes-through"),
        pytest.param(
            404, PLAIN, b"Not Found", answer(b"User-agent: *\nAllow: /\n\n" + LINE), id="404-default"
        ),
        pytest.param(
            404,
            [("Content-Encoding", "br")],
            b"\x00garbage",
            answer(b"User-agent: *\nAllow: /\n\n" + LINE),
            id="404-body-and-encoding-ignored",
        ),
        # -- where the line goes --------------------------------------------------------------
        pytest.param(
            200,
            PLAIN,
            b"User-agent: *\nDisallow: /cart\n",
            answer(b"User-agent: *\nDisallow: /cart\n\n" + LINE),
            id="appended-after-a-blank-line",
        ),
        pytest.param(
            200,
            PLAIN,
            b"User-agent: *\nDisallow: /cart",
            answer(b"User-agent: *\nDisallow: /cart\n\n" + LINE),
            id="no-final-newline",
        ),
        pytest.param(
            200, PLAIN, b"User-agent: *\n\n", answer(b"User-agent: *\n\n" + LINE), id="ends-with-a-blank-line"
        ),
        pytest.param(200, PLAIN, b"", answer(LINE), id="empty-body"),
        pytest.param(
            200,
            PLAIN,
            b"User-agent: *\r\nDisallow: /cart\r\n",
            answer(b"User-agent: *\r\nDisallow: /cart\r\n\r\n" + LINE.replace(b"\n", b"\r\n")),
            id="crlf-line-endings-kept",
        ),
        # -- never twice ----------------------------------------------------------------------
        pytest.param(
            200, PLAIN, b"User-agent: *\n\n" + LINE, answer(b"User-agent: *\n\n" + LINE), id="present"
        ),
        pytest.param(
            200,
            PLAIN,
            f"sitemap :  {INDEX}  \n".encode(),
            answer(f"sitemap :  {INDEX}  \n".encode()),
            id="present-any-case-and-spacing",
        ),
        pytest.param(
            200,
            PLAIN,
            f"Sitemap: {INDEX} # ours\n".encode(),
            answer(f"Sitemap: {INDEX} # ours\n".encode()),
            id="present-with-a-comment",
        ),
        pytest.param(200, PLAIN, BOM + LINE, answer(BOM + LINE), id="present-after-a-bom"),
        pytest.param(
            200,
            PLAIN,
            BOM + b"User-agent: *\n",
            answer(BOM + b"User-agent: *\n\n" + LINE),
            id="bom-kept-at-the-start",
        ),
        pytest.param(200, PLAIN, BOM, answer(BOM + LINE), id="bom-only"),
        pytest.param(
            200,
            PLAIN,
            b"Sitemap: https://shop.example/other.xml\n",
            answer(b"Sitemap: https://shop.example/other.xml\n\n" + LINE),
            id="another-sitemap-kept",
        ),
        # -- charsets -------------------------------------------------------------------------
        pytest.param(
            200,
            [("Content-Type", "text/plain; charset=ISO-8859-1")],
            b"# caf\xe9\n",
            answer(b"# caf\xe9\n\n" + LINE, "text/plain; charset=ISO-8859-1"),
            id="latin-1-label-kept",
        ),
        pytest.param(
            200,
            [("content-type", 'text/plain;charset="utf-8"')],
            b"# caf\xc3\xa9\n",
            answer(b"# caf\xc3\xa9\n\n" + LINE, "text/plain; charset=utf-8"),
            id="quoted-charset",
        ),
        pytest.param(
            200,
            [("Content-Type", "text/html; charset=windows-1252")],
            b"# \x80\n",
            answer(b"# \x80\n\n" + LINE, "text/plain; charset=windows-1252"),
            id="other-type-served-as-text-plain-with-its-charset",
        ),
        pytest.param(
            200,
            PLAIN,
            b"# caf\xe9\n",
            answer(b"# caf\xe9\n\n" + LINE, "text/plain"),
            id="no-charset-not-utf-8",
        ),
        pytest.param(
            200, PLAIN, b"# caf\xc3\xa9\n", answer(b"# caf\xc3\xa9\n\n" + LINE), id="no-charset-utf-8"
        ),
        pytest.param(200, [], b"User-agent: *\n", answer(b"User-agent: *\n\n" + LINE), id="no-content-type"),
        pytest.param(
            200,
            [("Content-Type", "text/plain; charset=utf-16")],
            "User-agent: *\n".encode("utf-16"),
            None,
            id="utf-16-passes-through",
        ),
        pytest.param(
            200,
            [("Content-Type", "text/plain; charset=cp500")],
            "User-agent: *\n".encode("cp500"),
            None,
            id="ebcdic-passes-through",
        ),
        pytest.param(
            200,
            [("Content-Type", "text/plain; charset=x-unknown")],
            b"User-agent: *\n",
            None,
            id="unknown-charset-passes-through",
        ),
        pytest.param(
            200,
            [("Content-Type", "text/plain; charset=iso-2022-jp")],
            b"# \x1b$B$3\x1b(B\n",
            answer(b"# \x1b$B$3\x1b(B\n\n" + LINE, "text/plain; charset=iso-2022-jp"),
            id="stateful-charset-back-in-ascii",
        ),
        pytest.param(
            200,
            [("Content-Type", "text/plain; charset=iso-2022-jp")],
            b"# \x1b$B$3",
            None,
            id="stateful-charset-left-shifted-passes-through",
        ),
        # -- content codings ------------------------------------------------------------------
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip")],
            gzip.compress(b"User-agent: *\n"),
            answer(b"User-agent: *\n\n" + LINE),
            id="gzip-decoded-and-served-identity",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "X-GZIP")],
            gzip.compress(b"User-agent: *\n"),
            answer(b"User-agent: *\n\n" + LINE),
            id="x-gzip",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "identity")],
            b"User-agent: *\n",
            answer(b"User-agent: *\n\n" + LINE),
            id="identity",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip")],
            gzip.compress(b"#" * MAX_INFLATED),
            answer(b"#" * MAX_INFLATED + b"\n\n" + LINE),
            id="gzip-at-the-inflation-limit",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip")],
            gzip.compress(b"#" * (MAX_INFLATED + 1)),
            None,
            id="gzip-over-the-inflation-limit-passes-through",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip")],
            b"\x1f\x8b not gzip",
            None,
            id="corrupt-gzip-passes-through",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip")],
            gzip.compress(b"User-agent: *\n")[:-8],
            None,
            id="gzip-without-its-trailer-passes-through",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip")],
            gzip.compress(b"User-agent: *\n") + b"junk",
            None,
            id="gzip-with-trailing-bytes-passes-through",
        ),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "deflate")],
            zlib.compress(b"User-agent: *\n"),
            None,
            id="deflate-passes-through",
        ),
        pytest.param(200, [*PLAIN, ("Content-Encoding", "br")], b"\x0b\x02", None, id="br-passes-through"),
        pytest.param(
            200,
            [*PLAIN, ("Content-Encoding", "gzip"), ("Content-Encoding", "gzip")],
            gzip.compress(gzip.compress(b"User-agent: *\n")),
            None,
            id="two-codings-pass-through",
        ),
    ],
)
def test_merged_robots_rule(
    status: int, headers: list[tuple[str, str]], body: bytes, expected: RobotsAnswer | None
) -> None:
    assert merged_robots(status, headers, body, [INDEX]) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"", LINE + f"Sitemap: {OTHER_INDEX}\n".encode(), id="both-appended"),
        pytest.param(LINE, LINE + f"\nSitemap: {OTHER_INDEX}\n".encode(), id="only-the-missing-one"),
    ],
)
def test_merged_robots_names_every_index(body: bytes, expected: bytes) -> None:
    assert merged_robots(200, PLAIN, body, [INDEX, OTHER_INDEX, INDEX]) == answer(expected)


def test_default_robots_names_every_index() -> None:
    got = merged_robots(404, [], b"", [INDEX, OTHER_INDEX])
    assert got is not None
    assert sitemap_values(got.body) == [INDEX.encode(), OTHER_INDEX.encode()]


def test_merge_robots_finds_its_line_after_a_bom() -> None:
    # The call shape the service uses until it moves to merged_robots.
    assert merge_robots(BOM + LINE, INDEX) == BOM + LINE


def test_default_robots_allows_all_and_names_the_index() -> None:
    assert default_robots(INDEX) == b"User-agent: *\nAllow: /\n\n" + LINE


# -- properties ----------------------------------------------------------------------------------

CONTENT_TYPES = [
    "text/plain",
    "text/plain; charset=utf-8",
    "text/plain; charset=ISO-8859-1",
    "text/plain; charset=utf-16",
    "text/plain; charset=iso-2022-jp",
    "text/plain; charset=x-unknown",
    'text/plain; charset="a b"',
    "text/html",
    "",
]
CODINGS = ["gzip", "x-gzip", "identity", "deflate", "br", "gzip, gzip", "", "GZIP"]
header_lists = st.lists(
    st.one_of(
        st.tuples(st.just("Content-Type"), st.one_of(st.sampled_from(CONTENT_TYPES), st.text(max_size=30))),
        st.tuples(st.just("Content-Encoding"), st.sampled_from(CODINGS)),
        st.tuples(st.sampled_from(["Cache-Control", "Vary"]), st.text(max_size=10)),
    ),
    max_size=3,
)
bodies = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    st.builds(bytes.__add__, st.just(BOM), st.binary(max_size=50)),
    st.binary(max_size=200).map(gzip.compress),
    st.lists(st.sampled_from([b"Sitemap: ", INDEX.encode(), b"\n", b"\r", b" ", b"#", BOM])).map(b"".join),
)


@PROPERTY
@given(
    status=st.sampled_from([200, 404, 204, 301, 500]),
    headers=header_lists,
    body=bodies,
    index_urls=st.lists(st.sampled_from([INDEX, OTHER_INDEX]), max_size=2),
)
def test_any_app_answer_passes_through_or_names_every_index_once_more_at_most(
    status: int, headers: list[tuple[str, str]], body: bytes, index_urls: list[str]
) -> None:
    got = merged_robots(status, headers, body, index_urls)
    if got is None:
        return
    assert status in (200, 404)
    assert got.content_type == "text/plain" or got.content_type.startswith("text/plain; charset=")
    found = sitemap_values(got.body)
    for url in index_urls:
        assert url.encode() in found
    app_types = " ".join(value.lower() for name, value in headers if name.lower() == "content-type")
    if "charset=utf-8" in got.content_type and "charset=utf-8" not in app_types:
        got.body.decode("utf-8")  # never labelled UTF-8 by us unless it is (the app's own label stays)
    # Merging our own answer again changes nothing: the lines are never added twice.
    again = merged_robots(200, [("Content-Type", got.content_type)], got.body, index_urls)
    assert again == got


printable_robots = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\n\t"))


@PROPERTY
@given(text=printable_robots, coding=st.sampled_from(["", "gzip", "identity"]))
def test_any_plain_ascii_robots_is_merged(text: str, coding: str) -> None:
    body = text.encode()
    headers = [*PLAIN, ("Content-Encoding", coding)] if coding else PLAIN
    got = merged_robots(200, headers, gzip.compress(body) if coding == "gzip" else body, [INDEX])
    assert got is not None
    assert got.body.startswith(body)
    assert got.content_type == UTF8
    assert INDEX.encode() in sitemap_values(got.body)
