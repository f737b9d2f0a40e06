"""A section served from an SQLAlchemy ``SELECT``, paged by key (a *keyset*), never by OFFSET::

    from sqlalchemy import select
    from sitemap_middleware import Url
    from sitemap_middleware.sqlalchemy import keyset

    sitemaps.add_provider(
        "products",
        keyset(
            engine,  # an Engine, an AsyncEngine, a sessionmaker or an async_sessionmaker
            select(product.c.id, product.c.slug, product.c.updated_at).where(product.c.published),
            key=product.c.id,  # an ordered unique key
            entry=lambda row: Url(f"/p/{row.slug}", lastmod=row.updated_at),
            lastmod=product.c.updated_at,  # the index's <lastmod>: each page's newest
        ),
    )

Page n is read as ``<statement> AND key >= :first AND key < :next ORDER BY key``, from
the first key the plan names for it up to the next page's (page 1 from below its first
key, the last page to the end), so page 200 costs what page 1 costs, and a row inserted
after the plan shows on its page at once (within one file's limits; past them the section
is planned again: `plans.keyed`). A row deleted leaves every other in its range; a page
whose rows are all gone is a 404 until the plan is made again. The plan
(`Keyset.pages`) is one query: a recursive CTE that steps from each page's first key to
the next (``LIMIT 1 OFFSET :page_size`` from a key: the key's index is read once, end to
end), and takes ``MAX(lastmod)`` over exactly each page's rows, so the index carries true
lastmods and no row reaches Python. It is kept in the cache store and reused by every
page until the section is invalidated (with ``Sitemaps(cache=None)``: run per request).

That MAX reads every row's lastmod, most of what a plan of a big table costs
(benchmarks/HISTORY.md, "keyset pages over 10M rows"). When the ``Table`` declares an
index led by the lastmod column (``Column(..., index=True)`` or an ``Index``, created in
the database too) and the key is an integer, the plan reads rows newest first over that
index instead, until every page has its newest (`sitemap_middleware.sql.newest_first`: a
few hundred rows for 200 pages), and takes MAX only for the pages that walk leaves
(lastmods that rise with the key, a page never updated). Without the index the lastmods
are the same, read the slower way.

``entry`` gets each row as SQLAlchemy returns it: a ``Row`` (attribute access by column
name), or the mapped object when the statement selects one ORM entity
(``select(Product)``). An ``AsyncEngine`` or ``async_sessionmaker`` gives `AsyncKeyset`,
whose methods are coroutines run on the app's event loop: it is for async apps (under
WSGI every request gets an event loop of its own, and a driver such as asyncpg ties a
pooled connection to the loop that opened it; give such an engine ``poolclass=NullPool``
there, or pass a sync ``Engine``). Only it loads ``sqlalchemy.ext.asyncio``, which needs
greenlet (SQLAlchemy 2.1 no longer installs it): a sync keyset works without either.
Every read runs in a session of its own, closed (its
connection back in the pool) on every way out, a client gone mid-page included.

Keys: int, str and float keys are stored as they are; a key column of type ``Uuid``,
``DateTime``, ``Date`` or ``Numeric`` is stored as its string (a plan is stored as JSON in
any cache store) and converted back, exactly, before it is compared. Other key types
are refused when the section is registered. Rows whose key is NULL have no place in a
range and are left out (unless the column is declared NOT NULL, every read says
``key IS NOT NULL``).

The package's modules: `keysets` (`keyset`, `Keyset` and `AsyncKeyset`: the sessions, the
reads and their cancellation), `statements` (the statements both flavours run: a page, the
plan, the newest-first walk) and `columns` (what registration checks of the key, the lastmod
and the statement).
"""

# This package is sitemap_middleware.sqlalchemy: every import of SQLAlchemy's own is absolute.
from __future__ import annotations

from sitemap_middleware.sqlalchemy.keysets import AsyncKeyset, Keyset, keyset

__all__ = ["AsyncKeyset", "Keyset", "keyset"]
