"""What the two SQL keysets share, whichever library builds their statements.

`sitemap_middleware.django.keyset` (Django's ORM) and `sitemap_middleware.sqlalchemy.keyset`
(SQLAlchemy Core and ORM) plan a section the same way and read its pages the same way; the
parts that do not depend on who writes the SQL live here:

- `newest_first`: each page's newest lastmod from rows read newest first over the
  lastmod's index, stopping once every page has one (`NewestFirst`, `walk_limit`).
- `cancelling`: how a statement nobody waits for any more is cancelled on the database
  (a DB-API connection's ``cancel``, sqlite3's ``interrupt``, PostgreSQL's
  ``pg_cancel_backend``).

Neither imports Django or SQLAlchemy: each keyset hands them its rows and connections.
"""
