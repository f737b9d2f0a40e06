"""The outbox of the change log in Redis (`changes.RedisChanges`): what must reach another
system (IndexNow, a CDN, a hook), delivered from the log, one holder at a time.

    log.subscribe("indexnow|https://shop.example")
    delivery = log.claim("indexnow|https://shop.example", "worker-1", scope="https://shop.example")
    if delivery is not None and send(delivery):
        log.acknowledge(delivery)

A consumer is a hash under ``<prefix>:outbox:<consumer>``: its cursor (``pos``, the stream
ID of the last change delivered and answered) and its lease (``holder``, ``until``).
Every change has an ID from the log's one clock, so the IDs of all sections' streams are
totally ordered: a claim merges the sections' streams past the cursor, in one script, so
two workers claiming at once never both get a lease. A `Delivery` names its last change
by `position`, the stream ID as one int. `Outbox.cursors` finds every consumer for the
log's trim, which removes nothing a cursor has not passed; `Outbox.unsubscribe` drops one.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from ..changes.model import KINDS, Change, Delivery, PageChange
from .change_ledger import EPOCH, PAGE
from .change_scripts import ACKNOWLEDGE, DELIVER, GIVE_BACK, PENDING, SUBSCRIBE

__all__ = ["Outbox", "position", "stream_id"]

_GLOB = re.compile(rb"[\\*?\[\]]")  # what a SCAN pattern reads as a wildcard, unless escaped
_SEQUENCE = 32  # bits of an ID's sequence in its position (the commit keeps it below 2^32)


class Outbox:
    """The outbox's calls (`changes.log.Backend`), over the client and keys of one log."""

    def __init__(self, client: Any, prefix: str) -> None:
        self._client = client
        self._prefix = prefix
        self._sections = f"{prefix}:sections"
        self._clock = f"{prefix}:clock"
        self._subscribe = client.register_script(SUBSCRIBE)
        self._deliver = client.register_script(DELIVER)
        self._acknowledge = client.register_script(ACKNOWLEDGE)
        self._give_back = client.register_script(GIVE_BACK)
        self._pending = client.register_script(PENDING)

    def _key(self, consumer: str) -> str:
        return f"{self._prefix}:outbox:{consumer}"

    def subscribe(self, consumer: str) -> None:
        self._subscribe(keys=[self._key(consumer), self._clock])

    def claim(
        self, consumer: str, scope: str | None, holder: str, *, limit: int, lease: float, now: float
    ) -> Delivery | None:
        reply = self._deliver(
            keys=[self._key(consumer), self._sections, self._clock],
            args=[self._prefix, holder, repr(now), repr(lease), limit, scope or "", int(scope is not None)],
        )
        if reply[0] == -1:
            raise LookupError(f"no outbox for {consumer!r}: subscribe it first")
        if reply[0] == 0:
            return None
        changes: list[Change] = []
        pages: list[PageChange] = []
        for _, name, flat in reply[1:]:
            fields = dict(zip(flat[0::2], flat[1::2], strict=True))
            its_scope, _, section = name.decode().partition("\n")
            at = EPOCH + timedelta(microseconds=int(fields[b"a"]))
            kind = int(fields[b"k"])
            extra = fields.get(b"x", b"").decode()
            if kind == PAGE:
                pages.append(PageChange(its_scope, section, int(extra), at))
            else:
                changes.append(Change(fields[b"l"].decode(), KINDS[kind], at, section, extra or None))
        return Delivery(consumer, holder, tuple(changes), position(reply[-1][0]), tuple(pages))

    def acknowledge(self, delivery: Delivery) -> bool:
        keys = [self._key(delivery.consumer)]
        return bool(self._acknowledge(keys=keys, args=[delivery.holder, stream_id(delivery.last)]))

    def release(self, delivery: Delivery) -> None:
        self._give_back(keys=[self._key(delivery.consumer)], args=[delivery.holder])

    def pending(self, consumer: str) -> int:
        return int(self._pending(keys=[self._key(consumer), self._sections], args=[self._prefix]))

    def unsubscribe(self, consumer: str) -> None:
        self._client.delete(self._key(consumer))

    def cursors(self) -> dict[str, int]:
        """Every subscribed consumer's cursor, as a `position`.

        Found by ``SCAN``, not from a set kept beside the hashes: the hashes stay the one
        record of who is subscribed (a set could drift from them, and would miss consumers
        subscribed before it existed, whose changes a trim would then remove unseen). A trim
        runs about hourly, and ``SCAN`` walks the keyspace in steps that never block Redis.
        """
        head = self._key("").encode()
        keys = list(self._client.scan_iter(match=_GLOB.sub(rb"\\\g<0>", head) + b"*", count=1000))
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.hget(key, "pos")
        found: dict[str, int] = {}
        for key, pos in zip(keys, pipe.execute(raise_on_error=False), strict=True):
            # Else not a cursor (an error, or None): a key of another log whose prefix starts like ours.
            if isinstance(pos, bytes):
                found[key[len(head) :].decode()] = position(pos)
        return found


def position(raw: bytes) -> int:
    """A stream ID (``b"<ms>-<seq>"``) as one int, in the same order."""
    ms, seq = raw.split(b"-")
    return int(ms) << _SEQUENCE | int(seq)


def stream_id(number: int) -> str:
    """The stream ID a `position` is."""
    return f"{number >> _SEQUENCE}-{number & ((1 << _SEQUENCE) - 1)}"
