"""Django ``Sitemap`` classes as Django sites write them, one per shape `from_sitemap` meets.

`SITEMAPS` is what Django's own views (`tests.djangosite.urls`) serve; the tests serve the
same classes with `from_sitemap` and compare.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.sitemaps import GenericSitemap, Sitemap
from django.urls import reverse

from .models import Article, Product


class ProductSitemap(Sitemap):  # keyset on pk; lastmod a method, changefreq an attribute
    limit = 4
    changefreq = "daily"

    def items(self) -> Any:
        return Product.objects.filter(published=True).order_by("pk")

    def lastmod(self, item: Product) -> datetime:
        return item.updated_at

    def priority(self, item: Product) -> float:
        return 0.8 if item.pk % 2 else 0.4


class BySlugSitemap(ProductSitemap):  # keyset on a unique string, in descending order
    limit = 3

    def items(self) -> Any:
        return Product.objects.order_by("-slug")


class RecentSitemap(ProductSitemap):  # ordered by a key that is not unique: iterated
    def items(self) -> Any:
        return Product.objects.order_by("-updated_at", "slug")


class StaticSitemap(Sitemap):  # a list of URL names; no lastmod
    priority = 0.5

    def items(self) -> list[str]:
        return ["about", "contact"]

    def location(self, item: str) -> str:
        return reverse(item)


class ArticleSitemap(Sitemap):  # i18n over a UUID pk, with hreflang alternates
    limit = 5
    i18n = True
    languages = ("en", "fr")
    alternates = True
    x_default = True

    def items(self) -> Any:
        return Article.objects.order_by("pk")

    def lastmod(self, item: Article) -> Any:
        return item.updated


class ChosenLanguagesSitemap(ArticleSitemap):  # languages chosen per item: iterated
    def get_languages_for_item(self, item: Article) -> list[str]:
        return ["en", "de"] if item.slug.endswith("1") else ["en"]


SITEMAPS: dict[str, Any] = {
    "products": ProductSitemap,
    "by-slug": BySlugSitemap,
    "recent": RecentSitemap,
    "static": StaticSitemap,
    "articles": ArticleSitemap,
    "chosen": ChosenLanguagesSitemap,
    "generic": GenericSitemap(
        {"queryset": Product.objects.order_by("pk"), "date_field": "updated_at"}, priority=0.6
    ),
}
