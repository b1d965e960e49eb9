"""Limit/offset pages with a bounded count.

An exact ``count(*)`` of a broad filter over a million apps costs more than the page itself, so the count stops at
``COUNT_CAP``: ``count`` is exact when ``count_exact`` is true and a lower bound otherwise. ``next`` is given
whenever a further row exists, whatever the count says, so a client can walk any result to its end.

On a database of a million apps (benchmarks/bench_web.py) a capped count reads at most ``COUNT_CAP`` index
entries or rows, a few milliseconds, where an exact ``count(*)`` of a broad filter takes 100-400 ms; a planner
estimate would be cheaper still but is no lower bound (it may exceed the true count). A page that is not full is
the last one, so its count is exact and needs no query at all. An empty page past the end (any offset) is counted
(capped as above): the count never exceeds the real one, whatever offset a client sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

COUNT_CAP: Final = 1_000  # as GitHub search: past a thousand matches, narrow the filters


class CappedLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500

    def _non_negative(self, request: Request, name: str, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return default
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
            raise ValidationError({name: f"{name} must be a whole number, 0 or more."})
        return int(raw)

    def get_limit(self, request: Request) -> int:
        limit = self._non_negative(request, self.limit_query_param, self.default_limit)
        if limit < 1 or limit > self.max_limit:
            raise ValidationError({self.limit_query_param: f"limit must be between 1 and {self.max_limit}."})
        return limit

    def get_offset(self, request: Request) -> int:
        return self._non_negative(request, self.offset_query_param, 0)

    def paginate_queryset(
        self, queryset: QuerySet[Any] | Sequence[Any], request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        self.request = request
        self.limit = self.get_limit(request)
        if self.limit is None:
            return None
        self.offset = self.get_offset(request)
        # One row past the page tells whether there is a next page without counting.
        rows = list(queryset[self.offset : self.offset + self.limit + 1])
        self.has_next = len(rows) > self.limit
        rows = rows[: self.limit]
        if not self.has_next and (rows or self.offset == 0):
            # The last page: its rows end the result, so the count is known without a query (most narrow
            # filters, a user's or a flow's apps, fit one page).
            self.count_exact = True
            self.count = self.offset + len(rows)
            return rows
        if rows and self.offset >= COUNT_CAP:
            capped = COUNT_CAP  # rows past the cap exist: offset + rows is the lower bound, no count needed
        elif isinstance(queryset, QuerySet):
            capped = queryset.order_by()[:COUNT_CAP].count()
        else:
            capped = len(queryset[:COUNT_CAP])
        self.count_exact = capped < COUNT_CAP
        # An offset past the end proves nothing about the count: only rows found on the page raise it.
        self.count = max(capped, self.offset + len(rows)) if rows else capped
        return rows

    def get_next_link(self) -> str | None:
        if not self.has_next or self.limit is None or self.offset is None or self.request is None:
            return None
        url = self.request.build_absolute_uri()
        url = replace_query_param(url, self.limit_query_param, self.limit)
        return replace_query_param(url, self.offset_query_param, self.offset + self.limit)

    def get_paginated_response(self, data: Any) -> Response:
        return Response(
            {
                "count": self.count,
                "count_exact": self.count_exact,
                "limit": self.limit,
                "offset": self.offset,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["count", "count_exact", "limit", "offset", "next", "previous", "results"],
            "properties": {
                "count": {"type": "integer", "description": f"Matching apps, counted up to {COUNT_CAP}."},
                "count_exact": {"type": "boolean", "description": "False when count is a lower bound."},
                "limit": {"type": "integer"},
                "offset": {"type": "integer"},
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "previous": {"type": "string", "nullable": True, "format": "uri"},
                "results": schema,
            },
        }
