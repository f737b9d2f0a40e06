"""``manage.py sitemaps validate|export|refresh``: the command line, on ``settings.SITEMAPS``.

    manage.py sitemaps validate --urls all      # in-process: this project's app answers
    manage.py sitemaps validate https://shop.example/robots.txt --schemas schemas/
    manage.py sitemaps export --out public --gzip
    manage.py sitemaps refresh [SECTION]

``validate`` takes the options of ``sitemap-middleware validate``; without a TARGET it checks
the project in-process (`cli.inprocess`): its WSGI application (``WSGI_APPLICATION``, else
Django's) is asked for the tree as the public base URL's host, and ``--urls`` audits the
listed URLs by calling the same application: no server, no network. ``export`` and
``refresh`` work on the `Sitemaps` that ``settings.SITEMAPS`` names. The exit codes are
the command line's (`sitemap_middleware.commands`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandParser

from .... import commands
from ...settings import configured_sitemaps


class Command(BaseCommand):
    help = "Check a sitemap tree, write it as static files, or render it now (settings.SITEMAPS)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="{validate,export,refresh}")
        validate = actions.add_parser(
            "validate", help="sitemap-middleware validate: a robots.txt, index or sitemap (URL or file)"
        )
        validate.add_argument("arguments", nargs=argparse.REMAINDER, help="TARGET and its options")
        export = actions.add_parser("export", help="write every index and page as static files")
        export.add_argument("--out", type=Path, required=True, help="the folder to write into")
        export.add_argument("--gzip", action="store_true", help="also write each file's .gz")
        refresh = actions.add_parser("refresh", help="render every page (of SECTION) now, off any request")
        refresh.add_argument("section", nargs="?", help="one section (default: every section)")

    def run_from_argv(self, argv: list[str]) -> None:
        """``manage.py sitemaps validate ...``: its options go to the command line as given,
        before a TARGET or without one (argparse's REMAINDER would refuse ``--urls all``)."""
        if argv[2:3] != ["validate"] or any(arg in ("-h", "--help") for arg in argv[3:4]):
            super().run_from_argv(argv)
            return
        code = _validate(argv[3:], out=sys.stdout, err=sys.stderr)
        if code:
            raise SystemExit(code)

    def handle(self, *args: Any, **options: Any) -> None:
        # print() writes its line ending apart: Django's wrapper must not add another.
        self.stdout.ending = self.stderr.ending = ""
        out, err = cast(TextIO, self.stdout), cast(TextIO, self.stderr)
        action = options["action"]
        if action == "validate":
            code = _validate(options["arguments"], out=out, err=err)
        elif action == "export":
            code = commands.export(
                configured_sitemaps(), options["out"], gzip=options["gzip"], out=out, err=err
            )
        else:
            code = commands.refresh(configured_sitemaps(), options["section"], out=out, err=err)
        if code:
            raise SystemExit(code)


def _validate(arguments: list[str], *, out: TextIO, err: TextIO) -> int:
    """``sitemap-middleware validate``, this project in-process when no TARGET comes first."""
    if not arguments or arguments[0].startswith("-"):
        origin = configured_sitemaps().site.origin
        arguments = [_application_spec(), "--base-url", origin, *arguments]
    return commands.validate(arguments, out=out, err=err)


def _application_spec() -> str:
    """The project's WSGI application as ``module:attr``: ``settings.WSGI_APPLICATION`` (what
    ``startproject`` writes), else one made here by ``get_wsgi_application``."""
    from django.conf import settings

    dotted = getattr(settings, "WSGI_APPLICATION", None)
    if dotted:
        module, _, attribute = dotted.rpartition(".")
        return f"{module}:{attribute}"
    return "sitemap_middleware.django.application:application"
