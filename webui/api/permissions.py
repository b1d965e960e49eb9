"""Who may read the API: everyone (HINDSIGHT_API_AUTH=open, like the History Server) or signed-in users (token)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class ApiReadAccess(BasePermission):
    """Read after ``settings.HINDSIGHT_API_AUTH``, checked at each request so the setting can change in tests."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if settings.HINDSIGHT_API_AUTH == "open":
            return True
        return bool(request.user and request.user.is_authenticated)
