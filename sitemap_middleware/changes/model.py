"""What the change log speaks of: a change, a rendered page, and what is kept per section.

A URL is known by its ``loc`` as published (XML-escaped bytes, exactly as the page holds
it) and a fingerprint of its whole ``<url>`` element, so any field it publishes
(lastmod, changefreq, priority, alternates, images, videos, news) changes it::

    Change("https://shop.example/p/1", "changed", at, "products")
    Seen("https://shop.example", "products", 3, digest, body)   # page 3, as rendered
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

__all__ = ["KINDS", "Change", "Delivery", "Kind", "PageChange", "SectionState", "Seen", "Trimmed"]

Kind = Literal["added", "changed", "removed"]
KINDS: tuple[Kind, ...] = ("added", "changed", "removed")


@dataclass(frozen=True, slots=True)
class Change:
    """One URL that was added, changed or removed: ``loc`` absolute, ``at`` aware (UTC),
    the time the change was recorded (the render that saw it).

    ``lastmod``: the lastmod the URL's page published with it (W3C text, as published),
    for an added or changed URL that had one; ``None`` otherwise (always for a removal).
    """

    loc: str
    kind: Kind
    at: datetime
    section: str
    lastmod: str | None = None


@dataclass(frozen=True, slots=True)
class Seen:
    """One page, rendered completely: where it is, the digest of its bytes, and the bytes.

    ``scope`` is the site root and mount prefix the page's URLs live under (one log may
    hear several sites); ``body`` is called only when the digest differs from the one the
    log last recorded for the page (an unchanged page costs the log one small read);
    ``by_position``: whether its section's pages are cut by position (`plans.Shape`).
    """

    scope: str
    section: str
    number: int
    digest: bytes
    body: Callable[[], bytes] = field(repr=False)
    by_position: bool = True


@dataclass(slots=True)
class SectionState:
    """What the log keeps of one section besides its URLs.

    - ``baselined``: a whole pass over the section has been recorded; until then nothing
      is reported (IndexNow wants changes since you started, never the whole site);
    - ``passes``: how many passes have completed (a pass: every page of its plan recorded);
    - ``pages``: the pages of its plan when it was last recorded, ``urls`` the URLs known;
    - ``completed``: when its last pass completed (seconds since the epoch), or ``None``.
    """

    baselined: bool = False
    passes: int = 0
    pages: int = 0
    urls: int = 0
    completed: float | None = None


@dataclass(frozen=True, slots=True)
class PageChange:
    """A page whose bytes changed (what a CDN in front must drop): recorded with the URL
    changes, from the same renders, once the section's baseline has ended."""

    scope: str
    section: str
    page: int
    at: datetime


@dataclass(frozen=True, slots=True)
class Delivery:
    """Changes claimed from the log's outbox for one consumer (an IndexNow site, a hook).

    ``holder`` holds the consumer's lease until ``acknowledge`` moves its cursor past
    ``last`` (the id of the newest change here) or the lease runs out: in a fleet, one
    worker delivers a consumer's changes at a time, and a worker that dies mid-delivery
    leaves them to the next. Sent means answered: a delivery is acknowledged only then.
    ``pages``: the pages whose bytes changed, in the same span of the log.
    """

    consumer: str
    holder: str
    changes: tuple[Change, ...]
    last: int
    pages: tuple[PageChange, ...] = ()


@dataclass(frozen=True, slots=True)
class Trimmed:
    """What one trim of the log did (`ChangeLog.trim`).

    ``removed``: the changes (of URLs and of pages) it removed, each recorded before its
    bound and already acknowledged by every consumer. ``held``: the consumers that stopped
    it, behind the oldest change recorded before the bound that stays: the log keeps what
    they have not acknowledged, however old, until they do or are unsubscribed (a consumer
    nobody delivers any more would otherwise keep the log growing unseen). Once they move
    on, the next trim names whoever is behind next.
    """

    removed: int
    held: tuple[str, ...] = ()
