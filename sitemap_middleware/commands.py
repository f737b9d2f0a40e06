"""The commands the framework faces share: ``validate``, ``export`` and ``refresh`` of a `Sitemaps`.

    manage.py sitemaps validate https://shop.example/robots.txt     # Django
    flask sitemaps export --out public --gzip                       # Flask

Each returns the exit code of its command line twin (`sitemap_middleware.cli`): 0 done
or clean, 1 problems found, 2 could not run. ``validate`` is the command line's own,
with its options as given; ``export`` and ``refresh`` work on the `Sitemaps` the
framework is configured with (Django's ``settings.SITEMAPS``, Flask's ``init_app``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TextIO

from . import cli
from .cli.export import Tree
from .errors import SitemapError
from .refresh import Refreshed


class Sitemaps(Tree, Protocol):
    """What the commands need of a `Sitemaps` (asked, so the framework faces import none)."""

    def refresh(self, section: str | None = None) -> Refreshed: ...


__all__ = ["export", "refresh", "validate"]


def validate(arguments: Sequence[str], *, out: TextIO, err: TextIO) -> int:
    """``sitemap-middleware validate ARGUMENTS``."""
    try:
        return cli.main(["validate", *arguments], out=out, err=err)
    except SystemExit as stop:  # argparse: --help, or arguments it refused
        return stop.code if isinstance(stop.code, int) else cli.EXIT_ERROR


def export(sitemaps: Sitemaps, folder: Path, *, gzip: bool, out: TextIO, err: TextIO) -> int:
    """``sitemap-middleware export`` of ``sitemaps``, into ``folder``."""
    return cli.export_sitemaps(sitemaps, folder, gzip=gzip, out=out, err=err)


def refresh(sitemaps: Sitemaps, section: str | None, *, out: TextIO, err: TextIO) -> int:
    """`Sitemaps.refresh` (every section, or ``section``), one line per section it rendered."""
    try:
        refreshed = sitemaps.refresh(section)
    except SitemapError as error:  # a ProviderError, or a section it has not (ConfigurationError)
        print(f"sitemap-middleware: refresh failed: {error}", file=err)
        return cli.EXIT_ERROR
    for name, pages in refreshed.pages.items():
        print(f"refreshed {pages:,} {'page' if pages == 1 else 'pages'} of {name}", file=out)
    return cli.EXIT_CLEAN
