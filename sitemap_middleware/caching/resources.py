"""Which cache entry and validators a request's document has: keys, generations, versions.

A `Resource` names one document as the cache sees it. Its ``key`` changes whenever the
document may have changed (a section's generation after `invalidate`, a new declared
version, another mount prefix); its ``stable`` name does not, which is where the time
its bytes were first produced is remembered::

    resources = Resources(site, sections, store)
    resources.resource(route, prefix="", run_async=runner).key
    # 'page|https://shop.example|products|0.0|2|None'
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Literal

from ..errors import ProviderError
from ..protocol.uris import Site
from ..providers import AsyncRunner, Call, Section, resolve
from ..web.rules import Route
from .stores import CacheStore

__all__ = ["Resource", "Resources", "Version", "page_key", "version_etag"]

# Part of every version-derived ETag: bump when the same data would render differently.
RENDER_FORMAT = "1"


@dataclass(frozen=True, slots=True)
class Version:
    """A section's declared version: an opaque token, and a time when it is one."""

    token: str
    time: int | None

    @classmethod
    def of(cls, value: object) -> Version:
        if isinstance(value, datetime):
            aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
            return cls(aware.isoformat(), int(aware.timestamp()))
        if isinstance(value, date):
            midnight = datetime(value.year, value.month, value.day, tzinfo=UTC)
            return cls(value.isoformat(), int(midnight.timestamp()))
        return cls(f"{type(value).__name__}:{value!r}", None)


@dataclass(frozen=True, slots=True)
class Resource:
    """One document we serve, as the cache sees it."""

    kind: Literal["index", "page"]
    section: str  # "" for the index
    key: str  # changes with generations and declared versions
    stable: str  # the same across generations: where first-produced times are kept
    version: Version | None  # declared version (combined, for the index)


class Resources:
    """Keys and declared versions for one `Sitemaps` configuration."""

    def __init__(self, site: Site, sections: Mapping[str, Section], store: CacheStore | None) -> None:
        self.site = site
        self.sections = sections
        self.store = store
        # Documents of sections without a declared version, by route and prefix: their
        # key only changes with the generation(s), so a cached hit need not rebuild it.
        self._pages: dict[tuple[Route, str], tuple[str, Resource]] = {}

    def declares_version(self, route: Route) -> bool:
        if route.kind == "index":
            return any(section.version is not None for section in self.sections.values())
        return self.sections[route.section].version is not None

    def version(self, section: Section, run_async: AsyncRunner) -> Version | None:
        if section.version is None:
            return None
        return Version.of(self._call(section, "version", section.version, run_async))

    def count(self, section: Section, run_async: AsyncRunner) -> int:
        assert section.count is not None
        count = self._call(section, "count", section.count, run_async)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ProviderError(f"count of section {section.name!r} returned {count!r}, not an int >= 0")
        if count > sys.maxsize:
            # Past what a range (and any real table) can hold; pages are located by arithmetic on it.
            raise ProviderError(f"count of section {section.name!r} returned {count:,}, over {sys.maxsize:,}")
        return count

    def _call(self, section: Section, what: str, call: Call, run_async: AsyncRunner) -> object:
        """Call a section's ``version`` or ``count`` callable (sync or async)."""
        try:
            return resolve(call(base_url=self.site.root), run_async)
        except Exception as exc:
            raise ProviderError(f"{what} of section {section.name!r} raised {exc!r}") from exc

    def resource(self, route: Route, prefix: str, run_async: AsyncRunner) -> Resource:
        store = self.store
        root = self.site.root
        if route.kind == "index":
            sections = list(self.sections.values())
            generations = ",".join(store.generation(s.name) for s in sections) if store else ""
            memo = self._pages.get((route, prefix))
            if memo is not None and memo[0] == generations and not self.declares_version(route):
                return memo[1]
            versions = [self.version(s, run_async) for s in sections]
            token = "|".join(
                f"{s.name}:{s.page_size}:{v and v.token}" for s, v in zip(sections, versions, strict=True)
            )
            # Each index file is its own document, with its own key, flight and validators.
            number = route.number
            combined = None
            if versions and all(v is not None for v in versions):
                times = [v.time for v in versions if v is not None]
                latest = None if None in times else max(t for t in times if t is not None)
                combined = Version(f"{root}{prefix}|{number}|{token}", latest)
            key = f"index|{root}{prefix}|{number}|{generations}|{token}"
            resource = Resource("index", "", key, f"index|{root}{prefix}|{number}", combined)
            return self._remember(route, prefix, generations, resource)
        section = self.sections[route.section]
        generation = store.generation(section.name) if store else ""
        if section.version is None:
            memo = self._pages.get((route, prefix))
            if memo is not None and memo[0] == generation:
                return memo[1]
        version = self.version(section, run_async)
        if version is not None:
            token = f"{root}{prefix}|{section.name}:{section.page_size}:{route.number}:{version.token}"
            version = Version(token, version.time)
        resource = Resource(
            "page",
            section.name,
            page_key(
                f"{root}{prefix}", section.name, generation, route.number, version.token if version else None
            ),
            f"page|{root}{prefix}|{section.name}|{route.number}",
            version,
        )
        return self._remember(route, prefix, generation, resource)

    def _remember(self, route: Route, prefix: str, generation: str, resource: Resource) -> Resource:
        if resource.version is None:
            if len(self._pages) >= 10_000:
                self._pages.clear()  # bounded: paths come from clients
            self._pages[(route, prefix)] = (generation, resource)
        return resource


def page_key(scope: str, section: str, generation: str, number: int, token: str | None) -> str:
    """The store key of a page: ``scope`` is the site root and mount prefix."""
    return f"page|{scope}|{section}|{generation}|{number}|{token}"


def version_etag(resource: Resource) -> str:
    assert resource.version is not None
    return "v" + hashlib.sha256(f"{RENDER_FORMAT}|{resource.version.token}".encode()).hexdigest()[:31]
