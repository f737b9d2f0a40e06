"""The curated public surface: ``sitemap_middleware.__all__`` (httpx's test_exported_members)."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

import pytest

import sitemap_middleware


def test_all_is_sorted_without_duplicates() -> None:
    assert sitemap_middleware.__all__ == sorted(set(sitemap_middleware.__all__))


def test_every_name_in_all_exists() -> None:
    missing = [name for name in sitemap_middleware.__all__ if not hasattr(sitemap_middleware, name)]
    assert missing == []


def test_every_public_name_is_in_all() -> None:
    public = {
        name
        for name, value in vars(sitemap_middleware).items()
        if not name.startswith("_") and not isinstance(value, ModuleType) and name != "annotations"
    }
    assert public == set(sitemap_middleware.__all__)


def test_documented_names_are_exported() -> None:
    # The README, docs/ and the issue: these names are the API users write against.
    documented = {"Sitemaps", "Url", "ConfigurationError", "EntryError", "MemoryStore", "CacheStore"}
    assert documented <= set(sitemap_middleware.__all__)


# The integrations' public paths, as docs/ imports them: the packages' modules may move.
INTEGRATIONS = {
    "sitemap_middleware.django": [
        "KeysetSource",
        "SitemapMiddleware",
        "SitemapSource",
        "from_sitemap",
        "keyset",
    ],
    "sitemap_middleware.flask": ["EXTENSION", "init_app"],
    "sitemap_middleware.push": [
        "Backoff",
        "CloudflarePurge",
        "FastlyPurge",
        "Hook",
        "HttpPurge",
        "IndexNow",
        "Outcome",
        "PurgeReport",
        "Push",
        "Pushed",
        "Refused",
        "Retry",
        "Sent",
        "Target",
        "retry_after",
    ],
    "sitemap_middleware.sqlalchemy": ["AsyncKeyset", "Keyset", "keyset"],
}


@pytest.mark.parametrize("name", sorted(INTEGRATIONS))
def test_each_integration_exports_the_names_the_readme_imports(name: str) -> None:
    module = import_module(name)
    assert module.__all__ == INTEGRATIONS[name]
    # A name, not a submodule of the same name that an import would have bound over it.
    assert not any(isinstance(getattr(module, each), ModuleType) for each in module.__all__)
