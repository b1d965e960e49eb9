"""The Sources page (PostgreSQL): each cluster's sources, how far their polling got, what failed; never a secret."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from django.utils.html import escape
from pytest_django import DjangoAssertNumQueries

from analyzer.ingestion.sources import MASK, cluster_add, source_describe
from analyzer.models import AppClaim, ClaimState, Cluster, Source
from webui.presenters.sources import source_params_shown

pytestmark = pytest.mark.django_db

PASSWORD = "p4ss-W0rd-xyz"
TOKEN = "t0ken-abc-123"
SCRIPT = "<script>alert('XSS')</script>"


def page(client: Client) -> str:
    response = client.get("/sources/")
    assert response.status_code == 200
    return response.content.decode()


def prod() -> Cluster:
    return cluster_add(
        "prod",
        spark_history="http://history.example.com:18080",
        resourcemanagers=["http://rm1:8088", "http://rm2:8088"],
        http_params={"auth": "basic", "username": "hindsight", "password": PASSWORD},
    )


def ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def card(html: str, backend_label: str) -> str:
    """The part of the page about the source with this backend label."""
    start = html.index(f">{backend_label} <")
    end = html.find('<article class="source-card', start)
    return html[start : end if end != -1 else len(html)]


def test_the_page_lists_every_cluster_and_source_with_their_masked_parameters(client: Client) -> None:
    prod()
    cluster_add("staging", eventlog_dirs=["/mnt/staging/events"])

    html = page(client)

    assert re.search(r"<h2[^>]*>prod</h2>", html)
    assert re.search(r"<h2[^>]*>staging</h2>", html)
    for label in ("Spark History Server", "YARN ResourceManager", "Spark event-log directory"):
        assert f">{label} <" in html
    assert "http://history.example.com:18080" in html
    assert "http://rm1:8088, http://rm2:8088" in html
    assert "/mnt/staging/events" in html
    assert MASK in html
    assert PASSWORD not in html


def test_a_source_shows_its_polling_state_checkpoint_lag_and_apps_behind(client: Client) -> None:
    cluster = prod()
    history = cluster.sources.get(backend="spark-history")
    now = timezone.now()
    history.checkpoint_ms = ms(now - dt.timedelta(minutes=3))
    history.last_poll_at = history.last_success_at = now - dt.timedelta(seconds=5)
    history.poll_interval_s = 30
    history.save()
    oldest = now - dt.timedelta(hours=2)
    AppClaim.objects.create(
        cluster=cluster, source=history, app_id="a1", state=ClaimState.RETRY, finished_ms=ms(oldest)
    )
    AppClaim.objects.create(
        cluster=cluster,
        source=history,
        app_id="a2",
        state=ClaimState.CLAIMED,
        finished_ms=ms(now - dt.timedelta(minutes=9)),
    )
    AppClaim.objects.create(cluster=cluster, source=history, app_id="a3", state=ClaimState.DONE, finished_ms=1)

    section = card(page(client), "Spark History Server")

    assert "Checkpoint</dt>" in section
    assert (now - dt.timedelta(minutes=3)).strftime("%Y-%m-%d %H:%M") in section
    assert re.search(r"3 min [0-9]+ s behind now", section)
    assert re.search(r"Apps behind</dt><dd>2 ", section)
    assert re.search(rf"oldest ended <time [^>]*>{oldest.strftime('%Y-%m-%d %H:%M:%S')}<", section)
    assert "30.0 s" in section  # poll interval
    assert ">ok<" in section  # the state is a word, not only a colour


def test_failed_apps_are_counted_and_the_latest_five_shown_newest_first_with_their_errors(client: Client) -> None:
    cluster = prod()
    history = cluster.sources.get(backend="spark-history")
    now = timezone.now()
    for n in range(7):
        AppClaim.objects.create(
            cluster=cluster,
            source=history,
            app_id=f"application_1_{n:04d}",
            state=ClaimState.FAILED,
            tries=3,
            finished_at=now - dt.timedelta(minutes=10 - n),
            last_error=f"404 for log {n}",
        )

    section = card(page(client), "Spark History Server")

    shown = re.findall(r'class="app-id">(application_1_\d+)', section)
    assert shown == [f"application_1_{n:04d}" for n in (6, 5, 4, 3, 2)]
    assert re.search(r"Failed to fetch</dt><dd><strong[^>]*>7<", section)
    assert "404 for log 6" in section
    assert "Showing the latest 5 of 7." in section


def test_a_failed_poll_shows_its_error_and_an_error_state(client: Client) -> None:
    cluster = prod()
    Source.objects.filter(cluster=cluster, backend="yarn-rm").update(last_error="RM answered 503: standby")

    section = card(page(client), "YARN ResourceManager")

    assert "Last poll failed" in section
    assert "RM answered 503: standby" in section
    assert ">error<" in section


def test_staff_get_a_link_to_each_failed_claim_in_the_admin_and_others_only_its_app_id(client: Client) -> None:
    cluster = prod()
    history = cluster.sources.get(backend="spark-history")
    claim = AppClaim.objects.create(
        cluster=cluster, source=history, app_id="application_1_0042", state=ClaimState.FAILED, last_error="gone"
    )
    link = f'href="/admin/analyzer/appclaim/{claim.pk}/change/"'

    anonymous = page(client)
    client.force_login(User.objects.create_user("ops", is_staff=True))
    staff = page(client)

    assert "application_1_0042" in anonymous
    assert link not in anonymous
    assert link in staff


def test_secrets_are_never_on_the_page_even_in_stored_errors(client: Client) -> None:
    cluster = cluster_add("prod", spark_history="http://history:18080", http_params={"auth": "bearer", "token": TOKEN})
    history = cluster.sources.get()
    # Written around poll_failed, which masks: the page must not rely on every writer having done so.
    Source.objects.filter(pk=history.pk).update(
        last_error=f"401 with token {TOKEN} from http://admin:{PASSWORD}@history:18080/"
    )
    AppClaim.objects.create(
        cluster=cluster, source=history, app_id="a1", state=ClaimState.FAILED, last_error=f"bearer {TOKEN} refused"
    )

    html = page(client)

    assert TOKEN not in html
    assert PASSWORD not in html
    assert f"401 with token {MASK} from http://{MASK}@history:18080/" in html
    assert f"bearer {MASK} refused" in html


def test_hostile_cluster_names_errors_and_parameters_are_escaped(client: Client) -> None:
    cluster = Cluster.objects.create(name=SCRIPT)  # bypasses the slug check, as a raw database write could
    source = Source.objects.create(
        cluster=cluster,
        backend="eventlog-dir",
        params={"paths": [f"/mnt/{SCRIPT}"], SCRIPT: '"><img src=x onerror=alert(1)>'},
        params_key="x",
        last_error=SCRIPT,
    )
    AppClaim.objects.create(
        cluster=cluster, source=source, app_id=SCRIPT, attempt_id="<b>", state=ClaimState.FAILED, last_error=SCRIPT
    )

    html = page(client)

    assert SCRIPT not in html
    assert "<img src=x" not in html
    assert "<b>" not in html
    assert escape(SCRIPT) in html


def test_the_page_shows_how_to_add_a_cluster_when_there_is_none(client: Client) -> None:
    html = page(client)

    assert "No clusters are configured" in html
    assert "manage.py sources add" in html


def test_the_navigation_links_to_the_sources_page_and_marks_it_current(client: Client) -> None:
    html = page(client)

    assert '<a href="/sources/" aria-current="page">Sources</a>' in html


def test_the_page_takes_the_same_number_of_queries_for_one_source_or_many(
    client: Client, django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    prod()
    with django_assert_num_queries(4):
        page(client)
    for name in ("b", "c", "d"):
        cluster = prod_like(name)
        AppClaim.objects.create(cluster=cluster, source=cluster.sources.first(), app_id="x", state=ClaimState.FAILED)

    with django_assert_num_queries(4):
        page(client)


def prod_like(name: str) -> Cluster:
    return cluster_add(name, spark_history=f"http://{name}:18080", eventlog_dirs=[f"/mnt/{name}"])


def test_the_shown_parameters_are_those_source_describe_gives_with_the_same_mask() -> None:
    cluster = prod()

    for source in cluster.sources.all():
        described = source_describe(source)["params"]
        shown = dict(source_params_shown(source))
        assert set(shown) == set(described)
        assert all((shown[name] == MASK) == (described[name] == MASK) for name in described)
