"""API throttles whose rates come from settings at request time (HINDSIGHT_API_THROTTLE_ANON/_USER)."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class ApiAnonThrottle(AnonRateThrottle):
    def get_rate(self) -> str | None:
        return settings.HINDSIGHT_API_THROTTLE_ANON or None


class ApiUserThrottle(UserRateThrottle):
    def get_rate(self) -> str | None:
        return settings.HINDSIGHT_API_THROTTLE_USER or None
