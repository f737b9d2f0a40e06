"""A page's URLs and their fingerprints, read back from its bytes; and their stored form.

The renderer writes each ``<url>`` element whole, on one line, starting with its ``<loc>``
(`protocol.entries`): the page's bytes are the one record of what it published, so the
log reads them instead of asking the renderer for a second copy. The work is done by C
code (``bytes.split``, ``re.findall``, ``zlib.crc32``): ~10 ms for 50,000 URLs.

A fingerprint is the CRC-32 of the whole element: a change to any field changes it, but
one change in 2**32 keeps it (reported as none). The loc is the key: never hashed.
"""

from __future__ import annotations

import re
import struct
import zlib

__all__ = ["Entries", "pack", "read_lastmods", "read_page", "unpack"]

Entries = dict[bytes, int]  # loc as published (escaped) -> fingerprint of its element

_LOC = re.compile(rb"<url><loc>([^<]*)</loc>")
# Every element form writes its <lastmod>, when it has one, right after its <loc>
# (`protocol.entries`: `element` and `_localised`); tests/changes/test_published_lastmods.py
# renders each form and holds it.
_LASTMOD = re.compile(rb"<url><loc>([^<]*)</loc><lastmod>([^<]*)</lastmod>")
_END = b"</url>\n"
_COUNT = struct.Struct("<I")


def read_page(body: bytes) -> Entries:
    """Every URL of a urlset document and its fingerprint, in the page's order."""
    start = body.find(b"<url>")
    if start < 0:
        return {}
    end = body.rfind(b"</urlset>")
    elements = body[start:end].split(_END)
    elements.pop()  # what follows the last element: nothing
    locs = _LOC.findall(body, start, end)
    if len(locs) != len(elements):  # pragma: no cover - the renderer writes one loc per element
        raise ValueError(f"a page of {len(elements)} elements has {len(locs)} locs")
    return dict(zip(locs, map(zlib.crc32, elements), strict=True))


def read_lastmods(body: bytes) -> dict[bytes, bytes]:
    """The lastmod each URL of a urlset document was published with, by loc (those without
    one are absent). Read only for a page that reported changes: never on the baseline."""
    return dict(_LASTMOD.findall(body))


def pack(entries: Entries) -> bytes:
    """``entries`` as one compact blob: their count, the fingerprints, then the locs."""
    fingerprints = struct.pack(f"<{len(entries)}I", *entries.values())
    return zlib.compress(_COUNT.pack(len(entries)) + fingerprints + b"\n".join(entries), 1)


def unpack(blob: bytes) -> Entries:
    data = zlib.decompress(blob)
    (count,) = _COUNT.unpack_from(data)
    if count == 0:
        return {}
    end = _COUNT.size + 4 * count
    fingerprints = struct.unpack_from(f"<{count}I", data, _COUNT.size)
    return dict(zip(data[end:].split(b"\n"), fingerprints, strict=True))
