"""How long the current request has waited on its store: a tab per request, opened by the adapter.

A store that waits on the network (`RedisStore`) charges each of its calls to the request
it is made for, and refuses them once that request has spent the store's budget
(``RedisStore(request_budget=...)``): a slow store then costs a request that budget (and
the call under way) at most, and the request answers without the store, as it does
during an outage. The budget is the store's; the tab only says what was spent.

The adapters open a tab for each request they answer through a `steps.Flow`. It lives in
the request's `contextvars` context, which worker threads inherit with the rest of it
(the ASGI adapter's threads, WSGI's helpers); code outside a request (a save hook's
``invalidate``, a store's background thread) has none, and is never refused for time::

    opened = store_time.open_tab()     # an adapter, as it starts answering a request
    ...
    store_time.close_tab(opened)       # in its ``finally``, in the same context

    tab = store_time.current()         # a store, around each call: None outside a request
    with tab.waiting():
        ...                            # tab.waited() counts this call so far too
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = ["InContext", "Tab", "charged", "close_tab", "current", "open_tab"]

T = TypeVar("T")


class Tab:
    """One request's store time: seconds ``spent`` waiting on it, and whether the store has
    ``refused`` it since (it then answers without the store: counted once per request)."""

    __slots__ = ("_since", "refused", "spent")

    def __init__(self) -> None:
        self.spent = 0.0
        self.refused = False
        self._since: float | None = None  # when the call under way began

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """One wait for the store (a request's calls come one after another)."""
        self._since = since = time.monotonic()
        try:
            yield
        finally:
            self._since = None
            self.spent += time.monotonic() - since

    def waited(self) -> float:
        """Seconds waited on the store so far, the call under way included."""
        since = self._since
        return self.spent if since is None else self.spent + time.monotonic() - since


_CURRENT: contextvars.ContextVar[Tab | None] = contextvars.ContextVar("sitemap_store_tab", default=None)


def open_tab() -> contextvars.Token[Tab | None]:
    """A new tab for the request this context answers; `close_tab` ends it."""
    return _CURRENT.set(Tab())


def close_tab(opened: contextvars.Token[Tab | None]) -> None:
    _CURRENT.reset(opened)


def current() -> Tab | None:
    """The tab of the request being answered here, or ``None`` outside a request."""
    return _CURRENT.get()


def charged(wait: Callable[[], T]) -> T:
    """``wait()``, its time charged to the current request's tab (a wait for the store)."""
    tab = _CURRENT.get()
    if tab is None:
        return wait()
    with tab.waiting():
        return wait()


class InContext:
    """A body whose chunks are made in the request's context (its tab): a WSGI server pulls
    them after the application returned, outside it."""

    __slots__ = ("_chunks", "_context")

    def __init__(self, context: contextvars.Context, chunks: Iterator[bytes]) -> None:
        self._context = context
        self._chunks = chunks

    def __iter__(self) -> InContext:
        return self

    def __next__(self) -> bytes:
        return self._context.run(next, self._chunks)

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()
