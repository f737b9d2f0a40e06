"""The settings Django's faces read: ``SITEMAPS``, the dotted path to a `Sitemaps`.

    # settings.py
    SITEMAPS = "myproject.sitemaps.sitemaps"

Read once, by the middleware when Django builds its chain and by ``manage.py sitemaps``;
what it names is imported then (after ``django.setup()``: models may be imported there).
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from ..errors import ConfigurationError
from ..sitemaps import Sitemaps

__all__ = ["configured_sitemaps"]


def configured_sitemaps() -> Sitemaps:
    """The `Sitemaps` that ``settings.SITEMAPS`` names; `ConfigurationError` if it names none."""
    path = getattr(settings, "SITEMAPS", None)
    if isinstance(path, Sitemaps):
        return path
    if not isinstance(path, str) or "." not in path:
        raise ConfigurationError(
            "settings.SITEMAPS must be the dotted path to a Sitemaps "
            f'("myproject.sitemaps.sitemaps"), not {path!r}'
        )
    try:
        found = import_string(path)
    except ImportError as error:
        raise ConfigurationError(f"settings.SITEMAPS = {path!r}: {error}") from error
    if not isinstance(found, Sitemaps):
        raise ConfigurationError(f"settings.SITEMAPS = {path!r} is a {type(found).__name__}, not a Sitemaps")
    return found
