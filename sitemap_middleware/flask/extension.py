"""The name the `Sitemaps` of a Flask app is kept under: ``app.extensions["sitemaps"]``."""

from __future__ import annotations

__all__ = ["EXTENSION"]

EXTENSION = "sitemaps"
