"""The app detail's stage rows serve a stage's histogram and task times per host as stored, documented in the
OpenAPI schema by analyzer.schema's Structs; a stored value that does not decode is served as null and logged."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest
from rest_framework.test import APIClient

from analyzer import schema
from analyzer.models import StageSummary
from tests.factories import make_app
from webui.api.serializers import StageSerializer
from webui.api.struct_schema import StructField

pytestmark = pytest.mark.django_db

HISTOGRAM = {"edges_ms": [200.0, 1_000.0, 90_000.0], "counts": [99, 1]}
HOST_TIMES = {"n_hosts": 3, "n_tasks": 6, "task_ms": 600, "hosts": [["a", 2, 300], ["b", 2, 200], ["c", 2, 100]]}


def stage_rows(api: APIClient, *stages: dict[str, Any]) -> list[dict[str, Any]]:
    app = make_app()
    for stage_id, fields in enumerate(stages):
        StageSummary.objects.create(app=app, stage_id=stage_id, name=f"stage {stage_id}", **fields)
    response = api.get(f"/api/v1/apps/{app.app_id}")
    assert response.status_code == 200
    return list(response.json()["stages"])


def test_stage_rows_serve_the_stored_histogram_and_host_times_unchanged_and_empty_ones_as_empty(
    api: APIClient,
) -> None:
    full, empty = stage_rows(
        api, {"task_duration_histogram": HISTOGRAM, "host_task_times": HOST_TIMES}, {}
    )  # the second as stored before both columns existed

    assert (full["task_duration_histogram"], full["host_task_times"]) == (HISTOGRAM, HOST_TIMES)
    assert (empty["task_duration_histogram"], empty["host_task_times"]) == ({}, {})


def test_a_stage_value_that_does_not_decode_is_served_as_null_and_logged(
    api: APIClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        [row] = stage_rows(
            api, {"task_duration_histogram": {"edges_ms": "200,90000"}, "host_task_times": {"hosts": [["a", 2]]}}
        )

    assert (row["task_duration_histogram"], row["host_task_times"]) == (None, None)
    assert "the stored stage task-duration histogram of 'StageSummary" in caplog.text
    assert "the stored stage task times per host of 'StageSummary" in caplog.text


def test_the_openapi_stage_row_refers_to_the_histogram_and_host_times_components_with_every_struct_field(
    api: APIClient,
) -> None:
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    components = response.json()["components"]["schemas"]
    stage = components["Stage"]["properties"]

    for field, struct in (
        ("task_duration_histogram", schema.TaskDurationHistogram),
        ("host_task_times", schema.HostTaskTimes),
    ):
        assert stage[field]["allOf"] == [{"$ref": f"#/components/schemas/{struct.__name__}"}]
        assert stage[field]["nullable"] is True
        shown = components[struct.__name__]
        assert set(shown["properties"]) == {f.encode_name for f in msgspec.structs.fields(struct)}
        assert "required" not in shown  # {} is a stored value: every field has a default
    assert components["HostTaskTimes"]["properties"]["hosts"]["items"]["description"].startswith("[host, tasks")
    declared = StageSerializer._declared_fields
    assert isinstance(declared["task_duration_histogram"], StructField)
    assert isinstance(declared["host_task_times"], StructField)
