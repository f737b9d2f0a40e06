"""Your own hooks: ``sitemaps.on_change(callback)``, fed from the same outbox as IndexNow.

    @sitemaps.on_change
    def reindex(changes: Sequence[Change]) -> None:
        search_index.update([c.loc for c in changes if c.kind != "removed"])

``callback`` is called on the push thread, never on a request's, with each batch of URL
`Change`s of one site (oldest first, at most ``limit``). It returned: the batch is never
given again. It raised: the exception is logged, counted (``retried``) and the same batch
is given again after a backoff, so nothing is lost; make it idempotent, as a crash between
its return and the log's acknowledgement gives the batch once more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..changes.model import Change, Delivery
from ..errors import ConfigurationError
from .target import Outcome, Sent, Want

__all__ = ["ChangeCallback", "Hook"]

ChangeCallback = Callable[[Sequence[Change]], object]


class Hook:
    """A callable as a push target; ``name`` keeps its outbox across restarts (by default
    the callable's module and qualified name)."""

    wants: frozenset[Want] = frozenset({"urls"})

    def __init__(self, callback: ChangeCallback, *, name: str | None = None, limit: int = 1_000) -> None:
        if not callable(callback):
            raise ConfigurationError(f"on_change needs a callable, not {type(callback).__name__}")
        if name is None:
            qualname = getattr(callback, "__qualname__", type(callback).__qualname__)
            name = f"{getattr(callback, '__module__', '')}.{qualname}"
        if not isinstance(name, str) or not name or "|" in name:
            raise ConfigurationError(f"a hook's name must be a non-empty string without '|', not {name!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"a hook's limit must be a positive int, not {limit!r}")
        self.callback = callback
        self.name = f"hook:{name}"
        self.limit = limit

    def consumer(self, site: str) -> str:
        return f"{self.name}|{site}"

    def send(self, delivery: Delivery, site: str) -> Outcome:
        self.callback(delivery.changes)  # an exception: logged, counted, retried (`dispatch`)
        return Sent()
