"""The OpenAPI schema shows the stored results' fields: components generated from their msgspec Structs, and the
serializers that present a result name every field of its Struct (or say why one is not served)."""

from __future__ import annotations

import types
from typing import Any, get_args

import msgspec
import pytest
from rest_framework import serializers
from rest_framework.test import APIClient

from analyzer.attribution import schema as attribution_schema
from analyzer.hosts import schema as host_schema
from webui.api import executors as executor_api
from webui.api import hosts as host_api
from webui.api import serializers as api_serializers
from webui.api import stages as stage_api
from webui.api.struct_schema import StructField, schema_of

pytestmark = pytest.mark.django_db


def document(api: APIClient) -> dict[str, Any]:
    response = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return dict(response.json())


def struct_fields() -> list[tuple[str, StructField]]:
    """Every StructField declared by a serializer of the API modules, as (serializer.field, field)."""
    found = []
    for module in (executor_api, stage_api, host_api, api_serializers):
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, serializers.Serializer):
                for field_name, field in value._declared_fields.items():
                    if isinstance(field, StructField):
                        found.append((f"{name}.{field_name}", field))
    return found


def test_the_executor_and_stage_answers_document_their_stored_results_through_struct_fields() -> None:
    names = {name for name, _field in struct_fields()}
    assert {
        "ExecutorAnomalySerializer.ranking",
        "ExecutorAnomalySerializer.features",
        "ExecutorAnomalySerializer.series",
        "StageLocalizationSerializer.params",
    } <= names


def test_every_field_of_every_struct_served_is_a_property_of_its_openapi_component(api: APIClient) -> None:
    components = document(api)["components"]["schemas"]
    checked = set()
    for _name, field in struct_fields():
        _top, structs = schema_of(field.struct)
        for component, (cls, _schema) in structs.items():
            fields = msgspec.structs.fields(cls)
            shown = components[component]
            assert set(shown["properties"]) == {f.encode_name for f in fields}, component
            assert set(shown.get("required", [])) == {f.encode_name for f in fields if f.required}, component
            checked.add(component)
    assert {"ExecutorRanking", "ExecutorScore", "FeatureScore", "ExecutorFeatureRow", "TaskSeries"} <= checked
    assert "LocalizationParams" in checked


def test_the_executor_answers_ranking_refers_to_its_component(api: APIClient) -> None:
    answer = document(api)["components"]["schemas"]["ExecutorAnomaly"]["properties"]
    assert answer["ranking"]["allOf"] == [{"$ref": "#/components/schemas/ExecutorRanking"}]
    assert answer["features"]["items"] == {"$ref": "#/components/schemas/ExecutorFeatureRow"}
    assert answer["series"]["nullable"] is True


def _nullable(annotation: Any) -> bool:
    return isinstance(annotation, types.UnionType) and type(None) in get_args(annotation)


def test_the_host_record_serializer_serves_every_stored_indicator_but_the_ones_it_says_it_does_not() -> None:
    served = host_api.HostRecordSerializer().fields
    stored = {f.name: f for f in msgspec.structs.fields(host_schema.HostRecord)}
    assert set(served) == set(stored) - host_api.NOT_SERVED
    assert set(stored) >= host_api.NOT_SERVED
    for name, field in served.items():
        assert field.allow_null == _nullable(stored[name].type), name


@pytest.mark.parametrize(
    ("struct", "serializer", "component"),
    [
        (attribution_schema.Explanation, api_serializers.AttributionExplanationSerializer, "AttributionExplanation"),
        (attribution_schema.CauseEffect, api_serializers.AttributionCauseSerializer, "AttributionCause"),
        (attribution_schema.FeatureEffect, api_serializers.AttributionMemberSerializer, "AttributionMember"),
        (attribution_schema.Confidence, api_serializers.AttributionConfidenceSerializer, "AttributionConfidence"),
    ],
)
def test_the_attribution_serializers_name_every_field_of_the_explanation_struct(
    struct: type[msgspec.Struct], serializer: type[serializers.Serializer[Any]], component: str, api: APIClient
) -> None:
    fields = {f.name: f for f in msgspec.structs.fields(struct)}
    declared = serializer().fields
    assert set(fields) <= set(declared)
    for name in fields:  # a value the Struct allows to be null is documented as nullable
        if _nullable(fields[name].type) and not isinstance(declared[name], serializers.JSONField):
            assert declared[name].allow_null, name
    assert set(fields) <= set(document(api)["components"]["schemas"][component]["properties"])
