"""What ``validate`` writes: each warning kind capped (``--max-warnings``) and the rest counted in
one line, errors all shown; ``--format json`` as JSON Lines for CI, with the same exit codes."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware.cli import main
from sitemap_middleware.cli.document import Problem
from sitemap_middleware.cli.report import KINDS, Reporter, TextFormat
from sitemap_middleware.cli.validate import Summary

from .test_cli import GOOD, SITE, index, url, urlset


def run(*argv: str) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    assert not err.getvalue(), err.getvalue()
    return code, out.getvalue().splitlines()


def same_urls_twice(folder: Path, count: int, extra: str = "") -> Path:
    """An index of two files listing the same ``count`` URLs (the second's are all duplicates)."""
    locs = [url(f"{SITE}/p/{n}") for n in range(count)]
    (folder / "sitemap-a-1.xml").write_text(urlset(*locs))
    (folder / "sitemap-b-1.xml").write_text(urlset(*locs, extra))
    path = folder / "sitemap-index.xml"
    path.write_text(index(f"{SITE}/sitemap-a-1.xml", f"{SITE}/sitemap-b-1.xml"))
    return path


def test_duplicates_past_the_cap_are_counted_in_one_line(tmp_path):
    path = same_urls_twice(tmp_path, 30)
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/", "--max-warnings", "5")
    assert code == 0, lines
    b = tmp_path / "sitemap-b-1.xml"
    assert lines == [
        *(
            f"{b}:{line}: warning: this loc is listed more than once (also earlier in the tree)"
            for line in range(3, 8)
        ),
        f"{path}:0: warning: ... and 25 more duplicate locs (30 in all; --max-warnings 5 shown)",
        "checked 3 files, 60 URLs: 0 problems, 30 warnings",
    ]


def test_two_sections_listing_the_same_urls_make_a_short_report(tmp_path):
    path = same_urls_twice(tmp_path, 5_000)
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 0
    assert len(lines) == 10 + 2, lines  # the default cap, the count of the rest, the summary
    assert lines[-2:] == [
        f"{path}:0: warning: ... and 4,990 more duplicate locs (5,000 in all; --max-warnings 10 shown)",
        "checked 3 files, 10,000 URLs: 0 problems, 5,000 warnings",
    ]


def test_errors_are_all_shown_whatever_the_warning_cap(tmp_path):
    path = tmp_path / "sitemap.xml"
    path.write_text(urlset(*(url(f"{SITE}/p/{n}", "<priority>2</priority>") for n in range(20))))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/", "--max-warnings", "0")
    assert code == 1
    assert [line.partition(": ")[0] for line in lines[:-1]] == [f"{path}:{n}" for n in range(3, 23)]


def test_max_warnings_zero_shows_only_the_count(tmp_path):
    path = same_urls_twice(tmp_path, 3)
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/", "--max-warnings", "0")
    assert code == 0
    assert lines == [
        f"{path}:0: warning: ... and 3 more duplicate locs (3 in all; --max-warnings 0 shown)",
        "checked 3 files, 6 URLs: 0 problems, 3 warnings",
    ]


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_max_warnings_takes_a_count(value, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["validate", "sitemap.xml", "--max-warnings", value])
    assert exited.value.code == 2
    assert "--max-warnings" in capsys.readouterr().err


# -- JSON Lines ---------------------------------------------------------------------------


def json_run(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    code, lines = run(*argv, "--format", "json")
    return code, [json.loads(line) for line in lines]


def test_json_writes_one_object_per_problem_then_the_summary(tmp_path):
    path = same_urls_twice(tmp_path, 2, extra=url(f"{SITE}/p/x", "<lastmod>2026-13-01</lastmod>"))
    code, objects = json_run("validate", str(path), "--base-url", f"{SITE}/")
    b = str(tmp_path / "sitemap-b-1.xml")
    duplicate = "this loc is listed more than once (also earlier in the tree)"
    assert code == 1
    assert objects == [
        {
            "type": "problem",
            "location": b,
            "line": 3,
            "level": "warning",
            "kind": "duplicate",
            "message": duplicate,
        },
        {
            "type": "problem",
            "location": b,
            "line": 4,
            "level": "warning",
            "kind": "duplicate",
            "message": duplicate,
        },
        {
            "type": "problem",
            "location": b,
            "line": 5,
            "level": "error",
            "kind": "lastmod",
            "message": "lastmod '2026-13-01' is not a W3C Datetime",
        },
        {"type": "summary", "files": 3, "urls": 5, "errors": 1, "warnings": 2, "exit": 1},
    ]


def test_json_counts_what_the_cap_leaves_out(tmp_path):
    path = same_urls_twice(tmp_path, 4)
    code, objects = json_run("validate", str(path), "--base-url", f"{SITE}/", "--max-warnings", "1")
    assert code == 0
    assert [o["type"] for o in objects] == ["problem", "omitted", "summary"]
    assert objects[1] == {
        "type": "omitted",
        "location": str(path),
        "line": 0,
        "level": "warning",
        "kind": "duplicate",
        "count": 3,
        "message": "... and 3 more duplicate locs (4 in all; --max-warnings 1 shown)",
    }
    assert objects[2] == {"type": "summary", "files": 3, "urls": 8, "errors": 0, "warnings": 4, "exit": 0}


def test_json_of_a_clean_tree_is_its_summary_alone(tmp_path):
    path = tmp_path / "sitemap.xml"
    path.write_text(urlset(GOOD))
    code, objects = json_run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 0
    assert objects == [{"type": "summary", "files": 1, "urls": 1, "errors": 0, "warnings": 0, "exit": 0}]


def test_json_of_a_target_that_cannot_be_read_exits_2(tmp_path):
    missing = str(tmp_path / "nothing.xml")
    code, objects = json_run("validate", missing)
    assert code == 2
    [problem, summary] = objects
    assert (problem["location"], problem["line"], problem["level"], problem["kind"]) == (
        missing,
        0,
        "error",
        "fetch",
    )
    assert summary == {"type": "summary", "files": 0, "urls": 0, "errors": 1, "warnings": 0, "exit": 2}


BROKEN = [
    pytest.param(urlset(GOOD, url(f"{SITE}/a?x=1&y=2")), "xml", id="xml"),
    pytest.param(urlset(GOOD, url("/p/2")), "loc", id="loc"),
    pytest.param(urlset(GOOD, url(f"{SITE}/" + "a" * 2050)), "loc", id="loc-length"),
    pytest.param(urlset(GOOD, url("https://other.example/p")), "host", id="host"),
    pytest.param(urlset(GOOD, url(f"{SITE}/p", "<lastmod>2999-01-01</lastmod>")), "lastmod", id="lastmod"),
    pytest.param(urlset(GOOD, url(f"{SITE}/p", "<priority>1.5</priority>")), "priority", id="priority"),
    pytest.param(urlset(GOOD, url(f"{SITE}/p", "<changefreq>x</changefreq>")), "changefreq", id="changefreq"),
    pytest.param(urlset(GOOD, "<url><lastmod>2026-01-01</lastmod></url>"), "element", id="no-loc"),
    pytest.param(
        urlset(GOOD, url(f"{SITE}/&x;")).replace("\n", '\n<!DOCTYPE urlset [<!ENTITY x "a">]>\n', 1),
        "entity",
        id="entity",
    ),
    pytest.param(urlset(), "count", id="empty-urlset"),
    pytest.param('<?xml version="1.0"?>\n<urlset xmlns="http://www.google.com/x"/>', "root", id="root"),
    pytest.param(index(f"{SITE}/sitemap-gone.xml"), "fetch", id="child-gone"),
    pytest.param("", "xml", id="empty-file"),
]


@pytest.mark.parametrize(("document", "kind"), BROKEN)
def test_each_problem_has_its_kind(tmp_path, document, kind):
    path = tmp_path / "sitemap.xml"
    path.write_text(document)
    code, objects = json_run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 1
    assert {o["kind"] for o in objects if o["type"] == "problem"} == {kind}, objects


# -- the cap, for any run ------------------------------------------------------------------

problems = st.lists(
    st.tuples(st.sampled_from(["duplicate", "robots", "lastmod"]), st.booleans()), max_size=40
)


@settings(max_examples=200)
@given(problems, st.integers(0, 10))
def test_each_warning_kind_is_capped_alone_and_errors_never(found, cap):
    out = io.StringIO()
    reporter = Reporter(TextFormat(out), target="t", max_warnings=cap)
    for n, (kind, warning) in enumerate(found):
        reporter(Problem("f", n, f"{kind} {n}", warning, kind))
    reporter.finish(Summary(), 0)
    lines = out.getvalue().splitlines()
    warnings = Counter(kind for kind, warning in found if warning)
    shown = Counter(line.split()[2] for line in lines if line.startswith("f:") and "warning: " in line)
    assert shown == Counter({kind: min(count, cap) for kind, count in warnings.items() if min(count, cap)})
    assert sum(1 for line in lines if line.startswith("f:") and "warning: " not in line) == sum(
        1 for _, warning in found if not warning
    )
    counted = [line for line in lines if line.startswith("t:0: warning: ... and ")]
    assert len(counted) == sum(1 for count in warnings.values() if count > cap)


def test_the_docs_name_every_kind():
    readme = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    kinds = readme.split("`kind` is one word a CI rule can match:", 1)[1].split("\n- ", 1)[0]
    assert set(re.findall(r"`([a-z-]+)`", kinds)) == {kind for kind, _ in KINDS} | {"other"}
