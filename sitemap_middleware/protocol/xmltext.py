"""XML text: the one escaper for everything written between our tags.

Every value we write is element content or a double-quoted attribute, so XML 1.0 §2.4
asks for ``&`` and ``<`` to be escaped (and ``>`` after ``]]``; we escape it always)::

    escape("Fish & Chips <new>")                    # 'Fish &amp; Chips &lt;new&gt;'
    escape_uri("https://shop.example/?a=1&b=2")     # 'https://shop.example/?a=1&amp;b=2'
    escape_text("Caf\u00e9\x00 \u2014 a\r\n")             # 'Caf\u00e9 \u2014 a&#13;\n'

`escape_uri` is `escape` specialised for text that is already a URI: RFC 3986 §2 allows
neither ``<`` nor ``>`` (nor ``"``) in one, which leaves ``&``. The page writer runs it once
per URL; tests/web/test_rules.py holds the two equal on every URI.

`escape_text` is `escape` for free text (a video's title, a news headline): characters XML
1.0 cannot carry at all are dropped, and a carriage return is written as a reference so a
parser does not turn it into a line feed (§2.11): the text reads back as given.
"""

from __future__ import annotations

import re

__all__ = ["escape", "escape_text", "escape_uri", "xml_text"]

# XML 1.0 §2.2 Char: tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and the astral planes. The rest
# (C0 controls, lone surrogates, U+FFFE and U+FFFF) cannot appear in a document, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text: str) -> str:
    """``text`` as XML element content."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_uri(uri: str) -> str:
    """`escape` for a URI (RFC 3986 §2 characters only): ``&`` is all there is to escape."""
    return uri.replace("&", "&amp;")


def xml_text(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry (what `escape_text` writes, unescaped)."""
    return _NOT_XML.sub("", text)


def escape_text(text: str) -> str:
    """Free text as XML element content: `xml_text`, escaped, with CR kept as ``&#13;``."""
    return escape(xml_text(text)).replace("\r", "&#13;")
