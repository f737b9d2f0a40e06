"""``python -m sitemap_middleware``: the command line (`sitemap_middleware.cli`)."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
