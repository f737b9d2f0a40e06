"""The command line: ``sitemap-middleware validate|export`` (or ``python -m sitemap_middleware``).

    sitemap-middleware validate https://shop.example/robots.txt --schemas ../shared/schemas
    sitemap-middleware validate public/sitemap-index.xml --base-url https://shop.example/
    sitemap-middleware validate https://shop.example/robots.txt --map-origin https://shop.example=http://127.0.0.1:8000
    sitemap-middleware validate https://shop.example/robots.txt --urls 1000
    sitemap-middleware validate myshop.sitemaps:sitemaps --app myshop.wsgi:site --urls all
    sitemap-middleware export myshop.sitemaps:sitemaps --out public --gzip

``validate`` prints one line per problem, ``LOCATION:LINE: message`` (each kind of warning
capped by ``--max-warnings``, the rest counted: report.py), then a summary, or JSON Lines with
``--format json``; it exits 0 when it found no errors (warnings do not count), 1 when it found
errors, 2 when it could not run (the target unreadable, the schemas, a usage error).

``export`` is all or nothing (`export.export_tree`): it exits 0 when the new tree is in
place, 2 when it could not be written (the folder left as it was, one line on stderr),
and 128 + the signal after SIGINT (130) or SIGTERM (143).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .export import Tree
    from .origins import Mapping

__all__ = ["export_sitemaps", "main"]

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "validate":
        from ..errors import ConfigurationError
        from .origins import OriginMap

        try:
            args.origins = OriginMap(args.map_origin)
        except ConfigurationError as error:
            parser.error(f"argument --map-origin: {error}")  # exits 2, as any other usage error
        return _validate(args, out, err)
    return _export(args, out, err)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sitemap-middleware", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="check a robots.txt, sitemap index or sitemap tree")
    validate.add_argument(
        "target",
        help="a URL or a file: robots.txt, an index or a sitemap (gzip or not); or MODULE:ATTR, "
        "a Sitemaps or a WSGI app it wraps, checked in-process",
    )
    validate.add_argument(
        "--schemas", type=Path, help="a folder of the official XSDs (also validate against them)"
    )
    validate.add_argument(
        "--base-url",
        type=_http_url,
        help="where a local file is served (for the host and directory rules)",
    )
    validate.add_argument(
        "--map-origin",
        type=_mapping,
        action="append",
        default=[],
        metavar="PUBLIC=LOCAL",
        help="fetch every URL under the origin PUBLIC from LOCAL, and report it as PUBLIC "
        "(e.g. https://shop.example=http://127.0.0.1:8000; repeatable)",
    )
    validate.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (LOCATION:LINE: message) or json (JSON Lines, the summary last) (default: %(default)s)",
    )
    validate.add_argument(
        "--max-warnings",
        type=_count,
        default=10,
        metavar="N",
        help="warnings shown per kind (duplicate locs, ...); the rest are counted (default: %(default)s)",
    )
    validate.add_argument(
        "--document-timeout",
        type=_positive(float),
        default=120.0,
        metavar="SECONDS",
        help="time to read one document, whatever the server does (default: %(default)g)",
    )
    validate.add_argument(
        "--run-timeout",
        type=_positive(float),
        default=3600.0,
        metavar="SECONDS",
        help="time for the whole run; what is not checked by then is counted (default: %(default)g)",
    )
    validate.add_argument(
        "--concurrency",
        type=_positive(int),
        default=8,
        metavar="N",
        help="documents read at once (default: %(default)s)",
    )
    validate.add_argument(
        "--urls",
        type=_urls,
        metavar="all|N",
        help="also request the listed URLs (all, or a sample of N spread over every file) and report "
        "those crawlers will not index",
    )
    validate.add_argument(
        "--per-host",
        type=_positive(int),
        default=4,
        metavar="N",
        help="with --urls: requests at once to one host (default: %(default)s)",
    )
    validate.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="with a Sitemaps target: the site's WSGI app, wrapped by it in-process (for --urls)",
    )
    export = commands.add_parser("export", help="write every index and page as static files")
    export.add_argument(
        "sitemaps", metavar="MODULE:ATTR", help="where the Sitemaps object is, e.g. shop.sitemaps:sitemaps"
    )
    export.add_argument(
        "--app-dir",
        type=_folder,
        metavar="DIR",
        help="the folder to find MODULE in (default: the current folder), as uvicorn's --app-dir",
    )
    export.add_argument("--out", type=Path, required=True, help="the folder to write into")
    export.add_argument("--gzip", action="store_true", help="also write each file's .gz")
    return parser


def _http_url(text: str) -> str:
    from .values import split

    parts = split(text)
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text


def _mapping(text: str) -> Mapping:
    from ..errors import ConfigurationError
    from .origins import parse_mapping

    try:
        return parse_mapping(text)
    except ConfigurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _folder(text: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"not a folder: {text!r}")
    return path


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse


def _urls(text: str) -> int:
    """``--urls``: "all" is 0 (every listed URL), else how many."""
    if text == "all":
        return 0
    return int(_positive(int)(text))


def _validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .audit import AuditOptions
    from .fetch import is_url
    from .inprocess import LoadError, WSGITransport, is_object_spec, load_app
    from .progress import Progress
    from .report import FORMATS, Reporter
    from .schemas import SchemaError, Schemas
    from .validate import Checker, Limits

    target, transport = args.target, None
    if is_object_spec(target):  # in-process: the app answers, no server, no network
        try:
            app, origin, has_pages = load_app(target, app=args.app, base_url=args.base_url)
        except LoadError as error:
            print(f"sitemap-middleware: {error}", file=err)
            return EXIT_ERROR
        if args.urls is not None and not has_pages:
            print(
                "sitemap-middleware: --urls with a Sitemaps needs --app MODULE:ATTR, the site's app",
                file=err,
            )
            return EXIT_ERROR
        target, transport = f"{origin}/robots.txt", WSGITransport(app)
    elif args.app is not None:
        print("sitemap-middleware: --app goes with a MODULE:ATTR target", file=err)
        return EXIT_ERROR
    audit = None if args.urls is None else AuditOptions(urls=args.urls or None, per_host=args.per_host)
    schemas = None
    if args.schemas is not None:
        try:
            schemas = Schemas.load(args.schemas)
        except SchemaError as error:
            print(f"sitemap-middleware: {error}", file=err)
            return EXIT_ERROR
    progress = Progress(err)
    shown = args.origins.public(target) if is_url(target) else target
    reporter = Reporter(FORMATS[args.format](out), target=shown, max_warnings=args.max_warnings)
    checker = Checker(
        report=reporter,
        schemas=schemas,
        base_url=args.base_url,
        progress=progress.validated if progress.live else None,
        limits=Limits(timeout=args.document_timeout),
        run_timeout=args.run_timeout,
        concurrency=args.concurrency,
        origins=args.origins,
        audit=audit,
        audit_progress=progress.audited if progress.live else None,
        transport=transport,
    )
    summary = checker.check(target)
    progress.done()
    code = EXIT_ERROR if summary.unreadable else EXIT_PROBLEMS if summary.problems else EXIT_CLEAN
    reporter.finish(summary, code)
    return code


def _export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .export import Tree
    from .loading import LoadError, load

    try:
        sitemaps = load(args.sitemaps, app_dir=args.app_dir)
    except LoadError as error:
        print(f"sitemap-middleware: {error}", file=err)
        return EXIT_ERROR
    if not isinstance(sitemaps, Tree):
        print(f"sitemap-middleware: {args.sitemaps} is a {type(sitemaps).__name__}, not a Sitemaps", file=err)
        return EXIT_ERROR
    return export_sitemaps(sitemaps, args.out, gzip=args.gzip, out=out, err=err)


def export_sitemaps(sitemaps: Tree, folder: Path, *, gzip: bool = False, out: TextIO, err: TextIO) -> int:
    """``export`` of a `Sitemaps` already at hand (``manage.py sitemaps``, ``flask sitemaps``):
    the same files, messages and exit codes."""
    from .export import ExportError, ExportInterrupted, export_tree
    from .progress import Progress

    progress = Progress(err)
    with _terminate_interrupts(), _logs_held() as logged:
        try:
            written = export_tree(
                sitemaps, folder, gzip=gzip, progress=progress.exported if progress.live else None
            )
        except ExportError as error:
            progress.done()
            print(f"sitemap-middleware: export failed: {error}", file=err)
            return EXIT_ERROR
        except KeyboardInterrupt as error:
            progress.done()
            stopped = error if isinstance(error, ExportInterrupted) else ExportInterrupted(signal.SIGINT)
            name = signal.Signals(stopped.signum).name
            state = "the new tree was already in place" if stopped.replaced else "left as it was"
            print(f"sitemap-middleware: export interrupted by {name}: {folder} {state}", file=err)
            return 128 + stopped.signum  # the shell's status for a command a signal stopped
    progress.done()
    for message in logged:
        print(f"sitemap-middleware: warning: {message}", file=err)
    print(f"wrote {len(written):,} files to {folder}", file=out)
    return EXIT_CLEAN


@contextmanager
def _terminate_interrupts() -> Iterator[None]:
    """SIGTERM stops an export as Ctrl-C does (an exception, so the tree is cleaned up),
    instead of killing the process mid-write."""
    from .export import ExportInterrupted

    def interrupt(signum: int, frame: object) -> None:
        raise ExportInterrupted(signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _logs_held() -> Iterator[list[str]]:
    """The package's log messages, kept for the end (one line each, no traceback) instead
    of printed as they come: a failed export says one line, its own."""
    from .export import log_messages

    logger = logging.getLogger("sitemap_middleware")
    propagate, logger.propagate = logger.propagate, False
    try:
        with log_messages(logging.WARNING) as messages:
            yield messages
    finally:
        logger.propagate = propagate
