"""``export``: write a `Sitemaps` object's whole tree as static files, byte for byte as served.

Every file is fetched through the middleware itself (in-process, no server), so what is
written is exactly what the middleware answers for the same ``base_url``: the index
files robots.txt names, every page they list, and with ``gzip`` each one's ``.gz``::

    written = export_tree(sitemaps, Path("public"), gzip=True)

All or nothing (`staging.Staging`): the tree is written aside and checked whole (every
answer a 200, every body a complete document of its kind) before any file moves in;
pages move first, the index files last, then the old tree's files the new one lacks are
removed. Only names the middleware serves are ever removed (see `is_ours`); a user's
other files in the folder stay. On any failure the folder is left exactly as it was.
"""

from __future__ import annotations

import gzip as gzip_format
import logging
import os
import signal
import stat
import urllib.parse
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from lxml import etree
from werkzeug.test import Client

from ..protocol.render import MAX_BYTES, SITEMAP_NS
from ..protocol.uris import Site
from ..web.rules import INDEX_PATH, match_route
from .staging import MoveFailed, Staging

if TYPE_CHECKING:
    from lxml.etree import ParserTarget


@runtime_checkable
class Tree(Protocol):
    """What an export needs of a `Sitemaps` (asked, so the command line imports no `Sitemaps`)."""

    site: Site

    @property
    def sections(self) -> tuple[str, ...]: ...

    def wsgi(self, app: Any, *, helper_threads: int = 0) -> Any: ...


__all__ = ["ExportError", "ExportInterrupted", "export_tree", "is_ours", "log_messages"]

_INDEX_TAG = f"{{{SITEMAP_NS}}}sitemapindex"
_URLSET_TAG = f"{{{SITEMAP_NS}}}urlset"
_FIRST_INDEX = INDEX_PATH.lstrip("/")
_HEAD = 4096  # bytes enough to hold a document's XML declaration and root start tag


class ExportError(Exception):
    """The tree could not be exported: the message says why, and what became of the folder."""


class ExportInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the export (a `KeyboardInterrupt`, so it stops a script).

    - ``signum``: the signal.
    - ``replaced``: ``True`` when it came while the new tree was moving in: that was
      finished first, so the folder holds the new tree; ``False``: the folder is as it was.
    """

    def __init__(self, signum: int, *, replaced: bool = False) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.replaced = replaced


class _Unusable(Exception):
    """One answer that cannot become a file (the message says which, and why)."""


def export_tree(
    sitemaps: Tree,
    out: Path,
    *,
    gzip: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[Path]:
    """Write every index and page under ``out``, under the names they are served at.

    Raises `ExportError` when the tree cannot be exported whole; ``out`` is then as it
    was (unless the message says a move failed). A `KeyboardInterrupt` leaves it as it
    was too, except while the files move in (milliseconds): SIGINT and SIGTERM are then
    held, the move finished, and `ExportInterrupted` raised with ``replaced=True``.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
        staging = Staging(out)
    except OSError as error:
        raise ExportError(f"cannot write into {out}: {error}") from error
    # A 503's reason is in the log, not in its body (crawlers are not told).
    with staging, log_messages(logging.ERROR) as logged:
        tree = _Tree(sitemaps, staging, gzip=gzip, progress=progress, logged=logged)
        try:
            tree.fetch_all()
        except _Unusable as error:
            raise ExportError(f"{error}; {out} left as it was") from error.__cause__
        except (OSError, ValueError) as error:
            raise ExportError(f"cannot write the new tree ({error}); {out} left as it was") from error
        try:
            # The old tree's sections: today's, and those its indexes list (a section since removed).
            sections = {*sitemaps.sections, *_listed_sections(out)}
            held = staging.commit(_moving_order(tree.written), stale=lambda name: is_ours(name, sections))
        except MoveFailed as error:
            raise ExportError(str(error)) from error
        except OSError as error:
            raise ExportError(f"{error}; {out} left as it was") from error
    if held is not None:
        raise ExportInterrupted(held, replaced=True)
    return [out / name for name in tree.written]


