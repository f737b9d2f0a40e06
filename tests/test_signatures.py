"""Provider, version and count callables are checked when registered, not when a crawler arrives.

We call a provider with no arguments or with the documented keywords it declares
(``base_url``; ``offset`` and ``limit`` together), and a ``version`` or ``count`` callable
with none or ``base_url``. One that cannot be called so is a `ConfigurationError` at once.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware import ConfigurationError, Sitemaps

from .conftest import BASE, SitemapClient
from .properties import Outcomes
from .xsd import locs, validate

PROPERTY = settings(max_examples=150, deadline=None, database=None)
P = inspect.Parameter


def register(kind: str, func: Callable[..., Any]) -> Sitemaps:
    """A `Sitemaps` with ``func`` registered as a provider, a version or a count."""
    sitemaps = Sitemaps(base_url=BASE)
    if kind == "provider":
        sitemaps.add_provider("products", func)
    else:
        sitemaps.add_provider("products", lambda: ["/a"], **{kind: func})
    return sitemaps


@pytest.mark.parametrize(
    "func",
    [
        pytest.param(lambda request: ["/a"], id="positional-request"),
        pytest.param(lambda *, session: ["/a"], id="keyword-only-session"),
        pytest.param(lambda base_url, /: ["/a"], id="base-url-positional-only"),
        pytest.param(lambda offset: ["/a"], id="offset-without-limit"),
        pytest.param(lambda limit, base_url: ["/a"], id="limit-without-offset"),
        pytest.param(partial(lambda a, b: ["/a"], 1), id="partial-missing-b"),
    ],
)
def test_provider_that_cannot_be_called_is_refused_at_registration(func: Callable[..., Any]) -> None:
    with pytest.raises(ConfigurationError, match="provider for 'products'"):
        register("provider", func)


@pytest.mark.parametrize("kind", ["version", "count"])
@pytest.mark.parametrize(
    "func",
    [
        pytest.param(lambda request: 1, id="positional-request"),
        pytest.param(lambda offset, limit: 1, id="offset-and-limit"),
        pytest.param(lambda *, db: 1, id="keyword-only-db"),
    ],
)
def test_version_or_count_that_cannot_be_called_is_refused_at_registration(
    kind: str, func: Callable[..., Any]
) -> None:
    with pytest.raises(ConfigurationError, match="cannot be called"):
        register(kind, func)


@pytest.mark.parametrize(
    "func",
    [
        pytest.param(print, id="builtin"),
        pytest.param(int, id="class"),
    ],
)
def test_callable_without_an_inspectable_signature_or_no_required_argument_is_accepted(
    func: Callable[..., Any],
) -> None:
    register("version", func)


# -- the property: refused exactly when no call we make could bind -------------------------------------

NAMES = ("base_url", "offset", "limit", "request", "page")
KINDS = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    """Any valid Python signature over documented and undocumented names."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    params = [
        P(name, draw(st.sampled_from(KINDS)), default=draw(st.sampled_from([P.empty, None])))
        for name in names
    ]
    if draw(st.booleans()):
        params.append(P("args", P.VAR_POSITIONAL))
    if draw(st.booleans()):
        params.append(P("kwargs", P.VAR_KEYWORD))
    params.sort(key=lambda param: param.kind)
    # Python: once a positional parameter has a default, every later positional one needs one.
    defaulted = False
    for index, param in enumerate(params):
        if param.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
            defaulted = defaulted or param.default is not P.empty
            if defaulted and param.default is P.empty:
                params[index] = param.replace(default=None)
    return inspect.Signature(params)


def function_with(signature: inspect.Signature, result: object) -> Callable[..., Any]:
    """A real function with ``signature`` that returns ``result``."""
    namespace: dict[str, Any] = {"result": result}
    exec(f"def func{signature}:\n    return result", namespace)
    func: Callable[..., Any] = namespace["func"]
    return func


def call_we_make(kind: str, signature: inspect.Signature) -> dict[str, object]:
    """The keywords the middleware passes: those of ``base_url``, ``offset``, ``limit`` it names.

    ``offset`` and ``limit`` only together (a windowed provider), and only to providers.
    """
    named = {
        name
        for name, param in signature.parameters.items()
        if param.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)
    }
    offered = {"base_url"}
    if kind == "provider" and {"offset", "limit"} <= named:
        offered |= {"offset", "limit"}
    return dict.fromkeys(named & offered, 0)


def test_callable_is_refused_exactly_when_the_call_we_make_cannot_bind() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(kind=st.sampled_from(["provider", "version", "count"]), signature=signatures())
    def check(kind: str, signature: inspect.Signature) -> None:
        func = function_with(signature, ["/a"] if kind == "provider" else 1)
        try:
            signature.bind(**call_we_make(kind, signature))
        except TypeError:
            callable_so = False
        else:
            callable_so = True
        try:
            sitemaps = register(kind, func)
        except ConfigurationError:
            assert not callable_so
            outcomes.refused()
            return
        assert callable_so
        response = SitemapClient("wsgi", sitemaps).get("/sitemap-products-1.xml")
        assert response.status == 200
        assert locs(validate(response.body)) == [f"{BASE}/a"]
        outcomes.accepted()

    check()
    outcomes.assert_both()


def test_every_documented_provider_shape_is_accepted() -> None:
    shapes = [
        lambda: ["/a"],
        lambda base_url: ["/a"],
        lambda offset, limit: ["/a"][offset : None if limit is None else offset + limit],
        lambda *, base_url, offset, limit: ["/a"],
        lambda *args, **kwargs: ["/a"],
        lambda request=None: ["/a"],
    ]
    for func in shapes:
        response = SitemapClient("wsgi", register("provider", func)).get("/sitemap-products-1.xml")
        assert locs(validate(response.body)) == [f"{BASE}/a"]
