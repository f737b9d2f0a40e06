"""hreflang: language tags, a section's languages, and one entry seen in one of its languages.

A tag is a BCP 47 language, with an optional script and region, or ``x-default``; it is
written in BCP 47's canonical case, so ``en-us`` and ``en-US`` are one tag::

    language_tag("EN-us")                                # 'en-US'
    languages = Languages.parse(["en", "de"], x_default="en")
    languages.prefixes                                   # ('/en', '/de')

A section with languages expands each of its entries into one URL per language as the
entries are pulled (`Localised` records, a batch at a time), never item x language at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import ConfigurationError, EntryError

__all__ = ["X_DEFAULT", "Languages", "Localised", "language_tag"]

X_DEFAULT = "x-default"
# BCP 47 (RFC 5646 §2.1) as Google reads hreflang: an ISO 639 language, an optional ISO 15924
# script and an optional ISO 3166-1 alpha-2 or UN M.49 region. No variants, extensions or
# private use: Google ignores tags that carry them.
_TAG = re.compile(r"([A-Za-z]{2,3})(?:-([A-Za-z]{4}))?(?:-([A-Za-z]{2}|[0-9]{3}))?")
# A path prefix a language's URLs live below: "" or "/segment[/segment...]", no trailing slash.
_PREFIX = re.compile(r"(?:/[A-Za-z0-9\-._~]+)*")


def language_tag(value: object) -> str:
    """``value`` as a canonical hreflang, or `EntryError` ("invalid hreflang")."""
    if isinstance(value, str):
        if value.lower() == X_DEFAULT:
            return X_DEFAULT
        match = _TAG.fullmatch(value)
        if match is not None:
            language, script, region = match.groups()
            if region is not None and region.upper() == "UK":
                # ISO 3166-1 reserves UK; the United Kingdom is GB (a classic hreflang mistake).
                raise EntryError("invalid hreflang", f"{value!r}: the United Kingdom is GB")
            tag = language.lower()
            if script is not None:
                tag += "-" + script.title()
            if region is not None:
                tag += "-" + region.upper()
            return tag
    raise EntryError("invalid hreflang", f"{value!r} is not a language(-script)(-region) tag or x-default")


class Localised(NamedTuple):
    """One provider entry in one of its section's languages (``language``: an index into `Languages.tags`)."""

    entry: object
    language: int


@dataclass(frozen=True, slots=True)
class Languages:
    """A section's languages: canonical tags, the path prefix of each, and which is x-default.

    Each language's URL of an entry is the entry's loc with that language's prefix put after
    ``base_url`` (and the mount path): ``/p/1`` is ``/de/p/1`` in German.
    """

    tags: tuple[str, ...]
    prefixes: tuple[str, ...]
    x_default: int | None  # index into tags

    @classmethod
    def parse(cls, languages: Sequence[str] | Mapping[str, str], x_default: str | None) -> Languages:
        """Check a section's ``languages`` and ``x_default`` at registration (`ConfigurationError`)."""
        if isinstance(languages, str) or not isinstance(languages, Sequence | Mapping):
            raise ConfigurationError(
                f"languages must be a list of language tags or a mapping of tag to path prefix, "
                f"not {type(languages).__name__}"
            )
        pairs = (
            list(languages.items()) if isinstance(languages, Mapping) else [(t, f"/{t}") for t in languages]
        )
        if not pairs:
            raise ConfigurationError("languages must name at least one language")
        tags: list[str] = []
        prefixes: list[str] = []
        for given, prefix in pairs:
            try:
                tag = language_tag(given)
            except EntryError as error:
                raise ConfigurationError(f"invalid language {given!r} in languages: {error.detail}") from None
            if tag == X_DEFAULT:
                raise ConfigurationError("x-default is not a language: name it with x_default=")
            if tag in tags:
                raise ConfigurationError(f"language {tag!r} is given twice in languages")
            if not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None:
                raise ConfigurationError(
                    f"the path prefix of {tag!r} must be '' or '/segment' (no trailing slash), not {prefix!r}"
                )
            if prefix in prefixes:
                raise ConfigurationError(
                    f"languages {tags[prefixes.index(prefix)]!r} and {tag!r} share a prefix"
                )
            tags.append(tag)
            prefixes.append(prefix)
        index = None
        if x_default is not None:
            try:
                index = tags.index(language_tag(x_default))
            except (EntryError, ValueError):
                raise ConfigurationError(f"x_default {x_default!r} is not one of languages {tags}") from None
        return cls(tuple(tags), tuple(prefixes), index)
