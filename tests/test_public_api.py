"""The curated public surface: ``sitemap_middleware.__all__`` (httpx's test_exported_members)."""

from __future__ import annotations

from types import ModuleType

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
    # README and the issue: these names are the API users write against.
    documented = {"Sitemaps", "Url", "ConfigurationError", "EntryError", "MemoryStore", "CacheStore"}
    assert documented <= set(sitemap_middleware.__all__)
