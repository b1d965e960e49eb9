"""The API's app detail gives each finding's cost, rule severity and changes and the app's headline, what-if and
severity profile in the analyze command's shapes, the OpenAPI schema describes them, and the list orders by cost
(issue 14)."""

from __future__ import annotations

import pytest
from factories import make_app
from rest_framework.test import APIClient

from analyzer.models import AnalyzedApp
from analyzer.services import report_store
from tests.impact_reports import CLEAN, PARTITIONS, SMALL_TASKS, sample_report, with_change

pytestmark = pytest.mark.django_db

FINDING_KEYS = {"impact", "rule_severity", "changes", "score"}
IMPACT_KEYS = {"wall_ms", "share_of_runtime", "gb_hours"}
HEADLINE_KEYS = {"code", "severity", "impact", "summary", "changes"}
WHAT_IF_KEYS = {
    "own_executors",
    "cores_per_executor",
    "critical_path_ms",
    "ideal_executors",
    "runtime_ms_at",
    "replay_error",
}


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def test_the_app_detail_gives_every_contract_key_as_the_analyze_command_does(api: APIClient) -> None:
    report = with_change(sample_report(SMALL_TASKS))
    contract = report.to_json_dict()
    app = report_store(report=report, source=report.source)
    body = api.get(f"/api/v1/apps/{app.app_id}").json()
    assert body["score"] == contract["score"] > 0
    assert body["severity_profile"] == contract["severity_profile"]
    assert body["headline"] == contract["headline"]
    assert set(body["headline"][0]) == HEADLINE_KEYS
    assert PARTITIONS.to_dict() in body["headline"][0]["changes"]
    assert body["what_if"] == contract["what_if"]
    assert set(body["what_if"]) == WHAT_IF_KEYS
    expected = {finding["code"]: finding for finding in contract["heuristics"]}
    assert len(body["heuristics"]) == len(expected)
    for finding in body["heuristics"]:
        assert {key: finding[key] for key in FINDING_KEYS} == {
            key: expected[finding["code"]][key] for key in FINDING_KEYS
        }
    costed = [finding["impact"] for finding in body["heuristics"] if finding["impact"] is not None]
    assert costed
    assert all(set(impact) == IMPACT_KEYS for impact in costed)


def test_a_clean_apps_detail_has_an_empty_headline(api: APIClient) -> None:
    report = sample_report(CLEAN)
    app = report_store(report=report, source=report.source)
    body = api.get(f"/api/v1/apps/{app.app_id}").json()
    assert body["headline"] == []
    assert body["score"] == 0


def test_an_app_stored_before_costs_reads_with_no_headline_and_its_severity_as_the_rule(api: APIClient) -> None:
    report = sample_report(SMALL_TASKS)
    app = report_store(report=report, source=report.source)
    AnalyzedApp.objects.filter(pk=app.pk).update(headline=[], what_if=None, severity_profile="")
    app.heuristic_results.update(rule_severity=None, impact_wall_ms=None, impact_share=None, impact_gb_hours=None)
    body = api.get(f"/api/v1/apps/{app.app_id}").json()
    assert body["headline"] == []
    assert body["what_if"] is None
    assert all(f["rule_severity"] == f["severity"] for f in body["heuristics"])
    assert all(f["impact"] is None for f in body["heuristics"])


def test_the_openapi_schema_describes_the_costs_headline_and_what_if(api: APIClient) -> None:
    document = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = document["components"]["schemas"]
    detail = components["AppDetail"]["properties"]
    assert "HeadlineItem" in str(detail["headline"])
    assert "WhatIf" in str(detail["what_if"])
    assert detail["what_if"].get("nullable") is True
    assert "severity_profile" in detail
    finding = components["Finding"]["properties"]
    assert {"impact", "rule_severity", "changes"} <= set(finding)
    assert finding["impact"].get("nullable") is True
    assert set(components["Impact"]["properties"]) == IMPACT_KEYS
    assert set(components["Change"]["properties"]) == {"property", "value", "reason"}
    assert set(components["HeadlineItem"]["properties"]) == HEADLINE_KEYS
    assert set(components["WhatIf"]["properties"]) == WHAT_IF_KEYS
    assert "GB-seconds" in components["AppSummary"]["properties"]["score"]["description"]


def test_the_list_orders_by_cost(api: APIClient) -> None:
    cheap = make_app(score=3)
    costly = make_app(score=5 * 2**31)
    middling = make_app(score=900)
    body = api.get("/api/v1/apps", {"ordering": "-score"}).json()
    assert [row["app_id"] for row in body["results"]] == [costly.app_id, middling.app_id, cheap.app_id]
    assert body["results"][0]["score"] == 5 * 2**31