class _Tree:
    """The tree as the middleware answers it, fetched in-process, each file checked whole
    and written aside."""

    def __init__(
        self,
        sitemaps: Tree,
        staging: Staging,
        *,
        gzip: bool,
        progress: Callable[[int], None] | None,
        logged: list[str],
    ) -> None:
        self._client = Client(sitemaps.wsgi(_no_robots))
        self._root = urllib.parse.urlsplit(sitemaps.site.root).path  # "" or the base_url's path
        self._sections = sitemaps.sections
        self._staging = staging
        self._gzip = gzip
        self._progress = progress
        self._logged = logged
        self.written: list[str] = []

    def fetch_all(self) -> None:
        """robots.txt's index files, and every page each lists."""
        robots = self._fetch("/robots.txt").decode()
        for line in robots.splitlines():
            if line.lower().startswith("sitemap:"):
                index = self._save(self._below(line.partition(":")[2].strip()), _INDEX_TAG)
                for loc in _locs(index):
                    self._save(self._below(loc), _URLSET_TAG)

    def _save(self, path: str, tag: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        if not is_ours(name, self._sections):
            raise _Unusable(f"{path} is named, but is not a file this middleware serves")
        body = self._fetch(path)
        _check_complete(path, body, tag)
        files = [(name, body)]
        if self._gzip:
            packed = self._fetch(path + ".gz")
            try:
                inflated = gzip_format.decompress(packed)
            except (EOFError, OSError, zlib.error) as error:
                raise _Unusable(f"GET {path}.gz: the body is cut short or corrupt ({error})") from error
            _check_complete(path + ".gz", inflated, tag)
            files.append((name + ".gz", packed))
        for file_name, data in files:
            self._staging.write(file_name, data)
            self.written.append(file_name)
            if self._progress is not None:
                self._progress(len(self.written))
        return body

    def _fetch(self, path: str) -> bytes:
        self._logged.clear()
        try:
            response = self._client.get(path)
            try:
                if response.status_code != 200:
                    reason = self._logged[-1].removeprefix(f"sitemap {path}: ") if self._logged else ""
                    raise _Unusable(f"GET {path}: {response.status}" + (f" ({reason})" if reason else ""))
                return response.get_data()
            finally:
                response.close()
        except _Unusable:
            raise
        except Exception as error:  # under WSGI, a page that fails once its first bytes are out
            raise _Unusable(f"GET {path}: {error}") from error

    def _below(self, url: str) -> str:
        """The path the app sees for one of our URLs (below ``base_url``'s own path)."""
        path = urllib.parse.urlsplit(url).path
        return path[len(self._root) :] if self._root and path.startswith(self._root) else path


def is_ours(name: str, sections: Collection[str]) -> bool:
    """Whether export may write or remove the file ``name``: an index file, or a page of
    one of ``sections``, or either's ``.gz``, under the name the middleware serves it at.

    Never ``sitemap.xml``: the middleware answers it (the first index's other name), but
    export does not write it, so a ``sitemap.xml`` in the folder is the user's.
    """
    route = match_route(f"/{name}", sections)
    return route is not None and route.kind in ("index", "page") and name.removesuffix(".gz") != "sitemap.xml"


class _Every:
    """A container holding every section name: to read one off any page's file name."""

    def __contains__(self, name: object) -> bool:
        return True


def _listed_sections(folder: Path) -> set[str]:
    """The sections whose pages the index files in ``folder`` list (a past export's)."""
    found: set[str] = set()
    for entry in os.scandir(folder):
        route = match_route(f"/{entry.name}", _Every())
        if route is None or route.kind != "index" or route.gz_file:
            continue
        for loc in _locs(_read_regular(Path(entry.path)) or b""):
            page = match_route("/" + urllib.parse.urlsplit(loc).path.rsplit("/", 1)[-1], _Every())
            if page is not None and page.kind == "page":
                found.add(page.section)
    return found


def _read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file at ``path``; ``None`` for a link, anything else or a big one."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with open(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_BYTES:
            return None
        return file.read()


def _locs(index: bytes) -> Iterator[str]:
    """The ``<loc>`` of every sitemap an index lists (none when it is not an index)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        document = etree.fromstring(index, parser)
    except etree.XMLSyntaxError:
        return
    for loc in document.iterfind(f"{{{SITEMAP_NS}}}sitemap/{{{SITEMAP_NS}}}loc"):
        yield loc.text or ""


class _Nothing:
    """An lxml parser target with no callbacks: the document is checked and nothing built."""

    def close(self) -> None:
        return None


def _check_complete(path: str, body: bytes, tag: str) -> None:
    """A body whose stream stopped early is not well-formed: never taken for a whole file.

    Checked by libxml2 alone (a target with no callbacks: a 50 MiB page never becomes a
    tree, and costs milliseconds), the root read off the document's head.
    """
    whole = etree.XMLParser(
        target=cast("ParserTarget[None]", _Nothing()), resolve_entities=False, no_network=True, huge_tree=True
    )
    head = etree.XMLPullParser(events=("start",), resolve_entities=False, no_network=True)
    try:
        whole.feed(body)
        whole.close()
        head.feed(body[:_HEAD])
        root = next((str(element.tag) for _, element in head.read_events()), None)
    except etree.XMLSyntaxError as error:
        raise _Unusable(f"GET {path}: the body is cut short or malformed ({error})") from error
    if root != tag:
        raise _Unusable(f"GET {path}: not a {tag.partition('}')[2]} document")


def _moving_order(names: Iterable[str]) -> list[str]:
    """Pages first, then the later index files, the first index (robots.txt's entry) last:
    whenever a reader opens an index, every file it lists is there."""

    def rank(name: str) -> int:
        route = match_route(f"/{name}", _Every())
        if route is None or route.kind == "page":
            return 0
        if name.removesuffix(".gz") != _FIRST_INDEX:
            return 1
        return 2 if route.gz_file else 3

    return sorted(names, key=rank)


@contextmanager
def log_messages(level: int) -> Iterator[list[str]]:
    """The messages the package logs at ``level`` or above meanwhile, as they come."""
    handler = _Collect(level)
    logger = logging.getLogger("sitemap_middleware")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)


class _Collect(logging.Handler):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _no_robots(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The app behind the middleware: no robots.txt of its own, so ours names every index."""
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b""]
