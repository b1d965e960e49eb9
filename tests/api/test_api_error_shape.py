"""Every API failure the web fuzz slice found outside the error shape (tests/fuzz/test_fuzz_web.py)."""

from __future__ import annotations

import orjson
import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_an_unknown_format_parameter_is_a_404_in_the_error_shape(api: APIClient) -> None:
    response = api.get("/api/v1/apps?format=null")
    assert response.status_code == 404
    assert orjson.loads(response.content) == {"error": {"code": "not_found", "message": "Not found.", "field": None}}


def test_a_path_with_a_newline_is_an_unknown_endpoint_in_the_error_shape_not_an_html_page(api: APIClient) -> None:
    response = api.get("/api/v1/hosts/%09%0A/executor-anomalies")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert orjson.loads(response.content)["error"]["code"] == "not_found"
