"""``flask sitemaps validate|export|refresh``: the command line, on the app's `Sitemaps`.

    flask --app shop sitemaps validate https://shop.example/robots.txt --schemas schemas/
    flask --app shop sitemaps export --out public --gzip
    flask --app shop sitemaps refresh [SECTION]

``validate`` takes the options of ``sitemap-middleware validate``; ``export`` and
``refresh`` work on the `Sitemaps` that ``init_app`` gave the app. The exit codes are the
command line's (`sitemap_middleware.commands`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from flask import current_app
from flask.cli import AppGroup

from .. import commands
from .extension import EXTENSION

if TYPE_CHECKING:
    from ..commands import Sitemaps

__all__ = ["group"]

group = AppGroup("sitemaps", help="Check the sitemap tree, write it as static files, or render it now.")


def _sitemaps() -> Sitemaps:
    found: Sitemaps = current_app.extensions[EXTENSION]
    return found


@group.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def validate(arguments: tuple[str, ...]) -> None:
    """sitemap-middleware validate: a robots.txt, index or sitemap (URL or file), and its options."""
    click.get_current_context().exit(commands.validate(arguments, out=sys.stdout, err=sys.stderr))


@group.command()
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The folder to write into.")
@click.option("--gzip", is_flag=True, help="Also write each file's .gz.")
def export(out: Path, gzip: bool) -> None:
    """Write every index and page as static files."""
    click.get_current_context().exit(
        commands.export(_sitemaps(), out, gzip=gzip, out=sys.stdout, err=sys.stderr)
    )


@group.command()
@click.argument("section", required=False)
def refresh(section: str | None) -> None:
    """Render every page (of SECTION) now, off any request."""
    click.get_current_context().exit(commands.refresh(_sitemaps(), section, out=sys.stdout, err=sys.stderr))
