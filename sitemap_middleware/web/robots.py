"""robots.txt: add our ``Sitemap:`` lines to the app's own file, or serve a minimal one.

`merged_robots` decides everything from the app's answer to the same request; the
adapters only send what it returns (or the app's answer, when it returns ``None``)::

    merged_robots(200, [("Content-Type", "text/plain")], b"User-agent: *\\nDisallow: /cart\\n",
                  ["https://shop.example/sitemap-index.xml"])
    # RobotsAnswer(body=b"User-agent: *\\nDisallow: /cart\\n\\nSitemap: https://shop.example/sitemap-index.xml\\n",
    #              content_type="text/plain; charset=utf-8")

The rules, each there so that we never serve something the app did not mean:

- 200: the app's file plus one ``Sitemap:`` line per index URL it does not already name
  (field name in any case, spaces and a leading UTF-8 BOM ignored; the BOM stays first).
- 404: allow all, and name every index.
- Any other status: the app's answer, untouched.
- ``Content-Encoding: gzip`` (or ``x-gzip``) is undone, up to `MAX_INFLATED` bytes, and
  the merged file is served without a coding; a bigger, corrupt or truncated stream, or
  any other coding, passes through untouched.
- The charset: when the app names one, we keep its label and append our (ASCII) lines
  only if the charset writes ASCII as ASCII and a reader decoding the result with it
  reads exactly the app's text and then our lines (true for UTF-8, Latin-1 and other
  ASCII supersets; UTF-16, EBCDIC and unknown labels pass through). When it names
  none, the result is labelled UTF-8 only if it decodes as UTF-8, else plain
  ``text/plain``: never a charset the bytes are not in.
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from werkzeug.http import parse_options_header

__all__ = ["MAX_INFLATED", "RobotsAnswer", "default_robots", "merge_robots", "merged_robots"]

# Google reads the first 500 KiB of a robots.txt (RFC 9309 §2.5 asks for at least that);
# a gzip answer that inflates past this is no robots.txt we should buffer and rewrite.
MAX_INFLATED = 512 * 1024
_TEXT = "text/plain"
_UTF8_TYPE = "text/plain; charset=utf-8"
_BOM = codecs.BOM_UTF8
# RFC 9110 §5.6.2: a charset label is a token; anything else is not echoed into our header.
_PROBE = "Sitemap: https://x.example/\r\n"
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


@dataclass(frozen=True, slots=True)
class RobotsAnswer:
    """Our robots.txt: served with status 200, no Content-Encoding, and this Content-Type."""

    body: bytes
    content_type: str


def merged_robots(
    status: int, headers: Sequence[tuple[str, str]], body: bytes, index_urls: Sequence[str]
) -> RobotsAnswer | None:
    """Our robots.txt given the app's answer to the same GET, or ``None`` to pass it on.

    - ``status``, ``headers``, ``body``: the app's answer, as it sent it.
    - ``index_urls``: the absolute URLs of our index files, in the order to list them.
    """
    if status == 404:
        return RobotsAnswer(default_robots(*index_urls), _UTF8_TYPE)
    if status != 200:
        return None
    content_type = ""
    codings: list[str] = []
    for name, value in headers:
        lowered = name.lower()
        if lowered == "content-type":
            content_type = value
        elif lowered == "content-encoding":
            codings.extend(token.strip().lower() for token in value.split(","))
    decoded = _decoded(body, [coding for coding in codings if coding not in ("", "identity")])
    if decoded is None:
        return None
    label = parse_options_header(content_type)[1].get("charset")
    extra = _extra(decoded, index_urls).decode("ascii")
    if label is None:
        merged = decoded + extra.encode("ascii")
        return RobotsAnswer(merged, _UTF8_TYPE if _is_utf8(merged) else _TEXT)
    if _TOKEN.fullmatch(label) is None:
        return None
    try:
        # Our lines were found and placed by their ASCII bytes: the charset must write ASCII
        # as ASCII (not UTF-16, not EBCDIC), and a reader must see the app's text and then
        # exactly our lines (not so after a stateful charset left shifted at the end).
        probe = _PROBE + extra
        if probe.encode(label) != probe.encode("ascii"):
            return None
        merged = decoded + extra.encode("ascii")
        if merged.decode(label, "replace") != decoded.decode(label, "replace") + extra:
            return None
    except (LookupError, UnicodeError):
        return None
    return RobotsAnswer(merged, f"{_TEXT}; charset={label}")


def default_robots(*index_urls: str) -> bytes:
    """What a site with no robots.txt of its own gets: allow all, name every index."""
    lines = "".join(f"Sitemap: {url}\n" for url in dict.fromkeys(index_urls))
    return f"User-agent: *\nAllow: /\n\n{lines}".encode()


def merge_robots(body: bytes, index_url: str) -> bytes:
    """The app's robots.txt with a ``Sitemap:`` line for ``index_url``, never twice.

    ``Sitemap`` is a non-group record (RFC 9309 §2.2.4 leaves it to crawlers; Google
    and Bing read it anywhere), so appending it after the groups is safe. For an answer
    of unknown charset or coding, use `merged_robots`.
    """
    return body + _extra(body, [index_url])


def _decoded(body: bytes, codings: list[str]) -> bytes | None:
    """``body`` without its content codings, or ``None`` when we cannot (or should not) undo them."""
    if not codings:
        return body
    if codings not in (["gzip"], ["x-gzip"]):
        return None  # RFC 9110 §8.4.1.3: x-gzip is gzip; deflate, br and stacks are left alone
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        inflated = inflater.decompress(body, MAX_INFLATED + 1)
    except zlib.error:
        return None
    # Complete (trailer read: CRC32 and size checked), within the limit, and nothing after it.
    if not inflater.eof or len(inflated) > MAX_INFLATED or inflater.unused_data:
        return None
    return inflated


def _extra(body: bytes, index_urls: Sequence[str]) -> bytes:
    """The ASCII bytes to append to ``body``: a separator and each missing ``Sitemap:`` line."""
    text = body.removeprefix(_BOM)
    present: set[bytes] = set()
    for line in text.splitlines():
        field, _, value = line.split(b"#", 1)[0].partition(b":")
        if field.strip().lower() == b"sitemap":
            present.add(value.strip())
    missing = [url for url in dict.fromkeys(index_urls) if url.encode() not in present]
    if not missing:
        return b""
    newline = b"\r\n" if b"\r\n" in text else b"\n"
    # A blank line before our records, so they never read as part of the last group.
    if not text or text.endswith(newline * 2):
        separator = b""
    elif text.endswith(newline):
        separator = newline
    else:
        separator = newline * 2
    return separator + b"".join(b"Sitemap: " + url.encode() + newline for url in missing)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
