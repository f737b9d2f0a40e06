"""Tests of `sitemap_middleware.flask`: the extension and its ``flask sitemaps`` commands."""
