"""Django's settings for the whole test process, configured once (`configure`).

Two databases: ``default`` is an SQLite file (worker threads under ASGI open their own
connections, so it cannot be ``:memory:``), ``postgres`` a throwaway server that
`tests.postgres` starts on first use, listening on a socket in `STATE`.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import django
from django.conf import settings

STATE = Path(tempfile.mkdtemp(prefix="smw-django-"))  # this process's databases and sockets
atexit.register(shutil.rmtree, STATE, ignore_errors=True)
POSTGRES_SOCKETS = STATE / "pg"

LANGUAGES = [("en", "English"), ("fr", "French"), ("de", "German")]


def configure() -> None:
    """Configure Django for this test process and populate its apps (idempotent)."""
    if settings.configured:
        return
    settings.configure(
        SECRET_KEY="sitemap-middleware-tests",
        DEBUG=False,
        ALLOWED_HOSTS=["testserver", "localhost"],
        INSTALLED_APPS=["django.contrib.sitemaps", "tests.djangosite"],
        DATABASES={
            "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(STATE / "db.sqlite3")},
            "postgres": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "postgres",
                "USER": "sitemap",
                "HOST": str(POSTGRES_SOCKETS),
            },
        },
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        ROOT_URLCONF="tests.djangosite.urls",
        MIDDLEWARE=[],
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
        USE_TZ=True,
        TIME_ZONE="UTC",  # Django's sitemap template writes dates in TIME_ZONE; ours are UTC instants
        USE_I18N=True,
        LANGUAGE_CODE="en",
        LANGUAGES=LANGUAGES,
    )
    django.setup()
