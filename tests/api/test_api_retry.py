"""POST /api/v1/clusters/<name>/retry: staff analyze again the apps a cluster failed to fetch; nobody else can."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from analyzer.models import AppClaim, ClaimState, Cluster

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed() -> Cluster:
    prod, other = Cluster.objects.create(name="prod"), Cluster.objects.create(name="other")
    for app_id, state in [("app-1", ClaimState.FAILED), ("app-2", ClaimState.FAILED), ("app-3", ClaimState.DONE)]:
        AppClaim.objects.create(cluster=prod, app_id=app_id, state=state, tries=5, last_error="refused")
    AppClaim.objects.create(cluster=other, app_id="app-1", state=ClaimState.FAILED, tries=5)
    return prod


def client_for(*, staff: bool) -> APIClient:
    user = User.objects.create_user(f"user-{staff}", password="unused-pw-1", is_staff=staff)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def states() -> dict[tuple[str, str], tuple[str, int]]:
    return {(c.cluster.name, c.app_id): (c.state, c.tries) for c in AppClaim.objects.select_related("cluster")}


def test_a_staff_token_retries_the_named_failed_apps_and_then_all_of_them(failed: Cluster) -> None:
    staff = client_for(staff=True)

    one = staff.post("/api/v1/clusters/prod/retry", {"app_ids": ["app-1"]}, format="json")
    rest = staff.post("/api/v1/clusters/prod/retry", {}, format="json")

    assert (one.status_code, one.json()) == (200, {"cluster": "prod", "retried": 1})
    assert rest.json()["retried"] == 1
    assert states() == {
        ("prod", "app-1"): (ClaimState.RETRY, 0),
        ("prod", "app-2"): (ClaimState.RETRY, 0),
        ("prod", "app-3"): (ClaimState.DONE, 5),
        ("other", "app-1"): (ClaimState.FAILED, 5),
    }


def test_anonymous_and_non_staff_callers_are_refused_and_nothing_changes(failed: Cluster) -> None:
    before = states()

    anonymous = APIClient().post("/api/v1/clusters/prod/retry", {}, format="json")
    user = client_for(staff=False).post("/api/v1/clusters/prod/retry", {}, format="json")

    assert anonymous.status_code == 401
    assert user.status_code == 403
    assert set(anonymous.json()["error"]) >= {"code", "message"}
    assert states() == before


def test_an_unknown_cluster_or_a_bad_body_is_refused_with_the_error_shape(failed: Cluster) -> None:
    staff = client_for(staff=True)

    missing = staff.post("/api/v1/clusters/nowhere/retry", {}, format="json")
    bad = staff.post("/api/v1/clusters/prod/retry", {"app_ids": "app-1"}, format="json")

    assert missing.status_code == 404
    assert "nowhere" in missing.json()["error"]["message"]
    assert bad.status_code == 400
    assert bad.json()["error"]["field"] == "app_ids"
