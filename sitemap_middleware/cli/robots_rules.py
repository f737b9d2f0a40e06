"""Which listed URLs a site's robots.txt keeps crawlers from: Googlebot's, Bingbot's and ``*``'s rules.

Read with Protego (Scrapy's parser: Google's matching rules, ``*`` and ``$`` wildcards, the
longest match winning, ``Allow`` over ``Disallow`` on a tie), once per origin::

    rules = RobotsRules.fetch(fetcher, "https://shop.example", deadline)
    rules.disallowed("https://shop.example/cart")   # ["Googlebot", "Bingbot", "*"], or []

What Google does when robots.txt cannot be read is what counts: a 4xx is no rules at all, a
5xx or an unreachable server is everything disallowed (Google's robots.txt specification).
At most 500 KiB is read, as Google does.
"""

from __future__ import annotations

from dataclasses import dataclass

from protego import Protego

from .document import ROBOTS_LIMIT
from .fetch import Deadline, Fetcher, FetchError, Stream

__all__ = ["AGENTS", "RobotsRules"]

AGENTS = ("Googlebot", "Bingbot", "*")


@dataclass(frozen=True)
class RobotsRules:
    """One origin's rules; ``unreadable`` says why none could be read, if so."""

    url: str
    parsed: Protego | None = None
    unreadable: str | None = None  # a 5xx or a failure: crawlers then take every path as disallowed

    @classmethod
    def fetch(cls, fetcher: Fetcher, origin: str, deadline: Deadline | None = None) -> RobotsRules:
        url = origin + "/robots.txt"
        try:
            with fetcher.request(url, deadline=deadline) as response:
                status = response.status_code
                if 400 <= status < 500:
                    return cls(url)  # Google: a 4xx means no restrictions
                if status != 200:
                    return cls(url, unreadable=f"answers {status} {response.reason_phrase}")
                encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
                stream = Stream(
                    response.iter_raw(),
                    fetcher.limits.max_bytes,
                    fetcher.deadline(deadline),
                    gzipped=encoding not in ("identity", ""),
                )
                text = stream.read_up_to(ROBOTS_LIMIT).decode("utf-8", "replace").lstrip("\ufeff")
        except FetchError as error:
            return cls(url, unreadable=f"cannot be fetched: {error}")
        return cls(url, Protego.parse(text))

    def disallowed(self, url: str) -> list[str]:
        """The `AGENTS` that may not crawl ``url`` (none when robots.txt was unreadable: that is
        one problem, the robots.txt's, not one per URL)."""
        if self.parsed is None:
            return []
        return [agent for agent in AGENTS if not self.parsed.can_fetch(url, agent)]
