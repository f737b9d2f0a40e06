"""What a push target is: where the change log's outbox delivers, and what it answers.

A target is one small class (IndexNow, a CDN purge, a hook): it names a consumer per site,
says what it wants of a `Delivery`, and sends one; the dispatcher (`dispatch`) does the
rest (claiming, leases, coalescing, backoff, counting, logging)::

    class Webhook:
        name = "webhook"
        wants = frozenset({"urls"})
        limit = 1_000

        def consumer(self, site: str) -> str:
            return f"webhook|{site}"

        def send(self, delivery: Delivery, site: str) -> Outcome:
            answer = httpx.post(URL, json=[c.loc for c in delivery.changes])
            if answer.status_code >= 500:
                return Retry(retry_after(answer.headers.get("retry-after")))
            return Sent() if answer.is_success else Refused(f"{answer.status_code}")

Sent means answered: the delivery is acknowledged and never sent again. ``Retry``: it is
given back and sent again after a backoff (or ``after`` seconds). ``Refused``: answered,
but not taken (a wrong key): acknowledged too, logged, so a bad configuration never
hammers the other side. An exception from ``send`` counts as ``Retry()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from ..changes.model import Delivery

__all__ = ["Outcome", "Refused", "Retry", "Sent", "Target", "Want"]

Want = Literal["urls", "pages"]


@dataclass(frozen=True, slots=True)
class Sent:
    """Answered and taken (IndexNow's 200 and 202)."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Not answered (429, 5xx, a timeout): send again after ``after`` seconds (a
    ``Retry-After``), or the dispatcher's backoff when ``None``."""

    after: float | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Refused:
    """Answered, and not taken (400, 403, 422): never sent again; ``reason`` is logged."""

    reason: str


Outcome = Sent | Retry | Refused


@runtime_checkable
class Target(Protocol):
    """Where deliveries go.

    - ``name``: what logs and ``sitemaps.stats`` call it (``"indexnow"``).
    - ``wants``: ``"urls"`` (`Change`s) and/or ``"pages"`` (`PageChange`s: pages whose bytes
      changed); a delivery holding none of them is acknowledged without a ``send``.
    - ``limit``: changes per delivery, at most (IndexNow: 10,000 URLs a POST).
    - ``consumer(site)``: its outbox consumer for the site whose root is ``site``
      (``"https://shop.example"``): a name that stays the same across restarts, so what was
      not answered before one is delivered after it.
    - ``send(delivery, site)``: deliver it, off any request, on the dispatcher's thread.
    """

    @property
    def name(self) -> str: ...

    @property
    def wants(self) -> frozenset[Want]: ...

    @property
    def limit(self) -> int: ...

    def consumer(self, site: str) -> str: ...

    def send(self, delivery: Delivery, site: str) -> Outcome: ...
