"""One error body for every API failure: ``{"error": {"code": ..., "message": ..., "field": ...}}``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ErrorDetailSerializer(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="Machine-readable: invalid, not_found, not_analyzed, throttled, ...")
    message = serializers.CharField()
    field = serializers.CharField(allow_null=True, help_text="The query parameter at fault, when there is one.")


class ErrorSerializer(serializers.Serializer[Any]):
    error = ErrorDetailSerializer()


BAD_REQUEST = OpenApiResponse(ErrorSerializer, description="A query parameter is invalid.")
NOT_FOUND = OpenApiResponse(ErrorSerializer, description="Nothing matches.")
# Every endpoint may answer these: sign-in required (HINDSIGHT_API_AUTH=token) and too many requests.
COMMON = {
    401: OpenApiResponse(ErrorSerializer, description="Credentials required (HINDSIGHT_API_AUTH=token)."),
    403: OpenApiResponse(ErrorSerializer, description="Credentials refused."),
    429: OpenApiResponse(ErrorSerializer, description="Throttled: too many requests."),
}
TRUE_VALUES = frozenset({"1", "true", "yes", "on"})


def query_flag(value: str | None) -> bool:
    """A yes/no query parameter: 1, true, yes or on (any case) is yes; anything else, or none, is no."""
    return (value or "").strip().lower() in TRUE_VALUES


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}


def _first_message(detail: Any) -> tuple[str | None, str]:
    """The first (field, message) of a DRF error detail (a dict of lists, a list or a string)."""
    if isinstance(detail, dict):
        for name, value in detail.items():
            field = None if name in ("non_field_errors", "__all__") else str(name)
            return field, _first_message(value)[1]
        return None, "Invalid request."
    if isinstance(detail, list):
        return (None, _first_message(detail[0])[1]) if detail else (None, "Invalid request.")
    return None, str(detail)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = exception_handler(exc, context)
    # DRF answers Django's Http404 (an unknown ?format= among others) and PermissionDenied as its own NotFound and
    # PermissionDenied; give them the same body as those.
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    field, message = _first_message(exc.detail)
    code = "invalid" if isinstance(exc, exceptions.ValidationError) else str(exc.default_code)
    response.data = error_body(code, message, field)
    return response
