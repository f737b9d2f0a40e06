"""hreflang alternates whose pages do not list them back, across every file of a tree.

Google ignores an alternate unless the pair is reciprocal: page A names B and B names A.
The check needs no fetch: each ``<xhtml:link rel="alternate" hreflang>`` is recorded as the
tree is read, in the order reported, and the pairs are compared once every file is in::

    alternates = Alternates()
    alternates.add("sitemap-pages-1.xml", [(loc, href, line), ...])   # one file's, in order
    for problem in alternates.problems(listed=lambda key: key in fingerprints):
        print(problem)

Bounded: at most ``MAX_ALTERNATES`` alternates are kept (beyond them one warning counts those
not checked), each as two 8-byte fingerprints, its file and line, and its href's bytes, plus
one entry in the set of declared pairs (a page's loc is kept once): about 250 bytes each,
250 MB at the bound.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator

from .document import MAX_SHOWN, Problem
from .values import fingerprint

__all__ = ["MAX_ALTERNATES", "Alternates"]

MAX_ALTERNATES = 1_000_000


def _number(loc: str) -> int:
    return int.from_bytes(fingerprint(loc), "big")


class Alternates:
    """Every hreflang pair of a tree, and whether each one is reciprocal."""

    def __init__(self, limit: int = MAX_ALTERNATES) -> None:
        self.limit = limit
        self.unchecked = 0  # alternates past the limit
        self._files: list[str] = []
        self._from, self._to = array("Q"), array("Q")
        self._file, self._line = array("L"), array("L")
        self._hrefs, self._ends = bytearray(), array("Q")
        self._pages, self._page_ends, self._page = bytearray(), array("Q"), array("L")
        self._declared: set[int] = set()
        self.counts = [0, 0]  # problems, warnings: all of them, shown or not (once `problems` ran)

    def add(self, location: str, alternates: list[tuple[str, str, int]]) -> None:
        """One file's alternates, in order: (the page's loc, the alternate's href, the link's line)."""
        if not alternates:
            return
        self._files.append(location)
        file = len(self._files) - 1
        for loc, href, line in alternates:
            if href == loc:
                continue  # a page names itself too (Google asks it): no pair to confirm
            if len(self._from) >= self.limit:
                self.unchecked += 1
                continue
            source, target = _number(loc), _number(href)
            self._declared.add(source << 64 | target)
            self._from.append(source)
            self._to.append(target)
            self._file.append(file)
            self._line.append(line)
            self._hrefs += href.encode()
            self._ends.append(len(self._hrefs))
            if not self._page_ends or self._page_text(len(self._page_ends) - 1) != loc:
                self._pages += loc.encode()  # once per <url>, not once per alternate
                self._page_ends.append(len(self._pages))
            self._page.append(len(self._page_ends) - 1)

    def problems(self, listed: Callable[[bytes], bool]) -> Iterator[Problem]:
        """Each pair whose alternate does not name its page back, in the order read; a warning
        where the alternate is in no sitemap of the tree (``listed``: is a loc's fingerprint
        in the tree?). Past `MAX_SHOWN`, one line counts the rest."""
        shown = hidden = 0
        for index, (source, target) in enumerate(zip(self._from, self._to, strict=True)):
            if target << 64 | source in self._declared:
                continue
            known = listed(target.to_bytes(8, "big"))
            self.counts[not known] += 1
            if shown == MAX_SHOWN:
                hidden += 1
                continue
            shown += 1
            href = _slice(self._hrefs, self._ends, index)
            location, line = self._files[self._file[index]], self._line[index]
            if known:
                message = (
                    f"the hreflang alternate {href} does not list {self._page_text(self._page[index])} "
                    "back (Google ignores a pair that is not reciprocal)"
                )
                yield Problem(location, line, message)
            else:
                message = (
                    f"the hreflang alternate {href} is listed in no sitemap of the tree: "
                    "whether it lists this page back is not known"
                )
                yield Problem(location, line, message, warning=True)
        if hidden:
            yield Problem(self._files[0], 0, f"{hidden:,} more hreflang problems, not shown")
        if self.unchecked:
            message = f"{self.unchecked:,} hreflang alternates past the first {self.limit:,} not checked"
            yield Problem(self._files[0], 0, message, warning=True)

    def _page_text(self, index: int) -> str:
        return _slice(self._pages, self._page_ends, index)


def _slice(blob: bytearray, ends: array[int], index: int) -> str:
    """The ``index``-th of the texts ``blob`` holds end to end (``ends``: where each ends)."""
    return blob[ends[index - 1] if index else 0 : ends[index]].decode()
