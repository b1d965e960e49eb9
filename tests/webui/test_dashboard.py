"""The dashboard's last 24 hours (PostgreSQL): per-cluster counts that link to their search, and the biggest wasters."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape
from factories import make_app

from analyzer.models import AnalyzedApp, Cluster, Severity
from analyzer.selectors import dashboard as dashboard_selectors

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def section(html: str, heading: str) -> str:
    start = html.index(f">{heading}</h2>")
    return html[start : html.index("</section>", start)]


def ended(hours_ago: float, **fields: Any) -> AnalyzedApp:
    """An app that ended ``hours_ago`` before the real now (the dashboard's window is the last 24 hours)."""
    end = timezone.now() - dt.timedelta(hours=hours_ago)
    return make_app(start_time=end - dt.timedelta(hours=1), end_time=end, **fields)


def count_link(html: str, href: str) -> str:
    match = re.search(rf'<a href="{re.escape(escape(href))}"[^>]*>([^<]+)</a>', html)
    assert match, href
    return match.group(1)


# Per cluster


def test_each_cluster_shows_its_apps_analyzed_needing_tuning_and_critical_in_the_last_day(client: Client) -> None:
    prod = Cluster.objects.create(name="prod")
    Cluster.objects.create(name="idle")
    for severity in (Severity.NONE, Severity.MODERATE, Severity.SEVERE, Severity.CRITICAL, Severity.CRITICAL):
        make_app(cluster=prod, severity=severity)
    old = make_app(cluster=prod, severity=Severity.CRITICAL)
    AnalyzedApp.objects.filter(pk=old.pk).update(analyzed_at=timezone.now() - dt.timedelta(days=2))
    make_app(cluster=None, severity=Severity.SEVERE)

    clusters = section(page(client, "/"), "Last 24 hours by cluster")

    assert count_link(clusters, "/apps/?cluster=prod&analyzed=24h") == "5"
    assert count_link(clusters, "/apps/?cluster=prod&analyzed=24h&min_severity=3") == "3"
    assert count_link(clusters, "/apps/?cluster=prod&analyzed=24h&min_severity=4") == "2"
    assert count_link(clusters, "/apps/?cluster=idle&analyzed=24h") == "0"
    assert count_link(clusters, "/apps/?cluster=%28files%29&analyzed=24h") == "1"
    assert count_link(clusters, "/apps/?cluster=%28files%29&analyzed=24h&min_severity=3") == "1"
    assert count_link(clusters, "/apps/?cluster=%28files%29&analyzed=24h&min_severity=4") == "0"
    assert clusters.index(">idle<") < clusters.index(">prod<") < clusters.index("Files (no cluster)")


def test_a_cluster_count_links_to_a_search_listing_exactly_those_apps(client: Client) -> None:
    prod = Cluster.objects.create(name="prod")
    needing = {make_app(cluster=prod, severity=level).app_id for level in (Severity.SEVERE, Severity.CRITICAL)}
    make_app(cluster=prod, severity=Severity.LOW)
    make_app(cluster=None, severity=Severity.CRITICAL)
    clusters = section(page(client, "/"), "Last 24 hours by cluster")
    href = "/apps/?cluster=prod&analyzed=24h&min_severity=3"

    listed = re.findall(r'class="app-id">([^<\s]+)', page(client, href))

    assert count_link(clusters, href) == "2"
    assert set(listed) == needing


def test_without_clusters_or_recent_apps_the_cluster_table_says_so(client: Client) -> None:
    html = page(client, "/")

    assert "No clusters are configured" in section(html, "Last 24 hours by cluster")


# Top users and flows


def test_top_users_are_ranked_by_wasted_gb_hours_of_the_last_day_with_used_and_app_counts(client: Client) -> None:
    ended(1, user="ann", used_gb_hours=10.0, wasted_gb_hours=4.0)
    ended(2, user="ann", used_gb_hours=5.0, wasted_gb_hours=1.0)
    ended(3, user="bob", used_gb_hours=50.0, wasted_gb_hours=30.0)
    ended(30, user="old", used_gb_hours=900.0, wasted_gb_hours=900.0)  # outside the window
    ended(4, user="", used_gb_hours=99.0, wasted_gb_hours=99.0)  # no user to name

    users = section(page(client, "/"), "Top users by waste")

    rows = re.findall(r'<a href="/users/\?user=(\w+)&amp;days=1">\1</a>', users)
    assert rows == ["bob", "ann"]
    ann = users[users.index("user=ann") :]
    assert re.search(r">2</td>\s*<td[^>]*>15\.000 GB·h</td>\s*<td[^>]*>5\.000 GB·h</td>", ann)


def test_top_flows_group_by_flow_definition_or_else_template_and_link_to_their_history(client: Client) -> None:
    ended(1, scheduler="airflow", flow_def_id="dag_sales", template="t1", used_gb_hours=8.0, wasted_gb_hours=6.0)
    ended(2, scheduler="airflow", flow_def_id="dag_sales", template="t2", used_gb_hours=2.0, wasted_gb_hours=1.0)
    ended(1, template="nightly-etl", used_gb_hours=20.0, wasted_gb_hours=10.0)
    ended(1, used_gb_hours=500.0, wasted_gb_hours=500.0)  # neither a flow nor a template: not a flow

    flows = section(page(client, "/"), "Top flows by waste")

    links = re.findall(r'<a href="(/history/\?[^"]+)" class="mono">([^<]+)</a>', flows)
    assert links == [
        ("/history/?template=nightly-etl", "nightly-etl"),
        ("/history/?flow_def_id=dag_sales", "dag_sales"),
    ]
    dag = flows[flows.index("dag_sales</a>") :]
    assert re.search(r">2</td>\s*<td[^>]*>10\.000 GB·h</td>\s*<td[^>]*>7\.000 GB·h</td>", dag)


def test_the_summary_sums_per_user_and_per_flow_in_the_period_by_end_or_else_by_analysis() -> None:
    now = timezone.now()
    ended(1, user="ann", flow_def_id="f", wasted_gb_hours=2.0, used_gb_hours=3.0)
    make_app(user="ann", flow_def_id="f", end_time=None, wasted_gb_hours=1.0, used_gb_hours=None)  # analyzed now

    summary = dashboard_selectors.dashboard_summary(now=now)

    assert summary.top_users == [dashboard_selectors.Offender("user", "ann", 2, 3.0, 3.0)]
    assert summary.top_flows == [dashboard_selectors.Offender("flow_def_id", "f", 2, 3.0, 3.0)]


def test_user_and_flow_names_holding_markup_are_shown_escaped_and_linked_encoded(client: Client) -> None:
    ended(1, user=SCRIPT, wasted_gb_hours=1.0)
    ended(1, flow_def_id=f"dag{SCRIPT}", wasted_gb_hours=1.0)
    ended(1, template='tmpl"><b>x</b>', wasted_gb_hours=1.0)
    Cluster.objects.create(name="prod")

    html = page(client, "/")

    assert SCRIPT not in html
    assert "<b>x</b>" not in html
    assert escape(SCRIPT) in section(html, "Top users by waste")
    assert "/users/?user=%3Cscript%3Ealert%281%29%3C/script%3E&amp;days=1" in html
    assert "/history/?flow_def_id=dag%3Cscript%3Ealert%281%29%3C/script%3E" in html
    assert escape(f"dag{SCRIPT}") in section(html, "Top flows by waste")


# Cost


def test_the_dashboard_costs_the_same_few_queries_whatever_the_number_of_apps(
    client: Client, django_assert_max_num_queries: Any
) -> None:
    clusters = [Cluster.objects.create(name=f"c{i}") for i in range(3)]
    for i in range(40):
        ended(i % 20, user=f"u{i % 7}", flow_def_id=f"f{i % 5}", cluster=clusters[i % 3], wasted_gb_hours=float(i))

    with django_assert_max_num_queries(8):  # severity counts, latest, worst, cluster counts, clusters, users, flows
        html = page(client, "/")

    assert len(re.findall(r'href="/users/\?user=', section(html, "Top users by waste"))) == 5
