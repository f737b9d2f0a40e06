"""Key files a push target asks the site to serve (IndexNow's ``/<key>.txt``), answered by us.

    files = KeyFiles({"/3f1c9a2be07d4c11.txt": b"3f1c9a2be07d4c11"})
    "/3f1c9a2be07d4c11.txt" in files             # True: the gateway routes it to us
    files.answer(request)                        # 200, text/plain; charset=utf-8, the key alone

Answered before the app sees the request, on every site of the `Sitemaps` (an engine
fetches it from each host it is given), for GET and HEAD; other methods are the app's.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..web import rules
from ..web.replies import Reply, Request

__all__ = ["KeyFiles"]


class KeyFiles:
    """The key files by path (below the mount), each with its body."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._replies = {
            path: [("Content-Type", rules.TEXT_TYPE), ("Content-Length", str(len(body)))]
            for path, body in files.items()
        }
        self._bodies = dict(files)

    def __contains__(self, path: object) -> bool:
        return path in self._bodies

    def __bool__(self) -> bool:
        return bool(self._bodies)

    def answer(self, request: Request) -> Reply:
        # indexnow.org: "a UTF-8 encoded text file containing the key"; nothing else in it.
        return Reply(200, list(self._replies[request.path]), self._bodies[request.path])
