"""A one-line progress display on a terminal, and nothing at all when output is not one."""

from __future__ import annotations

from typing import TextIO

from .validate import Summary

__all__ = ["Progress"]


class Progress:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.live = stream.isatty()
        self._shown = False

    def validated(self, summary: Summary) -> None:
        self._show(f"checked {summary.files:,} files, {summary.urls:,} URLs, {summary.problems:,} problems")

    def audited(self, requested: int, total: int, problems: int) -> None:
        self._show(f"requested {requested:,} of {total:,} listed URLs, {problems:,} problems")

    def exported(self, files: int) -> None:
        self._show(f"wrote {files:,} files")

    def done(self) -> None:
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()

    def _show(self, text: str) -> None:
        self._stream.write(f"\r\033[K{text}")
        self._stream.flush()
        self._shown = True
