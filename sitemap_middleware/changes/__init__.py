"""The change log: what the sitemaps published, and what changed between two renders.

`ChangeLog` is the public face (`log`); `ledger` holds the one algorithm, `fingerprints`
reads a page back into its URLs, and each backend (`sqlite`, ``sitemap_middleware.redis``)
keeps the records in a transaction of its own.
"""

from __future__ import annotations

from .log import ChangeLog
from .model import Change, Kind, Trimmed

__all__ = ["Change", "ChangeLog", "Kind", "Trimmed"]
