"""The Django app: ``"sitemap_middleware.django"`` in ``INSTALLED_APPS`` adds ``manage.py sitemaps``."""

from __future__ import annotations

from django.apps import AppConfig

__all__ = ["SitemapsConfig"]


class SitemapsConfig(AppConfig):
    """No models; its management command is ``sitemaps`` (`management.commands.sitemaps`)."""

    name = "sitemap_middleware.django"
    label = "sitemap_middleware"  # Django's default, the last part ("django"), would read as Django's own
    verbose_name = "Sitemaps"
