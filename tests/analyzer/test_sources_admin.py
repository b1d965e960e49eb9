"""Clusters in the Django admin: sources inline, validated by their backend, secrets write-only."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from analyzer.ingestion.sources import cluster_add, poll_failed
from analyzer.models import Cluster, Source

pytestmark = pytest.mark.django_db

PASSWORD = "adm1n-secret-Pw"


@pytest.fixture
def cluster() -> Cluster:
    return cluster_add(
        "prod",
        spark_history="http://history:18080",
        http_params={"auth": "basic", "username": "hindsight", "password": PASSWORD},
    )


def change_form(cluster: Cluster, **source_fields: Any) -> dict[str, Any]:
    """The POST of the cluster's change page as a browser sends it: the source's fields as stored, then overrides."""
    source = cluster.sources.get()
    data: dict[str, Any] = {
        "name": cluster.name,
        "jobhistory_url": cluster.jobhistory_url,
        "sources-TOTAL_FORMS": "1",
        "sources-INITIAL_FORMS": "1",
        "sources-MIN_NUM_FORMS": "0",
        "sources-MAX_NUM_FORMS": "1000",
        "sources-0-id": str(source.pk),
        "sources-0-cluster": str(cluster.pk),
        "sources-0-backend": source.backend,
        "sources-0-params": json.dumps(source.params),
        "sources-0-password": "",
        "sources-0-token": "",
        "sources-0-enabled": "on",
        "sources-0-poll_interval_s": str(source.poll_interval_s),
        "sources-0-safety_margin_s": str(source.safety_margin_s),
        "_save": "Save",
    }
    data.update({f"sources-0-{name}": value for name, value in source_fields.items()})
    return data


def change_url(cluster: Cluster) -> str:
    return reverse("admin:analyzer_cluster_change", args=[cluster.pk])


def test_secrets_are_not_in_the_changelist_nor_the_change_page(admin_client: Client, cluster: Cluster) -> None:
    poll_failed(cluster.sources.get(), f"401 for password {PASSWORD}")
    changelist = admin_client.get(reverse("admin:analyzer_cluster_changelist"))
    change = admin_client.get(change_url(cluster))
    assert changelist.status_code == change.status_code == 200
    assert "prod" in changelist.content.decode()
    page = change.content.decode()
    assert "http://history:18080" in page
    assert "401 for password ********" in page
    for html in (changelist.content.decode(), page):
        assert PASSWORD not in html


def test_saving_with_the_password_left_blank_keeps_the_stored_one(admin_client: Client, cluster: Cluster) -> None:
    response = admin_client.post(change_url(cluster), change_form(cluster, safety_margin_s="120"))
    assert response.status_code == 302
    source = cluster.sources.get()
    assert source.secrets == {"password": PASSWORD}
    assert source.safety_margin_s == 120


def test_a_new_password_replaces_the_stored_one(admin_client: Client, cluster: Cluster) -> None:
    response = admin_client.post(change_url(cluster), change_form(cluster, password="n3w-pw"))
    assert response.status_code == 302
    assert cluster.sources.get().secrets == {"password": "n3w-pw"}


def test_a_secret_typed_into_the_params_is_moved_to_the_secrets(admin_client: Client, cluster: Cluster) -> None:
    params = {"url": "http://history:18080", "auth": "bearer", "token": "typed-t0k"}
    data = change_form(cluster, params=json.dumps(params), clear_secrets="on")
    response = admin_client.post(change_url(cluster), data)
    assert response.status_code == 302
    source = cluster.sources.get()
    assert source.secrets == {"token": "typed-t0k"}
    assert "token" not in source.params


def test_bad_params_are_refused_naming_the_parameter(admin_client: Client, cluster: Cluster) -> None:
    params = {"url": "http://history:18080", "colour": "red"}
    response = admin_client.post(change_url(cluster), change_form(cluster, params=json.dumps(params)))
    assert response.status_code == 200
    assert "unknown parameter(s) colour" in response.content.decode()
    assert PASSWORD not in response.content.decode()
    assert "colour" not in cluster.sources.get().params


def test_a_source_added_in_the_admin_is_validated_and_stored(admin_client: Client) -> None:
    data = {
        "name": "staging",
        "jobhistory_url": "",
        "sources-TOTAL_FORMS": "1",
        "sources-INITIAL_FORMS": "0",
        "sources-MIN_NUM_FORMS": "0",
        "sources-MAX_NUM_FORMS": "1000",
        "sources-0-backend": "yarn-rm",
        "sources-0-params": json.dumps({"urls": ["http://rm1:8088", "http://rm2:8088"]}),
        "sources-0-token": "rm-t0ken",
        "sources-0-enabled": "on",
        "sources-0-poll_interval_s": "10",
        "sources-0-safety_margin_s": "60",
        "_save": "Save",
    }
    response = admin_client.post(reverse("admin:analyzer_cluster_add"), data)
    assert response.status_code == 302
    source = Source.objects.get(cluster__name="staging")
    assert source.params == {"urls": ["http://rm1:8088", "http://rm2:8088"]}
    assert source.secrets == {"token": "rm-t0ken"}
    assert source.params_key


def test_a_jobhistory_address_with_credentials_is_refused(admin_client: Client, cluster: Cluster) -> None:
    data = change_form(cluster)
    data["jobhistory_url"] = "http://user:pw@jh:19888"
    response = admin_client.post(change_url(cluster), data)
    assert response.status_code == 200
    assert "credentials in the address are refused" in response.content.decode()
    cluster.refresh_from_db()
    assert cluster.jobhistory_url == ""


def test_adding_the_same_source_twice_to_a_cluster_is_refused(admin_client: Client, cluster: Cluster) -> None:
    data = change_form(cluster)
    data.update(
        {
            "sources-TOTAL_FORMS": "2",
            "sources-1-cluster": str(cluster.pk),
            "sources-1-backend": "spark-history",
            "sources-1-params": json.dumps({"url": "http://history:18080/"}),
            "sources-1-enabled": "on",
            "sources-1-poll_interval_s": "10",
            "sources-1-safety_margin_s": "60",
        }
    )
    response = admin_client.post(change_url(cluster), data)
    assert response.status_code == 200
    assert "already has this source" in response.content.decode()
    assert cluster.sources.count() == 1
