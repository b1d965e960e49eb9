"""The OpenAPI schema (generated without warnings, every endpoint's answers documented), the docs page, auth,
throttling, and hostile values returned intact as JSON."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from analyzer.models import AnalyzedApp, Cluster
from tests.factories import add_finding, make_app

pytestmark = pytest.mark.django_db

# Control characters, bidi overrides and markup; not NUL, which PostgreSQL text cannot store.
HOSTILE_NAME = "<script>alert(1)</script>\x07\x1b[31m\u202e & \"quoted\" 'single'\n"


def schema(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    text = response.content.decode()
    loaded: dict[str, Any] = yaml.safe_load(text) if not text.lstrip().startswith("{") else response.json()
    return loaded


def test_the_schema_generates_and_validates_without_warnings(tmp_path: Path) -> None:
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target), stdout=StringIO())
    document = yaml.safe_load(target.read_text())
    assert document["openapi"].startswith("3.")
    assert {"/api/v1/apps", "/api/v1/apps/{app_id}", "/api/v1/heuristics", "/api/v1/clusters", "/api/v1/gate"} <= set(
        document["paths"]
    )
    assert set(document["paths"]["/api/v1/analyze"]["post"]["responses"]) >= {"200", "202", "401", "404", "409"}


def _sample_values(app: AnalyzedApp) -> dict[str, str]:
    """A value for each parameter name the schema may ask for, taken from stored rows."""
    run = app.flow_exec_id or "no/such/run"  # the stored app belongs to a run, so flow lookups answer 200
    return {
        "app_id": app.app_id,
        "cluster": "prod",
        "name": "prod",
        "max_severity": "MODERATE",
        "limit": "5",
        "job_def_id": app.job_def_id,  # history's one key: the other two are left out so it answers 200
        "flow_exec_id": run,
        "a": run,
        "b": run,
        "host": "node-1",
        "template": app.template or "t",
    }


def test_every_endpoint_in_the_schema_answers_only_documented_codes(api: APIClient) -> None:
    app = make_app(cluster=Cluster.objects.create(name="prod"), job_def_id="j", flow_exec_id="r", flow_def_id="f")
    add_finding(app, "spark.task_skew", 3, details=1)
    values = _sample_values(app)
    document = schema(api)
    staff = APIClient()
    staff_user = User.objects.create_user("staff", password="unused-pw-1", is_staff=True)
    staff.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff_user).key}")
    called = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            documented = {int(code) for code in operation["responses"]}
            url = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
            if method == "post":  # the writes: anonymous callers are refused, as documented
                response = api.post(url, {"app_ids": ["a"]}, format="json")
                assert response.status_code in documented & {401, 403}, (path, response.status_code)
                # A staff token, and a body of every request property we have a value for.
                ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                fields = document["components"]["schemas"][ref.rsplit("/", 1)[1]].get("properties", {})
                response = staff.post(url, {name: values[name] for name in fields if name in values}, format="json")
                assert response.status_code in documented, (path, response.status_code, response.content)
                called += 2
                continue
            assert method == "get", f"{path} offers {method}"
            params = operation.get("parameters", [])
            # Once with only the path, once with every query parameter we have a value for, once with junk.
            full = {p["name"]: values[p["name"]] for p in params if p["in"] == "query" and p["name"] in values}
            junk = {p["name"]: "\x00<bad>" for p in params if p["in"] == "query"}
            for query in ({}, full, junk):
                response = api.get(url, query)
                assert response.status_code in documented, (path, query, response.status_code, response.content)
                assert response["Content-Type"].startswith("application/json")
                called += 1
    assert called == 3 * 13 + 2 * 2  # every GET and POST of the schema was called


def test_the_docs_page_loads_swagger_ui_from_this_server_not_a_cdn(api: APIClient) -> None:
    response = api.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources
    assert all(not s.startswith(("http://", "https://", "//")) for s in sources), sources


def test_hostile_values_come_back_as_json_strings_intact(api: APIClient) -> None:
    app = make_app(name=HOSTILE_NAME, user="<b>mallory</b>", app_id="application_1_<script>")
    add_finding(app, "spark.task_skew", 3, advice=HOSTILE_NAME)
    listed = api.get("/api/v1/apps", {"name": "<script>"})
    assert listed.status_code == 200
    assert listed["Content-Type"] == "application/json"
    [row] = listed.json()["results"]
    assert row["name"] == HOSTILE_NAME
    assert row["user"] == "<b>mallory</b>"
    detail = api.get(row["url"])
    assert detail.status_code == 200
    assert detail.json()["heuristics"][0]["advice"] == HOSTILE_NAME
    gate = api.get("/api/v1/gate", {"app_id": app.app_id})
    assert gate.json()["app"]["name"] == HOSTILE_NAME


@pytest.mark.parametrize("value", ["\x00", "<script>alert(1)</script>", "%", "a" * 5000, "\u202e\ud7ff", "../.."])
def test_hostile_filter_values_never_crash(api: APIClient, value: str) -> None:
    make_app()
    for name in ("app_id", "user", "name", "cluster", "heuristic", "severity_min", "started_after", "ordering"):
        response = api.get("/api/v1/apps", {name: value})
        assert response.status_code in (200, 400), (name, response.content)
    assert api.get("/api/v1/gate", {"app_id": value}).status_code in (400, 404)
    assert api.get(f"/api/v1/apps/{value}").status_code in (404, 200)


def test_reads_are_open_by_default(api: APIClient) -> None:
    assert api.get("/api/v1/apps").status_code == 200


@override_settings(HINDSIGHT_API_AUTH="token")
def test_token_mode_requires_a_token_or_a_session_to_read(api: APIClient) -> None:
    refused = api.get("/api/v1/apps")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "not_authenticated"
    user = User.objects.create_user("ci", password="pw-123456")
    token = Token.objects.create(user=user)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/v1/apps").status_code == 200
    api.credentials(HTTP_AUTHORIZATION="Token wrong")
    assert api.get("/api/v1/apps").status_code == 401
    session = APIClient()
    session.force_login(user)
    assert session.get("/api/v1/gate", {"app_id": "x"}).status_code == 404


@override_settings(HINDSIGHT_API_THROTTLE_ANON="3/minute")
def test_anonymous_clients_are_throttled_at_the_configured_rate(api: APIClient) -> None:
    codes = [api.get("/api/v1/heuristics").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    assert api.get("/api/v1/clusters").json()["error"]["code"] == "throttled"
