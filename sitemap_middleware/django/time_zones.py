"""Django's naive datetimes as the instants they are: the time zone behind `sitemap_middleware.django`.

The core takes a naive lastmod as UTC (`sitemap_middleware.protocol.values.w3c_datetime`).
A Django project with ``USE_TZ = False`` reads and writes naive datetimes in its own
``TIME_ZONE`` instead, so every datetime the integration reads from Django (an item's
``lastmod()``, a row's lastmod field, a page's newest from the plan) is made aware in that
zone first: 14:00 in Berlin in summer is published as ``12:00:00+00:00``. With
``USE_TZ = True`` Django's datetimes are aware already and nothing is touched::

    zone = local_zone()                 # None with USE_TZ = True: read once per page or plan
    lastmod = aware(row.updated_at, zone)

A local time that the clocks make ambiguous (02:30 on the night they go back, lived twice)
or skip (02:30 on the night they go forward) is not refused: it is read as Django's
``make_aware`` and ``zoneinfo`` read it (``fold=0``): an ambiguous time as the first of its
two instants (summer time), a skipped one with the offset in force before the gap.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from typing import TypeVar

import msgspec
from django.conf import settings
from django.utils import timezone

from sitemap_middleware.protocol.entries import Url

__all__ = ["aware", "aware_entry", "local_zone"]

T = TypeVar("T")


def local_zone() -> tzinfo | None:
    """The zone Django's naive datetimes are in: ``TIME_ZONE`` with ``USE_TZ = False``, else ``None``."""
    return None if settings.USE_TZ else timezone.get_default_timezone()


def aware(value: T, zone: tzinfo | None) -> T:
    """``value`` made aware in ``zone`` if it is a naive datetime; anything else (a date, an
    aware datetime, a string, ``None``; any value when ``zone`` is ``None``) as it is."""
    if zone is None or not isinstance(value, datetime) or value.tzinfo is not None:
        return value
    return _utc(value, zone)  # type: ignore[return-value]


def aware_entry(entry: object, zone: tzinfo) -> object:
    """An entry a user's ``entry=`` built (a `Url`, a row or a mapping), its naive lastmod made aware."""
    if isinstance(entry, Url):
        lastmod = entry.lastmod
        if isinstance(lastmod, datetime) and lastmod.tzinfo is None:
            return msgspec.structs.replace(entry, lastmod=_utc(lastmod, zone))
    elif type(entry) is tuple and len(entry) > 1:  # a row: `Url`'s fields in order
        lastmod = entry[1]
        if isinstance(lastmod, datetime) and lastmod.tzinfo is None:
            return (entry[0], _utc(lastmod, zone), *entry[2:])
    elif isinstance(entry, Mapping):
        lastmod = entry.get("lastmod")
        if isinstance(lastmod, datetime) and lastmod.tzinfo is None:
            return {**entry, "lastmod": _utc(lastmod, zone)}
    return entry


def _utc(naive: datetime, zone: tzinfo) -> datetime:
    """The instant a naive local time in ``zone`` names, in UTC: the renderer's fast path
    (`w3c_datetime`) takes UTC; another zone sends every entry down its slow path
    (benchmarks/HISTORY.md, "Figures behind the code's choices")."""
    local = timezone.make_aware(naive, zone)
    try:
        return local.astimezone(UTC)
    except OverflowError:  # 0001-01-01 00:30 in Berlin: the renderer skips and counts the entry
        return local
