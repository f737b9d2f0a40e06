"""XML text: the one escaper for everything written between our tags.

Every value we write is element content, never an attribute, so XML 1.0 §2.4 asks for
``&`` and ``<`` to be escaped (and ``>`` after ``]]``; we escape it always)::

    escape("Fish & Chips <new>")                    # 'Fish &amp; Chips &lt;new&gt;'
    escape_uri("https://shop.example/?a=1&b=2")     # 'https://shop.example/?a=1&amp;b=2'

`escape_uri` is `escape` specialised for text that is already a URI: RFC 3986 §2 allows
neither ``<`` nor ``>`` in one, which leaves ``&``. The page writer runs it once per URL;
tests/test_rules.py holds the two equal on every URI.
"""

from __future__ import annotations

__all__ = ["escape", "escape_uri"]


def escape(text: str) -> str:
    """``text`` as XML element content."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_uri(uri: str) -> str:
    """`escape` for a URI (RFC 3986 §2 characters only): ``&`` is all there is to escape."""
    return uri.replace("&", "&amp;")
