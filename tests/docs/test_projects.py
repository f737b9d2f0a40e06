"""`tests.docs.projects`: a fragment pasted into a file as a reader pastes it, and a page's
project built from its file blocks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .projects import build, merge


def value(source: str, name: str) -> object:
    namespace: dict[str, object] = {"__file__": "merged.py"}
    exec(compile(source, "<merged>", "exec"), namespace)
    return namespace[name]


@pytest.mark.parametrize(
    ("original", "fragment", "name", "expected"),
    [
        pytest.param("A = ['a', 'b']\n", "A = [..., 'c']\n", "A", ["a", "b", "c"], id="ellipsis-first"),
        pytest.param("A = ['a', 'b']\n", "A = ['c', ...]\n", "A", ["c", "a", "b"], id="ellipsis-last"),
        pytest.param(
            "A = ['a', 'b', 'c']\n", "A = ['a', 'x', ...]\n", "A", ["a", "x", "b", "c"], id="no-repeat"
        ),
        pytest.param("A = 1\n", "A = 2\n", "A", 2, id="name-replaced"),
        pytest.param("A = 1\n", "B = A + 1\n", "B", 2, id="new-name-appended"),
        pytest.param(
            "def f():\n    return 1\n\n\nR = f()\n",
            "def f():\n    return 2\n",
            "R",
            2,
            id="function-in-place",
        ),
    ],
)
def test_a_fragment_takes_the_place_of_its_counterpart(
    original: str, fragment: str, name: str, expected: object
) -> None:
    assert value(merge(original, fragment), name) == expected


def test_a_call_on_the_same_first_argument_replaces_the_files_and_keeps_its_place() -> None:
    original = "calls = []\nadd = lambda name, **kw: calls.append((name, kw))\nadd('a', n=1)\nadd('b', n=1)\n"
    assert value(merge(original, "add('a', n=2)\nadd('c')\n"), "calls") == [
        ("a", {"n": 2}),
        ("b", {"n": 1}),
        ("c", {}),
    ]


def test_a_class_gets_the_fragments_fields_and_a_field_keeps_the_arguments_the_fragment_leaves_out() -> None:
    original = "class Product(Model):\n    slug = Field(unique=True)\n    updated_at = Field(auto_now=True)\n"
    merged = merge(
        original, "class Product(Model):\n    updated_at = Field(db_index=True)\n    price = Field()\n"
    )
    [product] = ast.parse(merged).body
    assert isinstance(product, ast.ClassDef)
    assert [ast.unparse(field) for field in product.body] == [
        "slug = Field(unique=True)",
        "updated_at = Field(auto_now=True, db_index=True)",
        "price = Field()",
    ]


def test_imports_go_after_the_files_imports() -> None:
    merged = merge("import os\nX = os.sep\n", "import sys\nY = sys.maxsize\n")
    assert merged.splitlines() == ["import os", "import sys", "X = os.sep", "Y = sys.maxsize"]


def test_an_ellipsis_for_what_is_no_list_is_refused() -> None:
    with pytest.raises(ValueError, match=r"stands for a list's entries"):
        merge("A = make()\n", "A = [..., 'c']\n")


@given(
    st.lists(st.sampled_from("abcdefgh"), unique=True),
    st.lists(st.sampled_from("abcdefgh"), unique=True),
    st.lists(st.sampled_from("abcdefgh"), unique=True),
)
def test_an_ellipsis_holds_every_entry_of_the_file_once_in_its_order(
    file: list[str], before: list[str], after: list[str]
) -> None:
    after = [entry for entry in after if entry not in before]
    fragment = "A = [" + ", ".join([*map(repr, before), "...", *map(repr, after)]) + "]\n"
    rest = [entry for entry in file if entry not in before and entry not in after]
    assert value(merge(f"A = {file!r}\n", fragment), "A") == [*before, *rest, *after]


def test_a_block_naming_no_file_of_the_project_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- run as: myproject/nosuch.py -->\n```python\nX = 1\n```\n")
    with pytest.raises(AssertionError, match=r"nosuch\.py is no file of the project"):
        build(page, tmp_path / "project")


def test_a_pages_blocks_are_written_into_the_skeleton_in_order(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- run in: myproject/settings.py -->\n```python\nINSTALLED_APPS = [..., 'extra']\n```\n\n"
        "<!-- run as: myproject/sitemaps.py -->\n```python\nsitemaps = 1\n```\n\n"
        "<!-- run in: myproject/sitemaps.py -->\n```python\nsitemaps = 2\n```\n"
    )
    files = build(page, tmp_path / "project")
    assert value((tmp_path / "project" / "myproject" / "sitemaps.py").read_text(), "sitemaps") == 2
    assert value(files["myproject/settings.py"], "INSTALLED_APPS") == [
        "django.contrib.contenttypes",
        "shop",
        "extra",
    ]
