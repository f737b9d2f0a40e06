"""Offline validation of served documents against the official XSDs in ``../shared/schemas``.

The schemas are referenced where they live (beside the repository), never copied in.
Where they are absent (a fresh clone on a user's machine) `validate` only parses: the
schema step is skipped and counted, the calling test goes on with its other assertions,
and the run's summary says how many tests went unvalidated and why (conftest.py). One
test, ``test_official_schemas_are_present_and_reject_a_bad_document``, skips instead.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from lxml import etree

SCHEMA_DIR = Path(
    os.environ.get("SITEMAP_SCHEMAS", Path(__file__).resolve().parents[2] / "shared" / "schemas")
)
NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
SKIP_REASON = f"official XSDs not found in {SCHEMA_DIR} (set SITEMAP_SCHEMAS)"

_steps_skipped = 0  # schema steps skipped since `take_steps_skipped` last ran

# One schema object for the core and every extension namespace: the core schemas use
# strict ##other wildcards, so an extension validates only if its schema is loaded too.
_WRAPPER = """<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:import namespace="http://www.sitemaps.org/schemas/sitemap/0.9" schemaLocation="{core}"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-image/1.1" schemaLocation="sitemap-image.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-video/1.1" schemaLocation="sitemap-video.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-news/0.9" schemaLocation="sitemap-news.xsd"/>
  <xs:import namespace="http://www.w3.org/1999/xhtml" schemaLocation="xhtml1-strict.xsd"/>
</xs:schema>"""


class _LocalXmlXsd(etree.Resolver):
    """Maps the one remote import (xml.xsd, from xhtml1-strict.xsd) to the local copy."""

    def resolve(self, system_url, public_id, context):  # type: ignore[no-untyped-def]
        if system_url and system_url.endswith("/xml.xsd"):
            return self.resolve_filename(str(SCHEMA_DIR / "xml.xsd"), context)
        return None


def schemas_available() -> bool:
    return (SCHEMA_DIR / "sitemap.xsd").is_file() and (SCHEMA_DIR / "siteindex.xsd").is_file()


@functools.cache
def _schema(core: str) -> etree.XMLSchema:
    parser = etree.XMLParser(no_network=True)
    parser.resolvers.add(_LocalXmlXsd())
    wrapper = _WRAPPER.format(core=core).encode()
    document = etree.fromstring(wrapper, parser, base_url=str(SCHEMA_DIR / "wrapper.xsd"))
    return etree.XMLSchema(document)


def validate(document: bytes) -> etree._Element:
    """Parse ``document``, validate it against the official XSD for its root, return the root.

    Without the schemas only the parse (well-formedness) is checked: the schema step is
    counted as skipped (see `take_steps_skipped`) and the calling test goes on.
    """
    global _steps_skipped
    root = parse(document)
    if not schemas_available():
        _steps_skipped += 1
        return root
    core = "siteindex.xsd" if etree.QName(root).localname == "sitemapindex" else "sitemap.xsd"
    schema = _schema(core)
    if not schema.validate(root):
        raise AssertionError(f"{core} rejects the document: {schema.error_log}")
    return root


def take_steps_skipped() -> int:
    """How many schema steps were skipped since the last call (conftest.py reports them per test)."""
    global _steps_skipped
    taken, _steps_skipped = _steps_skipped, 0
    return taken


def parse(document: bytes) -> etree._Element:
    """Parse without validating (for tests whose subject is not the schema)."""
    return etree.fromstring(document, etree.XMLParser(no_network=True, resolve_entities=False))


def locs(root: etree._Element) -> list[str]:
    """Every ``<loc>`` text of a urlset or an index, in document order."""
    return [el.text or "" for el in root.iterfind(".//sm:loc", NS)]


def lastmods(root: etree._Element) -> list[str | None]:
    """The ``<lastmod>`` of each ``<url>``/``<sitemap>`` child, ``None`` where absent."""
    return [child.findtext("sm:lastmod", namespaces=NS) for child in root]
