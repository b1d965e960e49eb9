"""App claims in the Django admin: read-only, never a secret, and a retry action for failed or waiting apps."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from analyzer.ingestion import polling
from analyzer.ingestion.sources import MASK, cluster_add
from analyzer.models import AppClaim, ClaimState, Cluster

pytestmark = pytest.mark.django_db

PASSWORD = "cl41m-secret-Pw"
CHANGELIST = "admin:analyzer_appclaim_changelist"


@pytest.fixture
def cluster() -> Cluster:
    return cluster_add(
        "prod",
        spark_history="http://history:18080",
        http_params={"auth": "basic", "username": "hindsight", "password": PASSWORD},
    )


def failed_claim(cluster: Cluster, app_id: str = "application_1_0001", **fields: object) -> AppClaim:
    values: dict[str, object] = {
        "cluster": cluster,
        "source": cluster.sources.get(),
        "app_id": app_id,
        "state": ClaimState.FAILED,
        "tries": 3,
        "finished_ms": 1_700_000_000_000,
        "finished_at": timezone.now(),
        "last_error": "event log not found (404)",
    }
    values.update(fields)
    return AppClaim.objects.create(**values)


def test_the_changelist_shows_source_finish_time_tries_next_try_and_error(
    admin_client: Client, cluster: Cluster
) -> None:
    next_try = dt.datetime(2026, 3, 1, 12, 30, tzinfo=dt.UTC)
    failed_claim(cluster, state=ClaimState.RETRY, tries=2, next_try_at=next_try, last_error="timed out after 30 s")

    html = admin_client.get(reverse(CHANGELIST)).content.decode()

    assert "application_1_0001" in html
    assert "Spark History Server" in html  # the source
    assert "Nov. 14, 2023" in html  # the app's listed end, 1,700,000,000,000 ms
    assert "March 1, 2026, 12:30" in html  # next try
    assert "timed out after 30 s" in html
    assert "Waiting" in html


def test_secrets_are_never_on_the_claim_list_nor_its_page(admin_client: Client, cluster: Cluster) -> None:
    claim = failed_claim(
        cluster,
        last_error=f"401 for password {PASSWORD}",
        ref={"tracking_url": f"http://hindsight:{PASSWORD}@history:18080/x", "token": PASSWORD},
    )

    changelist = admin_client.get(reverse(CHANGELIST)).content.decode()
    change = admin_client.get(reverse("admin:analyzer_appclaim_change", args=[claim.pk])).content.decode()

    for html in (changelist, change):
        assert PASSWORD not in html
    assert f"401 for password {MASK}" in change
    assert f"http://{MASK}@history:18080/x" in change


def test_claims_cannot_be_added_edited_or_deleted_in_the_admin(admin_client: Client, cluster: Cluster) -> None:
    claim = failed_claim(cluster)

    assert admin_client.get(reverse("admin:analyzer_appclaim_add")).status_code == 403
    assert admin_client.get(reverse("admin:analyzer_appclaim_delete", args=[claim.pk])).status_code == 403
    change = admin_client.get(reverse("admin:analyzer_appclaim_change", args=[claim.pk])).content.decode()
    assert 'name="state"' not in change
    assert 'name="tries"' not in change


def test_retrying_the_selected_apps_hands_their_ids_to_claims_retry_and_says_how_many(
    admin_client: Client, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = failed_claim(cluster, "application_1_0001")
    second = failed_claim(cluster, "application_1_0002")
    failed_claim(cluster, "application_1_0003")  # not selected
    received: list[list[int]] = []

    def claims_retry(ids: list[int]) -> int:
        received.append(sorted(ids))
        return 1  # one of the two was meanwhile analyzed, say

    monkeypatch.setattr(polling, "claims_retry", claims_retry, raising=False)
    response = admin_client.post(
        reverse(CHANGELIST),
        {"action": "retry_selected", "_selected_action": [first.pk, second.pk]},
        follow=True,
    )

    assert received == [sorted([first.pk, second.pk])]
    html = response.content.decode()
    assert "1 app will be fetched and analyzed again." in html
    assert "1 other (analyzed, or being analyzed now): left as is." in html


def test_the_retry_action_makes_a_failed_app_due_again_with_a_fresh_budget(
    admin_client: Client, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = failed_claim(cluster, "application_1_0001", next_try_at=timezone.now())
    done = failed_claim(cluster, "application_1_0002", state=ClaimState.DONE, tries=0)
    # Only the database side of the reset: whatever it enqueues is the tasks' tests' business, not the broker's here.
    from analyzer import tasks

    if hasattr(tasks, "analyze_app_task"):
        monkeypatch.setattr(tasks.analyze_app_task, "delay", lambda *args, **kwargs: None)

    admin_client.post(reverse(CHANGELIST), {"action": "retry_selected", "_selected_action": [failed.pk, done.pk]})

    failed.refresh_from_db()
    done.refresh_from_db()
    assert (failed.state, failed.tries, failed.next_try_at) == (ClaimState.RETRY, 0, None)
    assert done.state == ClaimState.DONE


def test_a_user_without_the_change_permission_is_not_offered_the_retry(client: Client, cluster: Cluster) -> None:
    from django.contrib.auth.models import Permission, User

    viewer = User.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_appclaim"))
    failed_claim(cluster)
    client.force_login(viewer)

    html = client.get(reverse(CHANGELIST)).content.decode()

    assert "application_1_0001" in html
    assert "retry_selected" not in html
