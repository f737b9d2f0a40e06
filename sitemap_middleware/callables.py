"""A user's callable, as we call it: which of our keywords it takes, checked once at
registration, and its result awaited when it is a coroutine.

Providers, ``version`` and ``count`` callables are all called so::

    call = Call.of(lambda base_url: ["/", "/about"])   # a ConfigurationError if never callable
    call(base_url="https://shop.example")              # only what it declares is passed
    resolve(call(base_url=...), run_async)             # an async def's result, awaited

The engine is synchronous (it runs in the server's thread, or in a worker thread under
ASGI), so awaitables are driven through an `AsyncRunner`: the ASGI adapter hands back to the
app's event loop, the WSGI adapter runs a private loop (`LoopRunner`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .concurrency.deadlines import within
from .errors import ConfigurationError

__all__ = [
    "BASE_KEYWORDS",
    "OFFERED_KEYWORDS",
    "WINDOW_KEYWORDS",
    "AsyncRunner",
    "Call",
    "LoopRunner",
    "resolve",
    "takes_keyword",
]

T = TypeVar("T")


class AsyncRunner(Protocol):
    """Runs one coroutine to completion from the engine's (synchronous) thread."""

    def __call__(self, func: Callable[..., Awaitable[T]], /, *args: Any) -> T: ...


class LoopRunner:
    """An `AsyncRunner` with a private event loop, for async providers under WSGI.

    Every call gets the same deadline (``timeout`` seconds), so a hung async provider
    is cancelled instead of holding the request forever.
    """

    def __init__(self, timeout: float | None = None) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timeout = timeout

    def __call__(self, func: Callable[..., Awaitable[T]], /, *args: Any) -> T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(within(self._timeout, func, *args))

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


# What we pass by keyword: ``base_url`` to every callable, the window to providers only.
BASE_KEYWORDS = frozenset({"base_url"})
WINDOW_KEYWORDS = frozenset({"offset", "limit"})
OFFERED_KEYWORDS = BASE_KEYWORDS | WINDOW_KEYWORDS
_KEYWORD_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_BOUND_KINDS = (inspect.Parameter.POSITIONAL_ONLY, *_KEYWORD_KINDS)  # all but *args and **kwargs


@dataclass(frozen=True, slots=True)
class Call:
    """A user callable, and which of the optional keyword arguments we offer it takes.

    We offer ``base_url`` (the site being served, for apps serving several) and, to
    providers, ``offset`` and ``limit`` (together: a windowed provider); a callable gets
    only those it declares by a name that can be passed as a keyword.
    """

    func: Callable[..., object]
    accepts: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, func: Callable[..., object], *, offered: frozenset[str] = BASE_KEYWORDS, what: str = "callable"
    ) -> Call:
        """Check once, at registration, that ``func`` can be called with what we offer.

        A required parameter we would not pass is a `ConfigurationError` now rather than
        a `TypeError`, and a 503, at every request. ``what`` names the callable in the message.
        """
        try:
            parameters = inspect.signature(func).parameters
        except (TypeError, ValueError):  # some builtins and C callables have no signature
            return cls(func)
        by_keyword = {name for name, p in parameters.items() if p.kind in _KEYWORD_KINDS}
        accepts = frozenset(by_keyword) & offered
        if not accepts >= WINDOW_KEYWORDS:
            accepts -= WINDOW_KEYWORDS  # a window is an offset and a limit, never one alone
        for name, parameter in parameters.items():
            if (
                parameter.default is parameter.empty
                and parameter.kind in _BOUND_KINDS
                and name not in accepts
            ):
                raise ConfigurationError(_uncallable(what, func, name, parameter, offered))
        return cls(func, accepts)

    def __call__(self, **offered: object) -> object:
        return self.func(**{name: value for name, value in offered.items() if name in self.accepts})


def _uncallable(
    what: str, func: Callable[..., object], name: str, parameter: inspect.Parameter, offered: frozenset[str]
) -> str:
    label = getattr(func, "__qualname__", None) or type(func).__name__
    if parameter.kind is inspect.Parameter.POSITIONAL_ONLY and name in offered:
        reason = f"{name!r} is positional-only, and we pass it by keyword"
    elif name in WINDOW_KEYWORDS and name in offered:
        other = "limit" if name == "offset" else "offset"
        reason = f"it requires {name!r} but does not take {other!r}: a windowed provider takes both"
    else:
        reason = f"it requires {name!r}, which we never pass"
    keywords = ", ".join(sorted(offered))
    return (
        f"{what} {label} cannot be called: {reason}. It must take no required arguments "
        f"beyond the keywords {keywords}"
    )


def takes_keyword(func: Callable[..., object], name: str) -> bool:
    """Whether ``func`` can be given ``name`` by keyword (False when it has no signature)."""
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    named = parameters.get(name)
    return named is not None and named.kind in _KEYWORD_KINDS


def resolve(value: object, run_async: AsyncRunner) -> object:
    """``value``, or what it resolves to when it is awaitable (an ``async def`` callable's result)."""
    return run_async(_await, value) if inspect.isawaitable(value) else value


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable
