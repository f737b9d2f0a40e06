"""A set of files for a folder, written aside and moved in only once every one is complete.

The folder (often a site's ``public/``) is shared with files that are not ours, so it is
never swapped whole: each new file is written into a fresh private folder inside it (the
same filesystem, so a move is a rename), then moved in by ``os.replace``, atomic per file,
in the order given; then the old files the caller owns and the new set lacks are removed::

    with Staging(Path("public")) as staging:
        staging.write("sitemap-products-1.xml", body)
        staging.write("sitemap-index.xml", index)
        staging.commit(["sitemap-products-1.xml", "sitemap-index.xml"], stale=is_ours)

Leaving the ``with`` block in any other way (an exception, ``KeyboardInterrupt``) removes
the private folder and leaves the folder exactly as it was.

Links are never written through: a file is created with ``O_EXCL`` (and ``O_NOFOLLOW``)
in a folder only this process knows, and a rename replaces a link at the target name
itself, never the file it points to.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType

__all__ = ["MoveFailed", "Staging"]

PREFIX = ".sitemap-export-"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# What stops a command line: held while files move, so a folder is never left half new.
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class MoveFailed(Exception):
    """A move into the folder failed: the files moved before it are new, the others old."""


class Staging:
    """New files for ``folder``, kept in a private folder inside it until `commit`.

    - ``folder``: an existing folder (a link to one is followed: it is the one named).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        # mkdtemp: a fresh name, mode 0o700, so nobody else can plant a file or link in it.
        self._aside = Path(tempfile.mkdtemp(prefix=PREFIX, dir=folder))
        self._names: set[str] = set()

    def __enter__(self) -> Staging:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        shutil.rmtree(self._aside, ignore_errors=True)

    def write(self, name: str, data: bytes) -> None:
        """Write the file ``name`` (a bare file name) aside, on disk before it is moved in."""
        if name in self._names or os.path.basename(name) != name or name in ("", ".", ".."):
            raise ValueError(f"not a new file name: {name!r}")
        descriptor = os.open(self._aside / name, _CREATE, 0o666)  # umask applies, as for any file
        with open(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            # Its bytes reach the disk before its name does: a crash never leaves a renamed, empty file.
            os.fsync(descriptor)
        self._names.add(name)

    def commit(self, order: Sequence[str], *, stale: Callable[[str], bool]) -> int | None:
        """Move every written file in, in ``order``, then remove the folder's regular files
        that ``stale`` claims and that were not written.

        Raises `OSError` with nothing moved when a name is taken by a folder, `MoveFailed`
        when a move fails after some moved. SIGINT and SIGTERM are held while files move
        (in the main thread): the signal that came is returned, for the caller to act on.
        """
        if sorted(order) != sorted(self._names):
            raise ValueError("the order must name every written file once")
        for name in order:
            # A rename cannot replace a folder: refuse before anything moves.
            if _kind(self.folder / name) == stat.S_IFDIR:
                raise IsADirectoryError(f"{self.folder / name} is a folder, not a file of ours")
        with _held(_HELD_SIGNALS) as held:
            old = [
                entry.name
                for entry in os.scandir(self.folder)
                if entry.name not in self._names
                and entry.is_file(follow_symlinks=False)
                and stale(entry.name)
            ]
            for name in order:
                try:
                    os.replace(self._aside / name, self.folder / name)
                except OSError as error:
                    raise MoveFailed(
                        f"moving {name} into {self.folder} failed ({error}): {self.folder} is part new"
                    ) from error
            _sync(self.folder)
            for name in old:
                # Unlinking a name removes that entry only, whatever it had become meanwhile.
                with suppress(FileNotFoundError):
                    os.unlink(self.folder / name)
        return held[0] if held else None


def _kind(path: Path) -> int | None:
    """The file type at ``path`` itself (a link is a link), or ``None`` when nothing is there."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None


def _sync(folder: Path) -> None:
    """Make the folder's new names durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


@contextmanager
def _held(signals: Sequence[signal.Signals]) -> Iterator[list[int]]:
    """Record ``signals`` instead of acting on them, while the block runs (main thread only:
    Python runs signal handlers there, and nowhere else can install them)."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = {}
    for signum in signals:
        # An ignored signal stays ignored; one handled outside Python cannot be put back.
        if signal.getsignal(signum) not in (signal.SIG_IGN, None):
            previous[signum] = signal.signal(signum, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
