"""A Django app for the tests: models, Django ``Sitemap`` classes and the urlconf they reverse.

`configure` sets Django up once per process (settings may be configured only once), for
every module that needs Django: `tests.test_frameworks` (no database) and the modules of
`sitemap_middleware.django` (SQLite, and PostgreSQL when `tests.postgres` can start one).
"""
