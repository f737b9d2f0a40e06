"""``module:attr``: the object a command works on, found as uvicorn, gunicorn and flask find an app.

The installed ``sitemap-middleware`` script starts with its own folder on ``sys.path``, not the
current one (``python -m`` puts the current one first), so ``app:sitemaps`` in the app's own
folder would not be found. The folder to look in is put first on ``sys.path``: the current
folder, or ``--app-dir``::

    sitemaps = load("shop.sitemaps:sitemaps", app_dir=Path("src"))
    sitemaps = load("app:site.sitemaps")  # the attribute may be a dotted path

`LoadError` says, in one line, what could not be found (and, for the module itself, where it
was looked for); any other exception the module raises while it is imported is the app's own,
and propagates with its traceback.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

__all__ = ["LoadError", "load"]


class LoadError(Exception):
    """``module:attr`` names nothing (the reason is the message)."""


def load(spec: str, *, app_dir: Path | None = None, default: str = "sitemaps") -> object:
    """The object ``spec`` (``module:attr``, or ``module`` for its ``default``) names, the module
    imported from ``app_dir`` (the current folder by default) before the rest of ``sys.path``."""
    module_name, _, attribute = spec.partition(":")
    folder = str((app_dir or Path.cwd()).resolve())
    # uvicorn's --app-dir and gunicorn's --chdir do the same: the app's folder comes first.
    if folder not in sys.path:
        sys.path.insert(0, folder)
    if not module_name:
        raise LoadError(f"cannot load {spec}: no module named (MODULE:ATTR, e.g. app:sitemaps)")
    try:
        found: object = importlib.import_module(module_name)
    except ImportError as error:
        missing = isinstance(error, ModuleNotFoundError) and _is_part_of(error.name, module_name)
        where = f" (looked in {folder})" if missing else ""  # else a module the app imports
        raise LoadError(f"cannot load {spec}: {error}{where}") from None
    for name in (attribute or default).split("."):
        try:
            found = getattr(found, name)
        except AttributeError as error:
            raise LoadError(f"cannot load {spec}: {error}") from None
    return found


def _is_part_of(missing: str | None, module_name: str) -> bool:
    """Is the missing module ``module_name`` or one of the packages that hold it?"""
    return missing is not None and (module_name == missing or module_name.startswith(missing + "."))
