"""`Sitemaps`' push methods, kept beside the push package so `sitemaps` stays one job's size."""

from __future__ import annotations

from .dispatch import Dispatcher, Pushed
from .hooks import ChangeCallback

__all__ = ["PushMethods"]


class PushMethods:
    """``on_change``, ``push_now`` and ``close`` of a `Sitemaps` (its ``_push``: a `Dispatcher`)."""

    _push: Dispatcher

    def on_change(self, callback: ChangeCallback, *, name: str | None = None) -> ChangeCallback:
        """Call ``callback`` with each batch of `Change`s of one site, off the request path;
        retried when it raises, never given again once it returned (`push.hooks`). ``name``
        keeps its place in the outbox across restarts (default: the callable's qualified
        name). Usable as a decorator."""
        return self._push.hook(callback, name)

    def push_now(self) -> list[Pushed]:
        """Deliver everything waiting for the push targets now, on this thread, backoffs or
        not (tests, management commands); what happened to each delivery."""
        return self._push.now()

    def close(self) -> None:
        """Stop this process's push thread, if one runs (a send in progress ends first)."""
        self._push.close()
