"""The gzip compressor is the user's choice: zlib, or ISA-L from the ``fast`` extra.

Whatever compresses, the documents mean the same and carry the same validators; the
gzip bytes are the compressor's own, and every worker of one deployment (one choice,
one environment) serves the very same ones.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sitemap_middleware import ConfigurationError, Sitemaps

from ..conftest import BASE, SitemapClient, make_shop
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"
HAS_ISAL = importlib.util.find_spec("isal") is not None
needs_isal = pytest.mark.skipif(not HAS_ISAL, reason="the isal package (the fast extra) is not installed")
COMPRESSORS = ["zlib", pytest.param("isal", marks=needs_isal)]


def shop(compressor: str, cache: bool = True) -> Sitemaps:
    """3,000 products, pulled from a generator, with an ``&`` to escape in each loc."""
    return make_shop(
        3000,
        product=lambda n: f"/p/{n}?a=1&b={n % 7}",
        shape="generator",
        sections=["products"],
        compressor=compressor,
        cache=cache,
    )


def test_auto_takes_isal_when_it_is_installed() -> None:
    assert Sitemaps(base_url=BASE).compressor == ("isal" if HAS_ISAL else "zlib")


def test_auto_falls_back_to_zlib_without_isal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "isal", None)  # import isal -> ImportError
    monkeypatch.setitem(sys.modules, "isal.isal_zlib", None)
    assert Sitemaps(base_url=BASE).compressor == "zlib"
    with pytest.raises(ConfigurationError, match=r"sitemap-middleware\[fast\]"):
        Sitemaps(base_url=BASE, compressor="isal")


def test_an_unknown_compressor_is_refused_at_construction() -> None:
    with pytest.raises(ConfigurationError, match="compressor must be one of auto, isal, zlib"):
        Sitemaps(base_url=BASE, compressor="brotli")  # type: ignore[arg-type]


@pytest.mark.parametrize("compressor", COMPRESSORS)
@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_every_representation_holds_the_same_document(make_client, compressor: str, cache: bool) -> None:
    client = make_client(shop(compressor, cache))
    identity = client.get(PAGE).body
    assert len(locs(validate(identity))) == 3000
    for _ in range(2):  # cold, then from the cache (when there is one)
        encoded = client.get(PAGE, headers={"Accept-Encoding": "gzip"})
        assert encoded.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(encoded.body) == identity
        assert gzip.decompress(client.get(PAGE + ".gz").body) == identity
        assert client.get(PAGE).body == identity


@needs_isal
def test_validators_do_not_depend_on_the_compressor_but_the_gzip_bytes_do() -> None:
    answers = {}
    for compressor in ("zlib", "isal"):
        client = SitemapClient("wsgi", shop(compressor))
        client.get(PAGE)  # cold: stores the page
        answers[compressor] = (client.get(PAGE), client.get(PAGE, headers={"Accept-Encoding": "gzip"}))
    (zlib_plain, zlib_gz), (isal_plain, isal_gz) = answers["zlib"], answers["isal"]
    assert zlib_plain.headers["ETag"] == isal_plain.headers["ETag"]
    assert zlib_gz.headers["ETag"] == isal_gz.headers["ETag"] == zlib_plain.headers["ETag"][:-1] + '-gz"'
    assert zlib_plain.body == isal_plain.body
    assert zlib_gz.body != isal_gz.body
    assert gzip.decompress(zlib_gz.body) == gzip.decompress(isal_gz.body) == zlib_plain.body


# What one worker serves, run in a fresh interpreter: a worker of the same deployment.
WORKER = """
import hashlib, json, sys
from werkzeug.test import Client
from sitemap_middleware import Sitemaps

sitemaps = Sitemaps(base_url="https://shop.example", compressor=sys.argv[1])
sitemaps.add_provider("products", lambda: (f"/p/{n}?a=1&b={n % 7}" for n in range(3000)))
client = Client(sitemaps.wsgi(lambda environ, start_response: []))
answers = []
for headers in ({"Accept-Encoding": "gzip"}, {"Accept-Encoding": "gzip"}, {}, {}):  # cold, then cached
    response = client.get("/sitemap-products-1.xml", headers=headers)
    body = response.get_data()
    answers.append([response.headers.get("ETag"), len(body), hashlib.sha256(body).hexdigest()])
print(json.dumps({"compressor": sitemaps.compressor, "answers": answers}))
"""


def run_worker(compressor: str, seed: int) -> dict[str, object]:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, compressor],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env=env,
        check=True,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("compressor", ["auto", "zlib", pytest.param("isal", marks=needs_isal)])
def test_the_workers_of_one_deployment_serve_the_same_bytes_and_validators(compressor: str) -> None:
    first, second = run_worker(compressor, 1), run_worker(compressor, 2)
    assert first == second
    cold, cached = first["answers"][:2]  # type: ignore[index]
    assert cold[1:] == cached[1:]  # the streamed cold page is the very body the cache then serves
