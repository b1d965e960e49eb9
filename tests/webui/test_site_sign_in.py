"""Token mode closes the whole site (issue 15, F1): every URL pattern, found by walking the resolver, not a list.

Anonymous visitors get a redirect to a sign-in page (pages) or 401/403 (the API, the schema, /metrics); the sign-in
page, /healthz and static files stay open. Signed in, the same URLs answer as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve

pytestmark = pytest.mark.django_db

# Open in token mode by design: signing in and out, and the load balancer's health probe.
OPEN = {"login", "healthz", "admin:login"}
# Answered by DRF or a token check, so a refusal is a status rather than a redirect.
STATUS_REFUSED = ("api/v1/", "api/schema/", "metrics")

_SAMPLES = {"int": "1", "str": "x", "slug": "x", "path": "x/y", "uuid": "00000000-0000-0000-0000-000000000001"}


@dataclass(frozen=True)
class Url:
    path: str
    name: str
    callback: Any


def _route_sample(route: str) -> str:
    return re.sub(r"<(?:(\w+):)?\w+>", lambda m: _SAMPLES[m.group(1) or "str"], route)


def _regex_sample(regex: str) -> str:
    """A path the admin's few regex patterns match: a named group becomes its first alternative or "x"."""

    def group(match: re.Match[str]) -> str:
        body = match.group(1)
        if re.fullmatch(r"[\w|]+", body):
            return body.split("|")[0]
        return "1" if body.startswith(r"\d") else "x"

    sample = re.sub(r"\(\?P<\w+>((?:[^()]|\([^()]*\))*)\)", group, regex)
    return sample.replace("^", "").replace("$", "").replace("\\", "")


def _walk(patterns: list[Any], prefix: str = "", namespace: str = "") -> Iterator[Url]:
    for pattern in patterns:
        raw = str(pattern.pattern)
        part = _regex_sample(raw) if raw.startswith("^") or "(?P<" in raw else _route_sample(raw)
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _walk(pattern.url_patterns, prefix + part, inner)
        elif isinstance(pattern, URLPattern):
            yield Url("/" + prefix + part, f"{namespace}{pattern.name}", pattern.callback)


def project_urls() -> list[Url]:
    urls = list(_walk(get_resolver().url_patterns))
    for url in urls:  # the sample path must reach the pattern it stands for, or the test proves nothing
        assert resolve(url.path).func == url.callback, url
    return urls


def _is_login_redirect(response: Any) -> bool:
    if response.status_code != 302:
        return False
    location = urlsplit(response["Location"])
    return location.path in ("/login/", "/admin/login/") and "next" in parse_qs(location.query)


def test_the_walk_covers_every_kind_of_url() -> None:
    names = {url.name for url in project_urls()}
    assert {"webui:dashboard", "webui:app_report", "webui:hosts", "schema", "api_docs", "metrics"} <= names
    assert any(name.startswith("api:") or "apps" in name for name in names)
    assert any(name.startswith("admin:") for name in names)


@override_settings(HINDSIGHT_API_AUTH="token")
@pytest.mark.parametrize("url", project_urls(), ids=lambda url: f"{url.name} {url.path}")
def test_in_token_mode_an_anonymous_visitor_reaches_no_page_api_schema_or_metrics(url: Url) -> None:
    """F1: with HINDSIGHT_API_AUTH=token every page answered anonymous visitors; now only sign-in and healthz do."""
    response = Client().get(url.path)
    if url.name in OPEN:
        assert response.status_code < 500, response
        assert not _is_login_redirect(response), response
    elif url.path.lstrip("/").startswith(STATUS_REFUSED):
        assert response.status_code in (401, 403), (url, response.status_code)
    else:
        assert _is_login_redirect(response), (url, response.status_code, response.get("Location"))


@override_settings(HINDSIGHT_API_AUTH="token")
@pytest.mark.parametrize("url", project_urls(), ids=lambda url: f"{url.name} {url.path}")
def test_in_token_mode_a_signed_in_user_still_gets_every_page(url: Url) -> None:
    """A guard for the F1 fix (passes on main too): closing the site must not close it to its users.

    A superuser, so that the admin's pages count too.
    """
    client = Client()
    client.force_login(User.objects.create_superuser("ana", password="pw-123456"))
    response = client.get(url.path)
    # The admin refuses adding or deleting read-only records (403) to everyone: that is not about signing in.
    refused = (401,) if url.name.startswith("admin:") else (401, 403)
    assert response.status_code not in refused, (url, response.status_code)
    assert not _is_login_redirect(response), url
    assert response.status_code < 500


@override_settings(HINDSIGHT_API_AUTH="token")
def test_signing_in_returns_to_the_page_asked_for_and_never_to_another_site() -> None:
    """F1: the login page sends the user back where they were going, only on this site."""
    User.objects.create_user("ana", password="pw-123456")
    asked = Client().get("/apps/?q=etl")
    assert asked.status_code == 302
    assert asked["Location"] == "/login/?next=/apps/%3Fq%3Detl"
    page = Client().get(asked["Location"])
    assert page.status_code == 200
    assert b'name="password"' in page.content
    client = Client()
    signed_in = client.post("/login/", {"username": "ana", "password": "pw-123456", "next": "/apps/?q=etl"})
    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/apps/?q=etl"
    assert b"Signed in as <strong>ana</strong>" in client.get("/apps/").content
    elsewhere = Client().post("/login/", {"username": "ana", "password": "pw-123456", "next": "https://evil.test/"})
    assert elsewhere.status_code == 302
    assert elsewhere["Location"] == "/"


@override_settings(HINDSIGHT_API_AUTH="token")
def test_signing_out_is_a_post_and_closes_the_site_again() -> None:
    client = Client()
    client.force_login(User.objects.create_user("ana"))
    assert client.get("/logout/").status_code == 405  # a link or an image on another page cannot sign anyone out
    assert client.post("/logout/").status_code == 302
    assert _is_login_redirect(client.get("/apps/"))


@override_settings(HINDSIGHT_API_AUTH="token", HINDSIGHT_METRICS_TOKEN="scrape-me-9f3")
def test_metrics_take_the_scrape_token_or_a_staff_session_in_token_mode() -> None:
    """F1: /metrics answered anyone; in token mode it needs the Bearer scrape token or a staff user."""
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Token scrape-me-9f3").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-me-9f3").status_code == 200
    member = Client()
    member.force_login(User.objects.create_user("dev"))
    assert member.get("/metrics").status_code == 403
    staff = Client()
    staff.force_login(User.objects.create_user("ops", is_staff=True))
    assert staff.get("/metrics").status_code == 200


@override_settings(HINDSIGHT_API_AUTH="token", HINDSIGHT_METRICS_TOKEN="")
def test_an_unset_scrape_token_never_matches_an_empty_bearer() -> None:
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


@override_settings(HINDSIGHT_API_AUTH="token")
def test_healthz_stays_open_and_says_nothing_but_ok_or_unreachable() -> None:
    body = Client().get("/healthz").json()
    assert set(body) <= {"status", "database", "broker"}
    assert set(body.values()) <= {"ok", "unavailable", "unreachable", "not checked"}


def test_open_mode_still_shows_pages_to_anyone_with_a_sign_in_link() -> None:
    response = Client().get("/apps/")
    assert response.status_code == 200
    assert b'href="/login/?next=/apps/"' in response.content
