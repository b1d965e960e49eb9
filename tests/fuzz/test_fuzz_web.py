"""Seeded random query strings against the pages and the API (PostgreSQL): never a 500, and every API error in the
one error shape ``{"error": {"code", "message", "field"}}`` (docs/FUZZ.md; issue 15 item 10).

The parameter names are the real ones, read from the forms and filter sets, plus a few no endpoint takes; the
values are hostile (wrong types, huge numbers, NULs, SQL and template syntax, very long strings). A failure names
the seed, the URL and what came back.
"""

from __future__ import annotations

import random
from typing import Final
from urllib.parse import quote, quote_plus

import orjson
import pytest
from django.core.cache import cache
from django.test import Client, override_settings
from factories import add_finding, make_app

from webui import forms
from webui.api.filters import AppFilter

pytestmark = pytest.mark.django_db

SEED: Final = 20261127
REQUESTS_PER_ENDPOINT: Final = 16
PAGES: Final = ("/", "/apps/", "/history/", "/compare/", "/users/", "/flows/run/", "/hosts/", "/sources/", "/help/")
API: Final = (
    "/api/v1/apps",
    "/api/v1/history",
    "/api/v1/compare",
    "/api/v1/flow-executions",
    "/api/v1/stage-anomalies",
    "/api/v1/hosts",
    "/api/v1/gate",
    "/api/v1/heuristics",
    "/api/v1/clusters",
)
# Paths whose last part is data: the value is appended (quoted) to the path.
DATA_PATHS: Final = ("/api/v1/apps/", "/api/v1/hosts/", "/help/", "/apps/")
ALLOWED: Final = {200, 302, 400, 401, 404}
VALUES: Final = (
    "",
    "0",
    "-1",
    "1",
    "999999999999",
    "99999999999999999999999999",
    "-9223372036854775809",
    "1e308",
    "NaN",
    "Infinity",
    "true",
    "null",
    "[]",
    "{}",
    "' OR 1=1 --",
    '"; DROP TABLE analyzer_analyzedapp; --',
    "%",
    "_",
    "\\",
    "\x00",
    "a\x00b",
    "\ud800",
    "{{ 7*7 }}",
    "{% debug %}",
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "application_1700000000000_0001",
    "job_1700000000000_0001",
    "spark.executor_gc",
    "SEVERE",
    "4",
    "-end_time",
    "2026-03-01T12:00:00Z",
    "2026-02-30",
    "9999-12-31T23:59:59+14:00",
    "0001-01-01",
    "x" * 5000,
    "名前" * 300,
    " ",
    "\t\n",
)


def _parameter_names() -> list[str]:
    names = set(AppFilter.base_filters) | {"page", "limit", "offset", "cursor", "format", "days", "host", "series"}
    for form in (forms.HistoryForm, forms.CompareForm, forms.UserForm, forms.FlowRunForm):
        names |= set(form.base_fields)
    names |= set(forms.AppSearchForm.base_fields)
    return sorted(names | {"no_such_parameter", "page_size", "wait_s", "stage_sort", "attempt", "only"})


def _quoted(value: str) -> str:
    """Percent-encoded, a lone surrogate as the (invalid) UTF-8 bytes a hostile client sends for it."""
    return quote_plus(value.encode("utf-8", "surrogatepass"))


def _query(rng: random.Random, names: list[str]) -> str:
    params = [(rng.choice(names), rng.choice(VALUES)) for _ in range(rng.randrange(1, 6))]
    if rng.random() < 0.2:
        params.append(params[0])  # a repeated parameter
    return "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in params)


@pytest.fixture
def stored_apps() -> None:
    for name in ("nightly <b>rollup</b>", "名前 \u202e", "x" * 300):
        app = make_app(name=name, user="alice", queue="etl")
        add_finding(app, "spark.executor_gc", 3, details=2)


def _problem(url: str, response: object, allowed: set[int] = ALLOWED) -> str | None:
    status = getattr(response, "status_code", None)
    if status not in allowed:
        return f"{status}"
    if url.startswith("/api/") and status in (400, 401, 404):
        try:
            body = orjson.loads(response.content)  # type: ignore[attr-defined]
        except orjson.JSONDecodeError:
            return f"{status} with a body that is not JSON"
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict) or set(error) != {"code", "message", "field"}:
            return f"{status} not in the error shape: {str(body)[:200]}"
    return None


def _fuzz(client: Client, paths: tuple[str, ...], salt: str, allowed: set[int] = ALLOWED) -> list[str]:
    rng = random.Random(f"hindsight-web-fuzz:{SEED}:{salt}")
    names = _parameter_names()
    failures = []
    for path in paths:
        for _ in range(REQUESTS_PER_ENDPOINT):
            url = f"{path}?{_query(rng, names)}"
            cache.clear()  # the throttle counts requests; this run is not about the throttle
            response = client.get(url)
            problem = _problem(url, response, allowed)
            if problem:
                failures.append(f"GET {url[:300]} -> {problem}")
    return failures


def test_random_query_strings_on_the_pages_never_give_a_server_error(client: Client, stored_apps: None) -> None:
    failures = _fuzz(client, PAGES, "pages")
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures[:30])


def test_random_query_strings_on_the_api_give_data_or_the_one_error_shape(client: Client, stored_apps: None) -> None:
    failures = _fuzz(client, API, "api")
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures[:30])


def test_random_path_data_on_the_api_and_pages_gives_data_or_the_one_error_shape(
    client: Client, stored_apps: None
) -> None:
    rng = random.Random(f"hindsight-web-fuzz:{SEED}:paths")
    failures = []
    for path in DATA_PATHS:
        for _ in range(REQUESTS_PER_ENDPOINT):
            value = rng.choice(VALUES) or "x"
            suffix = rng.choice(("", "/", "/attribution", "/executor-anomalies"))
            url = (
                path
                + quote(value.encode("utf-8", "surrogatepass"), safe="")
                + (suffix if path.startswith("/api/") else "/")
            )
            cache.clear()
            problem = _problem(url, client.get(url))
            if problem:
                failures.append(f"GET {url[:300]} -> {problem}")
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures[:30])


@override_settings(HINDSIGHT_API_AUTH="token")
def test_in_token_mode_random_requests_from_an_anonymous_visitor_are_sent_to_sign_in_or_refused(
    client: Client, stored_apps: None
) -> None:
    """The closed site (F1) under the same fuzz: pages redirect to sign-in (302) or refuse (400, 404), the API
    answers 401 in the error shape; never a page's data (200) and never a 500."""
    failures = _fuzz(client, PAGES + API, "token", allowed={302, 400, 401, 404})
    assert not failures, f"seed {SEED}:\n" + "\n".join(failures[:30])
