"""Site-wide access and response headers: sign-in in token mode, and the Content-Security-Policy on every response.

Token mode (``HINDSIGHT_API_AUTH=token``) closes the whole site, not only the API: a report page shows the same Spark
configuration the API does (issue 15, F1). Every view needs a signed-in user unless it is marked
``login_not_required`` (the sign-in page, /healthz, /metrics with its own scrape token). The REST API's views are
DRF views, which mark themselves so and answer 401/403 by their own permission (webui.api.permissions).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from webui.api.errors import error_body


def site_is_open() -> bool:
    """Whether anonymous visitors may read (``HINDSIGHT_API_AUTH=open``); read at each request, as the API does."""
    return bool(settings.HINDSIGHT_API_AUTH == "open")


class SiteLoginRequiredMiddleware(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware, active only in token mode: anonymous page requests go to the sign-in page."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if site_is_open():
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

    # The stubs say the base only redirects; an API path answers JSON instead.
    def handle_no_permission(  # type: ignore[override]
        self, request: HttpRequest, view_func: Callable[..., Any]
    ) -> HttpResponse:
        # An API client (any path under /api/v1/ that is not a DRF view, e.g. its 404) gets the API's 401, not HTML.
        if request.path.startswith("/api/v1/"):
            body = error_body("not_authenticated", "Authentication credentials were not provided.")
            return JsonResponse(body, status=401)
        response: HttpResponse = super().handle_no_permission(request, view_func)
        return response


def page_login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A DRF view served as a page (Swagger UI) redirects anonymous visitors to sign in instead of answering 401.

    DRF's ``as_view`` marks its views ``login_required = False`` (they authenticate themselves); this wrapper is
    marked required, so SiteLoginRequiredMiddleware redirects before DRF is reached.
    """

    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return view(request, *args, **kwargs)

    wrapped.csrf_exempt = getattr(view, "csrf_exempt", False)  # type: ignore[attr-defined]
    wrapped.login_required = True  # type: ignore[attr-defined]
    return wrapped


def bearer_token_matches(request: HttpRequest, expected: str) -> bool:
    """Whether ``Authorization: Bearer <token>`` carries ``expected``, compared in constant time."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if not expected or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())


def client_address(request: HttpRequest) -> str | None:
    """The address sign-in attempts are counted against (django-axes' AXES_CLIENT_IP_CALLABLE).

    REMOTE_ADDR, or with ``HINDSIGHT_LOGIN_CLIENT_IP_HEADER`` the last entry of that header: the one the proxy in
    front appended (nginx's ``$proxy_add_x_forwarded_for``); entries before it come from the client and could be
    anything.
    """
    header = settings.HINDSIGHT_LOGIN_CLIENT_IP_HEADER
    if header:
        entries = [e.strip() for e in request.headers.get(header, "").split(",") if e.strip()]
        if entries:
            return entries[-1][:100]
    address: str | None = request.META.get("REMOTE_ADDR")
    return address


class SecurityHeadersMiddleware:
    """Adds ``settings.HINDSIGHT_CONTENT_SECURITY_POLICY`` to every response that has none (Django 5.2 has no CSP).

    The pages load only the site's own scripts and styles: no inline script, no on* attribute, no CDN, so the policy
    can say ``script-src 'self'`` and an injected script would not run even if escaping ever failed.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = settings.HINDSIGHT_CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response
