"""Models with the key and lastmod shapes a keyset meets: an int pk, a UUID pk, a unique
string, a unique key that may be NULL, a datetime lastmod and a date one."""

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
