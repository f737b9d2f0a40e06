"""The throwaway project a page's file blocks go into (`tests.docs.blocks`), and how a fragment
is pasted into one of its files.

`SKELETON` is the project a reader already has before following a page: a Django project
``myproject`` as ``startproject`` lays it out (trimmed to what a sitemap touches), its app
``shop`` (the models, views and ``BlogSitemap`` of `tests.django.test_project`), a
``myproject/sitemaps.py`` with one section and nothing else, and ``catalogue.py``, an app on
SQLAlchemy's ORM. `build` writes it to a folder, then each of the page's file blocks in order:
``run as`` replaces a file, ``run in`` merges into it (`merge`).

    build(REPO / "docs/django.md", tmp_path)  # tmp_path/manage.py, tmp_path/myproject/...
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from ..django.test_middleware_project import NATIVE
from ..django.test_project import PROJECT
from .blocks import file_blocks

SKELETON = {
    name: PROJECT[name]
    for name in (
        "manage.py",
        "myproject/__init__.py",
        "myproject/urls.py",
        "shop/__init__.py",
        "shop/models.py",
        "shop/sitemaps.py",
        "shop/views.py",
    )
} | {
    "myproject/wsgi.py": NATIVE["myproject/wsgi.py"],  # Django's own, as startproject writes them
    "myproject/asgi.py": NATIVE["myproject/asgi.py"],
    "myproject/settings.py": """
        from pathlib import Path

        BASE_DIR = Path(__file__).resolve().parent.parent
        SECRET_KEY = "test-only"
        DEBUG = False
        ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1", "shop.example"]
        INSTALLED_APPS = ["django.contrib.contenttypes", "shop"]
        MIDDLEWARE = [
            "django.middleware.security.SecurityMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.middleware.clickjacking.XFrameOptionsMiddleware",
        ]
        ROOT_URLCONF = "myproject.urls"
        WSGI_APPLICATION = "myproject.wsgi.application"
        DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}
        DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
        USE_TZ = True
    """,
    # One section, no version and no hook: what a page's blocks add is all there is.
    "myproject/sitemaps.py": """
        from sitemap_middleware import Sitemaps
        from sitemap_middleware.django import keyset
        from shop.models import Product

        sitemaps = Sitemaps(base_url="https://shop.example")
        sitemaps.add_provider("products", keyset(Product.objects.filter(published=True)))
    """,
    "catalogue.py": '''
        """A shop on SQLAlchemy's ORM, its products in SQLite beside this file."""

        from pathlib import Path

        from sqlalchemy import create_engine, select
        from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

        from sitemap_middleware import Sitemaps, Url
        from sitemap_middleware.sqlalchemy import keyset

        engine = create_engine(f"sqlite:///{Path(__file__).with_name('catalogue.sqlite3')}")


        class Base(DeclarativeBase):
            pass


        class Product(Base):
            __tablename__ = "product"
            id: Mapped[int] = mapped_column(primary_key=True)
            slug: Mapped[str] = mapped_column(unique=True)


        Base.metadata.create_all(engine)
        sitemaps = Sitemaps(base_url="https://shop.example")
        sitemaps.add_provider(
            "products",
            keyset(
                engine, select(Product.id, Product.slug), key=Product.id, entry=lambda p: Url(f"/p/{p.slug}")
            ),
        )
    ''',
}


def build(page: Path, home: Path) -> dict[str, str]:
    """The skeleton and ``page``'s file blocks, written to ``home``; returns every file's text."""
    files = {name: textwrap.dedent(text).lstrip() for name, text in SKELETON.items()}
    for block in file_blocks(page):
        assert block.file in files, f"{block.where}: {block.file} is no file of the project"
        files[block.file] = merge(files[block.file], block.code) if block.merged else block.code
    for name, text in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    return files


def merge(original: str, fragment: str) -> str:
    """``original`` with ``fragment`` pasted in, as a reader pastes a fragment into their file.

    A statement of the fragment that has a counterpart in the file (the same name assigned,
    the same class or function, a call of the same function on the same first argument,
    ``sitemaps.add_provider("products", ...)``) takes its place; ``...`` in a list stands for
    the file's own entries that the fragment does not name; a class's fields are merged field
    by field, a field called the same way keeping the file's arguments the fragment does not
    give. Imports go after the file's imports, anything else at its end.
    """
    body = ast.parse(original).body
    for statement in ast.parse(fragment).body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            imports = [i for i, s in enumerate(body) if isinstance(s, ast.Import | ast.ImportFrom)]
            body.insert(imports[-1] + 1 if imports else 0, statement)
            continue
        index = _counterpart(body, statement)
        if index is None:
            body.append(statement)
        else:
            body[index] = _merged(body[index], statement)
    return ast.unparse(ast.Module(body, type_ignores=[])) + "\n"


def _key(statement: ast.stmt) -> tuple[str, ...] | None:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        return ("name", target.id) if isinstance(target, ast.Name) else None
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return ("name", statement.target.id)
    if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return ("name", statement.name)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and statement.value.args:
        return ("call", ast.dump(statement.value.func), ast.dump(statement.value.args[0]))
    return None


def _counterpart(body: list[ast.stmt], statement: ast.stmt) -> int | None:
    key = _key(statement)
    matches = [index for index, other in enumerate(body) if key is not None and _key(other) == key]
    return matches[-1] if matches else None


def _merged(old: ast.stmt, new: ast.stmt) -> ast.stmt:
    if isinstance(old, ast.ClassDef) and isinstance(new, ast.ClassDef):
        fields = list(old.body)
        for statement in new.body:
            index = _counterpart(fields, statement)
            if index is None:
                fields.append(statement)
            else:
                fields[index] = _merged_field(fields[index], statement)
        new.body = fields
        return new
    if isinstance(old, ast.Assign) and isinstance(new, ast.Assign):
        new.value = _entries(old.value, new.value)
    return new


def _merged_field(old: ast.stmt, new: ast.stmt) -> ast.stmt:
    """``updated_at = DateTimeField(db_index=True)`` on ``DateTimeField(auto_now=True)``: both."""
    if (
        isinstance(old, ast.Assign)
        and isinstance(new, ast.Assign)
        and isinstance(old.value, ast.Call)
        and isinstance(new.value, ast.Call)
        and ast.dump(old.value.func) == ast.dump(new.value.func)
    ):
        given = {keyword.arg for keyword in new.value.keywords}
        kept = [keyword for keyword in old.value.keywords if keyword.arg not in given]
        new.value.args = new.value.args or old.value.args
        new.value.keywords = kept + new.value.keywords
    return new


def _entries(old: ast.expr, new: ast.expr) -> ast.expr:
    """``[..., "x"]`` with ``...`` replaced by the old list's entries other than ``"x"``."""
    if not isinstance(new, ast.List | ast.Tuple):
        return new
    holes = [i for i, e in enumerate(new.elts) if isinstance(e, ast.Constant) and e.value is Ellipsis]
    if not holes:
        return new
    if not isinstance(old, ast.List | ast.Tuple):
        raise ValueError(f"... in {ast.unparse(new)} stands for a list's entries, not {ast.unparse(old)}'s")
    named = {ast.dump(element) for element in new.elts}
    rest = [element for element in old.elts if ast.dump(element) not in named]
    new.elts[holes[0] : holes[0] + 1] = rest
    return new
