"""The official XSDs from a folder, loaded once, checking one ``<url>`` or ``<sitemap>`` at a time.

A whole document validates only once parsed whole; a 50 MB sitemap must not be. So each
entry is validated on its own, inside an empty root of the same kind, as it streams by.
The core schemas use strict ``##other`` wildcards, so every extension's schema (image,
video, news, xhtml) is loaded into the same schema object, when the folder has it::

    schemas = Schemas.load(Path("../shared/schemas"))
    schemas.check(URLSET, url_element)     # [(line, message), ...]
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

__all__ = ["SchemaError", "Schemas"]

_SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
_EXTENSIONS = {
    "http://www.google.com/schemas/sitemap-image/1.1": "sitemap-image.xsd",
    "http://www.google.com/schemas/sitemap-video/1.1": "sitemap-video.xsd",
    "http://www.google.com/schemas/sitemap-news/0.9": "sitemap-news.xsd",
    "http://www.w3.org/1999/xhtml": "xhtml1-strict.xsd",
}


class SchemaError(Exception):
    """The folder does not hold usable official schemas."""


class _LocalImports(etree.Resolver):
    """The one remote import (xml.xsd, imported by xhtml1-strict.xsd) read from the folder."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self._folder = folder

    def resolve(self, system_url, public_id, context):  # type: ignore[no-untyped-def]
        if system_url and system_url.endswith("/xml.xsd") and (self._folder / "xml.xsd").is_file():
            return self.resolve_filename(str(self._folder / "xml.xsd"), context)
        return None


@dataclass(frozen=True)
class Schemas:
    urlset: etree.XMLSchema
    index: etree.XMLSchema
    # A schema keeps the error log of its last validation: one at a time, whatever the thread.
    _lock: threading.Lock = field(default_factory=threading.Lock, compare=False, repr=False)

    @classmethod
    def load(cls, folder: Path) -> Schemas:
        for name in ("sitemap.xsd", "siteindex.xsd"):
            if not (folder / name).is_file():
                raise SchemaError(f"{folder / name} not found")
        return cls(_compile(folder, "sitemap.xsd"), _compile(folder, "siteindex.xsd"))

    def check(self, root_tag: str, element: etree._Element) -> list[tuple[int, str]]:
        """Validate one entry (moved out of its document, which drops it next anyway)."""
        schema = self.index if root_tag.endswith("}sitemapindex") else self.urlset
        root = etree.Element(root_tag, nsmap=element.nsmap)
        line = element.sourceline or 0
        root.append(element)
        with self._lock:
            if schema.validate(etree.ElementTree(root)):
                return []
            return [(error.line or line, error.message) for error in schema.error_log]


def _compile(folder: Path, core: str) -> etree.XMLSchema:
    imports = [f'<xs:import namespace="{_SITEMAP_NS}" schemaLocation="{core}"/>']
    imports += [
        f'<xs:import namespace="{namespace}" schemaLocation="{name}"/>'
        for namespace, name in _EXTENSIONS.items()
        if (folder / name).is_file()
    ]
    wrapper = (
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">'
        + "".join(imports)
        + "</xs:schema>"
    )
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(_LocalImports(folder))
    try:
        document = etree.fromstring(wrapper.encode(), parser, base_url=str(folder.resolve() / "wrapper.xsd"))
        return etree.XMLSchema(document)
    except (etree.XMLSchemaParseError, etree.XMLSyntaxError) as error:
        raise SchemaError(f"the schemas in {folder} do not compile: {error}") from None
