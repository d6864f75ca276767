"""Cursor pagination (django-ninja's): a page of rows ordered by a unique column and opaque
`next` / `previous` links, stable while rows are added. The page's rows are turned into their
JSON shapes together by the route's `out` function, which reads what they share in a fixed
number of queries (never one per row)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja.pagination import CursorPagination

from common.query import query_int

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


class RowsCursorPagination(CursorPagination):
    def __init__(self, *, out: Callable[[list[Any]], list[dict]], ordering=("id",), **kwargs):
        super().__init__(
            ordering=ordering, page_size=PAGE_SIZE, max_page_size=MAX_PAGE_SIZE, **kwargs
        )
        self.out = out

    def paginate_queryset(self, queryset: QuerySet, pagination, request: HttpRequest, **params):
        # A page size out of range is a 400 saying the range (django-ninja would clamp it).
        query_int(request.GET, "page_size", min_value=1, max_value=MAX_PAGE_SIZE)
        page = super().paginate_queryset(queryset, pagination, request, **params)
        return page | {"results": self.out(list(page["results"]))}
