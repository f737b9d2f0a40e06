"""``flask sitemaps validate|export|refresh`` through Flask's own ``CliRunner`` (in-process)."""

from __future__ import annotations

from pathlib import Path

from flask import Flask

from sitemap_middleware import Sitemaps

from ..xsd import locs, validate

BASE = "https://shop.example"


def make_app() -> Flask:
    app = Flask("commands")
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products", page_size=2)(lambda: [f"/p/{n}" for n in range(3)])
    sitemaps.init_app(app)
    return app


def test_refresh_renders_every_page_and_says_how_many():
    result = make_app().test_cli_runner().invoke(args=["sitemaps", "refresh"])
    assert result.exit_code == 0, result.output
    assert result.output == "refreshed 2 pages of products\n"


def test_refresh_of_an_unknown_section_exits_2():
    result = make_app().test_cli_runner().invoke(args=["sitemaps", "refresh", "nosuch"])
    assert result.exit_code == 2
    assert "no section named 'nosuch'" in result.output


def test_export_writes_the_files_the_middleware_serves(tmp_path: Path):
    app = make_app()
    result = app.test_cli_runner().invoke(args=["sitemaps", "export", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    served = app.test_client().get("/sitemap-products-2.xml").data
    assert (tmp_path / "sitemap-products-2.xml").read_bytes() == served
    assert locs(validate(served)) == [f"{BASE}/p/2"]


def test_validate_passes_its_options_to_the_command_line(tmp_path: Path):
    app = make_app()
    runner = app.test_cli_runner()
    assert runner.invoke(args=["sitemaps", "export", "--out", str(tmp_path)]).exit_code == 0
    index = str(tmp_path / "sitemap-index.xml")
    result = runner.invoke(args=["sitemaps", "validate", index, "--base-url", f"{BASE}/"])
    assert result.exit_code == 0, result.output
    assert "3 URLs: 0 problems" in result.output


def test_validate_of_a_broken_file_exits_1(tmp_path: Path):
    broken = tmp_path / "sitemap.xml"
    broken.write_text("<urlset><url></url></urlset>")
    result = make_app().test_cli_runner().invoke(args=["sitemaps", "validate", str(broken)])
    assert result.exit_code == 1, result.output
