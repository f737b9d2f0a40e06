"""Models with the key and lastmod shapes a keyset meets: an int pk, a UUID pk, a unique
string, a unique key that may be NULL, a datetime lastmod and a date one, and a lastmod
that may be NULL, with and without an index on it; and a relation whose join repeats a key."""

from __future__ import annotations

import uuid

from django.db import models
from django.urls import reverse


class Product(models.Model):
    slug = models.SlugField(unique=True)
    sku = models.CharField(max_length=20, unique=True, null=True)  # a unique key that may be NULL
    updated_at = models.DateTimeField()
    published = models.BooleanField(default=True)

    def get_absolute_url(self) -> str:
        return reverse("product", args=[self.slug])


class Article(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    slug = models.SlugField(unique=True)
    updated = models.DateField()

    def get_absolute_url(self) -> str:
        return reverse("article", args=[self.slug])  # inside i18n_patterns: /<language>/a/<slug>/


class Stamped(models.Model):
    """An int key and a lastmod that may be NULL, not indexed: each page's newest is its MAX."""

    updated_at = models.DateTimeField(null=True)
    published = models.BooleanField(default=True)

    def get_absolute_url(self) -> str:
        return f"/s/{self.pk}/"


class IndexedStamped(models.Model):
    """The same, with the index on its lastmod a site adds (``Meta.indexes``): read newest first."""

    updated_at = models.DateTimeField(null=True)
    published = models.BooleanField(default=True)

    class Meta:
        indexes = (models.Index(fields=["-updated_at"], name="indexed_stamped_newest"),)

    def get_absolute_url(self) -> str:
        return f"/s/{self.pk}/"


class Review(models.Model):
    """A product's review: a QuerySet joined through it (``filter(review__stars=5)``, without
    ``distinct()``) repeats each product once per review."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    stars = models.SmallIntegerField(default=5)
