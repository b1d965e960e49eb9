"""The app search page (PostgreSQL): every filter narrows as the API's does, sorts, pages and keeps its URL."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape
from factories import NOW, add_finding, make_app

from analyzer.models import AnalyzedApp, AppType, Cluster, Severity

pytestmark = pytest.mark.django_db

HEURISTIC = "spark.executor_gc"  # a configured heuristic (the select lists only those)
OTHER_HEURISTIC = "spark.configuration"


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def listed(client: Client, url: str) -> list[str]:
    return re.findall(r'class="app-id">([^<\s]+)', page(client, url))


def search(client: Client, **params: Any) -> list[str]:
    return listed(client, f"/apps/?{urlencode(params)}")


# Each filter narrows to the apps having that value and keeps the rest out.


@pytest.mark.parametrize(
    ("params", "wanted", "unwanted"),
    [
        ({"queue": "etl"}, {"queue": "etl"}, {"queue": "etl-adhoc"}),
        ({"user": "bob"}, {"user": "bob"}, {"user": "bobby"}),
        ({"name": "ROLLUP"}, {"name": "nightly rollup"}, {"name": "clicks"}),
        ({"app_type": "MAPREDUCE"}, {"app_type": AppType.MAPREDUCE}, {"app_type": AppType.SPARK}),
        ({"job_type": "HadoopJava"}, {"job_type": "HadoopJava"}, {"job_type": "Spark"}),
        ({"template": "daily-etl"}, {"template": "daily-etl"}, {"template": "daily-etl-2"}),
        ({"min_severity": "severe"}, {"severity": Severity.SEVERE}, {"severity": Severity.MODERATE}),
        ({"severity": "2"}, {"severity": Severity.MODERATE}, {"severity": Severity.SEVERE}),
        ({"app_id": "job_1700000000000_0777"}, {"app_id": "application_1700000000000_0777"}, {}),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) and value else "",
)
def test_each_filter_lists_only_the_apps_with_that_value(
    client: Client, params: dict[str, str], wanted: dict[str, Any], unwanted: dict[str, Any]
) -> None:
    match = make_app(**wanted)
    make_app(**unwanted)

    assert search(client, **params) == [match.app_id]


def test_a_search_by_cluster_lists_only_that_clusters_apps(client: Client) -> None:
    prod, research = Cluster.objects.create(name="prod"), Cluster.objects.create(name="research")
    on_prod = make_app(cluster=prod)
    make_app(cluster=research)
    make_app(cluster=None)

    assert search(client, cluster="prod") == [on_prod.app_id]


def test_a_search_by_cluster_matches_its_name_exactly_and_keeps_the_other_filters(client: Client) -> None:
    prod = Cluster.objects.create(name="prod")
    Cluster.objects.create(name="prod-east")
    wanted = make_app(cluster=prod, user="pat")
    make_app(cluster=prod, user="sam")
    make_app(cluster=Cluster.objects.get(name="prod-east"), user="pat")
    make_app(cluster=None, user="pat")

    assert search(client, cluster="prod", user="pat") == [wanted.app_id]


def test_the_files_cluster_lists_only_apps_analyzed_without_a_cluster(client: Client) -> None:
    make_app(cluster=Cluster.objects.create(name="prod"))
    from_files = make_app(cluster=None)

    assert search(client, cluster="(files)") == [from_files.app_id]


def test_an_unknown_cluster_is_reported_and_ignored(client: Client) -> None:
    make_app()

    html = page(client, "/apps/?cluster=nowhere")

    assert "Some filters were ignored" in html
    assert len(re.findall(r'class="app-id"', html)) == 1


def test_the_quick_search_box_still_finds_by_id_user_or_name(client: Client) -> None:
    by_id = make_app(app_id="application_1_4242")
    by_user = make_app(user="carol")
    by_name = make_app(name="for carol")
    make_app(user="erin", name="y")

    assert set(search(client, q="carol")) == {by_user.app_id, by_name.app_id}
    assert search(client, q="job_1_4242") == [by_id.app_id]


# Flow and job ids: exact when an app has that id, else by prefix.


@pytest.mark.parametrize("field", ["flow_def_id", "flow_exec_id", "job_def_id"])
def test_an_id_that_exists_matches_exactly_and_not_the_longer_ids_it_begins(client: Client, field: str) -> None:
    exact = make_app(**{field: "etl.daily"})
    make_app(**{field: "etl.daily.backfill"})

    assert search(client, **{field: "etl.daily"}) == [exact.app_id]


@pytest.mark.parametrize("field", ["flow_def_id", "flow_exec_id", "job_def_id"])
def test_an_id_no_app_has_matches_every_id_starting_with_it(client: Client, field: str) -> None:
    first = make_app(**{field: "scheduled__2026-03-01T00:00:00"})
    second = make_app(**{field: "scheduled__2026-03-01T06:00:00"})
    make_app(**{field: "manual__2026-03-01T00:00:00"})
    make_app(**{field: "x_scheduled__2026-03-01"})  # contains it, does not start with it

    assert set(search(client, **{field: "scheduled__2026-03-01"})) == {first.app_id, second.app_id}


def test_a_prefix_with_like_wildcards_matches_them_literally(client: Client) -> None:
    make_app(flow_exec_id="run_1")
    literal = make_app(flow_exec_id="50%_done_1")

    assert search(client, flow_exec_id="50%") == [literal.app_id]
    assert search(client, flow_exec_id="run%") == []


# Severity of one heuristic


def test_a_heuristic_with_a_severity_lists_apps_that_heuristic_judged_at_least_that_severe(client: Client) -> None:
    wanted = make_app(severity=Severity.SEVERE)
    add_finding(wanted, HEURISTIC, Severity.SEVERE)
    mild = make_app(severity=Severity.CRITICAL)  # critical overall, but not by this heuristic
    add_finding(mild, HEURISTIC, Severity.LOW)
    add_finding(mild, OTHER_HEURISTIC, Severity.CRITICAL)
    other = make_app(severity=Severity.CRITICAL)
    add_finding(other, OTHER_HEURISTIC, Severity.CRITICAL)

    assert search(client, heuristic=HEURISTIC, min_severity="3") == [wanted.app_id]
    assert set(search(client, heuristic=HEURISTIC)) == {wanted.app_id, mild.app_id}
    assert set(search(client, min_severity="3")) == {wanted.app_id, mild.app_id, other.app_id}


def test_the_heuristic_select_lists_the_configured_heuristics_by_name_and_code(client: Client) -> None:
    html = page(client, "/apps/")

    assert re.search(rf'<option value="{re.escape(HEURISTIC)}">[^<]+\({re.escape(HEURISTIC)}\)</option>', html)


def test_an_unknown_heuristic_is_reported_and_the_rest_of_the_search_still_applies(client: Client) -> None:
    bob = make_app(user="bob")
    make_app(user="alice")

    html = page(client, "/apps/?heuristic=no.such&user=bob")

    assert "Some filters were ignored" in html
    assert re.findall(r'class="app-id">([^<\s]+)', html) == [bob.app_id]


# Time ranges


def _ms(moment: dt.datetime) -> str:
    return str(int(moment.timestamp() * 1000))


@pytest.mark.parametrize("form", ["iso", "epoch_ms", "datetime_local"])
def test_a_start_time_range_keeps_apps_started_inside_it(client: Client, form: str) -> None:
    early = make_app(start_time=NOW - dt.timedelta(days=3))
    inside = make_app(start_time=NOW - dt.timedelta(days=2))
    make_app(start_time=NOW - dt.timedelta(days=1))
    after, before = NOW - dt.timedelta(days=2, hours=1), NOW - dt.timedelta(days=1, hours=1)
    given = {
        "iso": (after.isoformat(), before.isoformat()),
        "epoch_ms": (_ms(after), _ms(before)),
        "datetime_local": (after.strftime("%Y-%m-%dT%H:%M"), before.strftime("%Y-%m-%dT%H:%M")),  # naive = UTC
    }[form]

    assert search(client, started_after=given[0], started_before=given[1]) == [inside.app_id]
    assert early.app_id in search(client, started_before=given[1])


@pytest.mark.parametrize("form", ["iso", "epoch_ms"])
def test_an_end_time_range_is_inclusive_at_its_start_and_exclusive_at_its_end(client: Client, form: str) -> None:
    edge = make_app(end_time=NOW - dt.timedelta(hours=2))
    make_app(end_time=NOW)
    after, before = NOW - dt.timedelta(hours=2), NOW
    given = (after.isoformat(), before.isoformat()) if form == "iso" else (_ms(after), _ms(before))

    assert search(client, finished_after=given[0], finished_before=given[1]) == [edge.app_id]


def test_a_time_from_the_url_shows_in_the_date_time_input_as_utc(client: Client) -> None:
    html = page(client, f"/apps/?finished_after={_ms(NOW)}&started_after=2026-03-01T13:30:00%2B01:00")

    assert re.search(r'type="datetime-local"[^>]*name="finished_after"[^>]*value="2026-03-01T12:00"', html)
    assert re.search(r'name="started_after"[^>]*value="2026-03-01T12:30"', html)


# Sorting: every sortable column both ways, missing values last either way.

NULLABLE = {
    "start_time": [NOW - dt.timedelta(days=2), NOW - dt.timedelta(days=1)],
    "end_time": [NOW - dt.timedelta(days=2), NOW - dt.timedelta(days=1)],
    "runtime_ms": [1_000, 9_000],
    "used_gb_hours": [1.5, 30.0],
    "wasted_gb_hours": [0.5, 12.0],
}
NOT_NULL = {"severity": [Severity.LOW, Severity.CRITICAL], "score": [3, 80], "user": ["ann", "zed"], "name": ["a", "b"]}


@pytest.mark.parametrize("column", [*NULLABLE, *NOT_NULL])
@pytest.mark.parametrize("descending", [False, True])
def test_each_column_sorts_both_ways_with_missing_values_last(client: Client, column: str, descending: bool) -> None:
    low, high = (make_app(**{column: value}) for value in (NULLABLE | NOT_NULL)[column])
    expected = [high.app_id, low.app_id] if descending else [low.app_id, high.app_id]
    if column in NULLABLE:
        missing = make_app(**{column: None})
        expected.append(missing.app_id)
    ordering = f"-{column}" if descending else column

    html = page(client, f"/apps/?ordering={ordering}")

    assert re.findall(r'class="app-id">([^<\s]+)', html) == expected
    state = "descending" if descending else "ascending"
    assert re.search(rf'<th scope="col" aria-sort="{state}"[^>]*><a href="\?ordering=-?{column}"', html)
    assert html.count(f'aria-sort="{state}"') == 1


def test_a_header_sorts_largest_first_then_reverses_and_keeps_the_filters(client: Client) -> None:
    make_app(user="pat")

    unsorted = page(client, "/apps/?user=pat&page=1")
    sorted_desc = page(client, "/apps/?user=pat&ordering=-wasted_gb_hours")

    assert 'aria-sort="none" class="num"><a href="?user=pat&amp;ordering=-wasted_gb_hours"' in unsorted
    assert 'aria-sort="descending" class="num"><a href="?user=pat&amp;ordering=wasted_gb_hours"' in sorted_desc
    assert 'aria-sort="descending"><a href="?user=pat&amp;page=1&amp;ordering=end_time"' not in unsorted  # page drops
    assert 'aria-sort="descending"><a href="?user=pat&amp;ordering=end_time"' in unsorted  # the default sort


def test_text_columns_sort_a_to_z_on_the_first_click(client: Client) -> None:
    make_app()

    html = page(client, "/apps/")

    assert 'aria-sort="none"><a href="?ordering=user"' in html
    assert 'aria-sort="none"><a href="?ordering=name"' in html


def test_an_unknown_sort_key_is_reported_and_the_default_order_kept(client: Client) -> None:
    older = make_app(end_time=NOW - dt.timedelta(days=1))
    newer = make_app(end_time=NOW)

    html = page(client, "/apps/?ordering=-metrics")

    assert "Some filters were ignored" in html
    assert re.findall(r'class="app-id">([^<\s]+)', html) == [newer.app_id, older.app_id]


# Paging, sharing and bad input


def test_a_search_matching_more_apps_than_the_count_cap_says_more_than_the_cap(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webui import views

    monkeypatch.setattr(views, "COUNT_CAP", 30)  # the real cap, 1,000 apps, is too many to create in a test
    for _ in range(31):
        make_app(user="pat")

    html = page(client, "/apps/?user=pat")

    assert "More than 30 apps match" in html
    assert "31 apps" not in html
    assert len(re.findall(r'class="app-id"', html)) == 25


def test_a_search_matching_exactly_the_count_cap_gives_the_exact_count(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from webui import views

    monkeypatch.setattr(views, "COUNT_CAP", 30)
    for _ in range(30):
        make_app(user="pat")

    html = page(client, "/apps/?user=pat")

    assert "30 apps match" in html
    assert "More than" not in html


def test_pages_keep_every_filter_and_the_sort(client: Client) -> None:
    for minutes in range(30):
        make_app(user="pat", queue="etl", runtime_ms=1000 + minutes)
    make_app(user="pat", queue="adhoc")

    first = page(client, "/apps/?user=pat&queue=etl&ordering=runtime_ms")
    second = page(client, "/apps/?user=pat&queue=etl&ordering=runtime_ms&page=2")

    assert 'href="?user=pat&amp;queue=etl&amp;ordering=runtime_ms&amp;page=2"' in first
    assert "30 apps match" in first
    runtimes = AnalyzedApp.objects.filter(queue="etl").order_by("runtime_ms").values_list("app_id", flat=True)
    assert re.findall(r'class="app-id">([^<\s]+)', second) == list(runtimes)[25:]


@pytest.mark.parametrize(
    "query",
    [
        "started_after=yesterday",
        "finished_before=9999999999999999",
        "started_before=2026-02-30T00:00",
        "min_severity=extreme",
        "app_type=FLINK",
        "ordering=%27%3B+drop+table",
        "user=" + "u" * 300,
        "name=%00",
        "q=%00",
        "page=abc",
        "flow_exec_id=%00",
    ],
)
def test_bad_input_is_reported_on_the_form_and_never_fails_the_page(client: Client, query: str) -> None:
    kept = make_app(queue="etl")
    make_app(queue="adhoc")

    html = page(client, f"/apps/?queue=etl&{query}")

    if not query.startswith("page="):
        assert "Some filters were ignored" in html
        assert 'class="error-text"' in html
    assert re.findall(r'class="app-id">([^<\s]+)', html) == [kept.app_id]


def test_a_hostile_value_is_shown_escaped_in_the_form_and_the_error(client: Client) -> None:
    hostile = '"><script>alert(1)</script>'

    html = page(client, f"/apps/?{urlencode({'user': hostile, 'started_after': hostile})}")

    assert "<script>alert(1)</script>" not in html
    assert escape(hostile) in html


def test_the_search_form_keeps_what_was_searched_and_opens_more_filters_when_one_is_set(client: Client) -> None:
    closed = page(client, "/apps/?user=alice")
    opened = page(client, "/apps/?user=alice&flow_def_id=dag_1&cluster=(files)")

    assert re.search(r'<details class="more-filters">', closed)
    assert re.search(r'<details class="more-filters" open>', opened)
    assert re.search(r'name="flow_def_id"[^>]*value="dag_1"', opened)
    assert '<option value="(files)" selected>' in opened


def test_every_search_input_has_a_label(client: Client) -> None:
    html = page(client, "/apps/?page=1")
    start = html.index('<form class="search-form"')
    form = html[start : html.index("</form>", start)]

    ids = re.findall(r'<(?:input|select)[^>]*\bid="([^"]+)"', form)
    assert len(ids) == 21
    for input_id in ids:
        assert f'<label for="{input_id}">' in form, input_id


# Query efficiency: a page costs the same number of queries whatever it lists.


def test_a_full_page_costs_no_more_queries_than_a_short_one(client: Client) -> None:
    cluster = Cluster.objects.create(name="prod")
    make_app(user="pat", cluster=cluster, flow_exec_id="run-1")
    url = "/apps/?user=pat&flow_exec_id=run&cluster=prod"

    with CaptureQueriesContext(connection) as short:
        page(client, url)
    for _ in range(40):
        make_app(user="pat", cluster=cluster, flow_exec_id="run-2")
    with CaptureQueriesContext(connection) as full:
        html = page(client, url)

    assert len(re.findall(r'class="app-id"', html)) == 25
    assert len(full) == len(short) == 4  # the clusters, the flow id probe, the count and the page


def test_a_search_with_every_filter_stays_within_a_handful_of_queries(
    client: Client, django_assert_max_num_queries: Any
) -> None:
    cluster = Cluster.objects.create(name="prod")
    for _ in range(30):
        app = make_app(user="pat", queue="etl", cluster=cluster, flow_def_id="dag", flow_exec_id="r", job_def_id="j")
        add_finding(app, HEURISTIC, Severity.SEVERE)
    query = urlencode(
        {
            "q": "pat",
            "user": "pat",
            "queue": "etl",
            "name": "job",
            "cluster": "prod",
            "app_type": "SPARK",
            "flow_def_id": "da",
            "flow_exec_id": "r",
            "job_def_id": "j",
            "heuristic": HEURISTIC,
            "min_severity": "severe",
            "started_after": "2020-01-01",
            "finished_before": _ms(NOW + dt.timedelta(days=1)),
            "analyzed": "30d",
            "ordering": "-wasted_gb_hours",
            "page": "2",
        }
    )

    with django_assert_max_num_queries(6):  # clusters, three id probes, the count, the page
        html = page(client, f"/apps/?{query}")

    assert "30 apps match" in html
    assert len(re.findall(r'class="app-id"', html)) == 5
