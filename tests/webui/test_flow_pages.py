"""Flow execution, history, compare and user pages (PostgreSQL): ids with slashes and markup stay data."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape
from factories import NOW, add_finding, make_app
from pytest_django import DjangoAssertNumQueries

from analyzer.models import AnalyzedApp, Severity

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
AIRFLOW_RUN = "etl_daily/scheduled__2026-03-01T00:00:00+00:00"


def page(client: Client, url: str, data: dict[str, str] | None = None) -> str:
    response = client.get(url, data)
    assert response.status_code == 200, (url, data)
    return response.content.decode()


def flow_app(run: str, job: str, minute: int, **fields: object) -> AnalyzedApp:
    values: dict[str, object] = {
        "flow_def_id": "etl_daily",
        "flow_exec_id": run,
        "job_def_id": f"etl_daily/{job}",
        "job_name": job,
        "start_time": NOW + dt.timedelta(minutes=minute),
        "end_time": NOW + dt.timedelta(minutes=minute + 10),
        "runtime_ms": 600_000,
    }
    values.update(fields)
    return make_app(**values)


# Flow execution page


def test_the_flow_page_lists_every_app_of_the_run_in_start_order_with_totals(client: Client) -> None:
    second = flow_app(AIRFLOW_RUN, "load", 20, used_gb_hours=2.0, wasted_gb_hours=0.5, score=8, severity=3)
    first = flow_app(AIRFLOW_RUN, "extract", 0, used_gb_hours=1.0, wasted_gb_hours=0.25, score=4, severity=2)
    flow_app("another run", "extract", 0)
    add_finding(second, "spark.executor_gc", Severity.SEVERE)

    html = page(client, "/flows/run/", {"flow_exec_id": AIRFLOW_RUN})

    listed = html[html.index('id="apps-heading"') :]
    assert re.findall(r'class="app-id">([^<\s]+)', listed) == [first.app_id, second.app_id]
    assert "3.000 GB·h" in html
    assert "0.750 GB·h" in html
    assert "30 min 0 s" in html  # wall time: first start to last end
    assert "spark.executor_gc" in html
    assert 'href="/history/?flow_def_id=etl_daily"' in html
    assert 'href="/history/?job_def_id=etl_daily/load"' in html


def test_an_unknown_flow_execution_is_a_404_page_and_a_missing_id_a_400(client: Client) -> None:
    missing = client.get("/flows/run/", {"flow_exec_id": "nope"})
    absent = client.get("/flows/run/")

    assert missing.status_code == 404
    assert "nope" in missing.content.decode()
    assert absent.status_code == 400
    assert "flow_exec_id" in absent.content.decode()


def test_a_scheduler_url_that_is_not_http_is_never_a_link(client: Client) -> None:
    flow_app("r1", "a", 0, flow_exec_url="javascript:alert(1)")

    html = page(client, "/flows/run/", {"flow_exec_id": "r1"})

    assert 'href="javascript' not in html


# Histories and the severity strip


def test_a_job_history_shows_the_latest_runs_and_a_strip_cell_per_heuristic_and_run(client: Client) -> None:
    runs = [flow_app(f"run {i}", "load", 60 * i, score=i, severity=i) for i in range(3)]
    add_finding(runs[0], "spark.gc", Severity.LOW)
    add_finding(runs[2], "spark.gc", Severity.CRITICAL)
    add_finding(runs[2], "spark.skew", Severity.MODERATE)

    html = page(client, "/history/", {"job_def_id": "etl_daily/load", "limit": "2"})
    strip = html[html.index('class="strip"') : html.index("</table>")]
    gc_row = strip[strip.index(">spark.gc<") :].split("</tr>")[0]
    skew_row = strip[strip.index(">spark.skew<") :].split("</tr>")[0]

    assert runs[0].app_id not in html  # the limit keeps the latest two
    # Colour is never the only cue: each cell names its severity, and a missing finding says so.
    assert re.findall(r'class="visually-hidden">(Low|Critical|No finding)<', gc_row) == ["No finding", "Critical"]
    assert re.findall(r'class="visually-hidden">(Moderate|No finding)<', skew_row) == ["No finding", "Moderate"]
    assert f'href="/apps/{runs[2].pk}/"' in gc_row  # a cell opens that run's report
    assert "Job history" in html


def test_a_flow_history_has_one_row_per_execution_linking_to_its_flow_page(client: Client) -> None:
    flow_app("r1", "a", 0)
    flow_app("r1", "b", 10)
    flow_app("r2", "a", 60, severity=Severity.SEVERE)

    html = page(client, "/history/", {"flow_def_id": "etl_daily"})

    assert 'href="/flows/run/?flow_exec_id=r1"' in html
    assert 'href="/flows/run/?flow_exec_id=r2"' in html
    assert "Flow history" in html


def test_a_template_history_lists_the_apps_of_that_template(client: Client) -> None:
    app = make_app(template="nightly-report")
    make_app(template="other")

    html = page(client, "/history/", {"template": "nightly-report"})

    assert app.app_id in html
    assert "Template history" in html


@pytest.mark.parametrize(
    "query",
    [{}, {"job_def_id": "a", "template": "b"}, {"job_def_id": "a", "limit": "0"}, {"job_def_id": "a", "limit": "x"}],
)
def test_a_history_without_exactly_one_key_or_with_a_bad_limit_is_a_400_page(client: Client, query: dict) -> None:
    response = client.get("/history/", query)

    assert response.status_code == 400
    assert "Cannot show a history" in response.content.decode()


def test_a_history_of_nothing_says_there_are_no_runs(client: Client) -> None:
    assert "No analyzed runs yet" in page(client, "/history/", {"job_def_id": "never ran"})


# Compare


def test_compare_pairs_jobs_and_marks_differences_in_words(client: Client) -> None:
    base = flow_app("r1", "extract", 0, score=2, severity=Severity.LOW, wasted_gb_hours=1.0)
    same_a = flow_app("r1", "load", 20, score=0)
    flow_app("r1", "gone", 40)
    worse = flow_app("r2", "extract", 0, score=9, severity=Severity.SEVERE, wasted_gb_hours=3.0)
    same_b = flow_app("r2", "load", 20, score=0)
    flow_app("r2", "new", 40)
    add_finding(base, "spark.gc", Severity.LOW)
    add_finding(worse, "spark.gc", Severity.SEVERE)

    html = page(client, "/compare/", {"a": "r1", "b": "r2"})
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r'<tr class="\w+">\s*<th scope="row"[^>]*>\s*<a[^>]*>(\w+)<.*?</tr>', html, re.S)
    }

    assert "Changed" in rows["extract"]
    assert "▲ worse" in rows["extract"]
    assert "+2.000 GB·h" in rows["extract"]
    assert "spark.gc" in rows["extract"]
    assert 'class="unchanged"' in rows["load"]
    assert "Same" in rows["load"]
    assert "Only in A" in rows["gone"]
    assert "Only in B" in rows["new"]
    assert f"/apps/{same_a.pk}/" in html
    assert f"/apps/{same_b.pk}/" in html


def test_compare_makes_the_earlier_run_the_baseline_whatever_the_order_asked(client: Client) -> None:
    flow_app("yesterday", "load", 0, score=2, severity=Severity.LOW)
    flow_app("today", "load", 24 * 60, score=9, severity=Severity.SEVERE)

    asked_today_first = page(client, "/compare/", {"a": "today", "b": "yesterday"})
    asked_yesterday_first = page(client, "/compare/", {"a": "yesterday", "b": "today"})

    for html in (asked_today_first, asked_yesterday_first):
        sides = html[html.index('class="facts compare-sides"') : html.index("</dl>")]
        assert sides.index("flow_exec_id=yesterday") < sides.index("flow_exec_id=today")
        assert "A is the earlier run" in html
        score = html[html.index('<th scope="row">Score</th>') :].split("</tr>")[0]
        assert "▲ worse" in score  # today's higher score is worse than yesterday's, not better
    # The same page but for the header's sign-in link, which brings the visitor back to the URL as asked.
    assert _without_sign_in(asked_today_first) == _without_sign_in(asked_yesterday_first)


def _without_sign_in(html: str) -> str:
    return re.sub(r'href="/login/\?next=[^"]*"', 'href="/login/"', html)


def test_the_flow_page_links_to_a_comparison_with_the_previous_run_of_the_same_flow(client: Client) -> None:
    flow_app("day 1", "extract", 0)
    flow_app("day 1", "late retry", 47 * 60)  # day 1's run still started first: runs go by their first start
    flow_app("day 2", "extract", 24 * 60)
    flow_app("day 2", "load", 24 * 60 + 30)
    flow_app("day 2.5 elsewhere", "extract", 36 * 60, flow_def_id="another_flow")
    flow_app("day 3", "extract", 48 * 60)

    latest = page(client, "/flows/run/", {"flow_exec_id": "day 3"})
    first = page(client, "/flows/run/", {"flow_exec_id": "day 1"})

    assert 'href="/compare/?a=day%202&amp;b=day%203">Compare with the previous run</a>' in latest
    assert "Compare with the previous run" not in first  # nothing ran before it
    assert 'placeholder="e.g. day 2"' in latest  # the input shows what to type


def test_compare_names_the_missing_run_in_a_404_and_needs_both_ids(client: Client) -> None:
    flow_app("r1", "a", 0)

    missing = client.get("/compare/", {"a": "r1", "b": "typo"})
    incomplete = client.get("/compare/", {"a": "r1"})

    assert missing.status_code == 404
    assert "typo" in missing.content.decode()
    assert incomplete.status_code == 400


# User page


def test_the_user_page_totals_the_users_apps_in_the_chosen_period(client: Client) -> None:
    now = timezone.now()
    make_app(user="bo b", end_time=now - dt.timedelta(days=1), used_gb_hours=2.0, wasted_gb_hours=1.0)
    make_app(user="bo b", end_time=now - dt.timedelta(days=2), used_gb_hours=3.0, wasted_gb_hours=0.5)
    old = make_app(user="bo b", end_time=now - dt.timedelta(days=20), used_gb_hours=100.0)
    make_app(user="alice", end_time=now, used_gb_hours=50.0)

    week = page(client, "/users/", {"user": "bo b"})
    month = page(client, "/users/", {"user": "bo b", "days": "30"})

    assert "5.000 GB·h" in week
    assert "1.500 GB·h" in week
    assert old.app_id not in week
    assert "105.000 GB·h" in month
    assert old.app_id in month


def test_the_user_page_refuses_a_missing_user_or_an_unknown_period(client: Client) -> None:
    assert client.get("/users/").status_code == 400
    assert client.get("/users/", {"user": "bob", "days": "9999"}).status_code == 400


# Links, escaping and query counts


def test_the_app_report_links_to_its_flow_run_job_and_template_history_and_user(client: Client) -> None:
    app = flow_app(AIRFLOW_RUN, "load", 0, template="tmpl", user="a&b")

    html = page(client, f"/apps/{app.pk}/")

    assert 'href="/flows/run/?flow_exec_id=etl_daily/scheduled__2026-03-01T00%3A00%3A00%2B00%3A00"' in html
    assert 'href="/history/?job_def_id=etl_daily/load"' in html
    assert 'href="/history/?flow_def_id=etl_daily"' in html
    assert 'href="/history/?template=tmpl"' in html
    assert 'href="/users/?user=a%26b"' in html


def test_hostile_ids_and_names_are_shown_as_text_on_every_page(client: Client) -> None:
    hostile = {"flow_def_id": SCRIPT, "job_def_id": SCRIPT, "job_name": SCRIPT, "name": SCRIPT, "template": SCRIPT}
    app = flow_app(SCRIPT, "x", 0, user=SCRIPT, **hostile)
    flow_app("other", "x", 0, **hostile)
    add_finding(app, "spark.gc", Severity.SEVERE)

    pages = [
        page(client, "/flows/run/", {"flow_exec_id": SCRIPT}),
        page(client, "/history/", {"job_def_id": SCRIPT}),
        page(client, "/history/", {"flow_def_id": SCRIPT}),
        page(client, "/history/", {"template": SCRIPT}),
        page(client, "/compare/", {"a": SCRIPT, "b": "other"}),
        page(client, "/users/", {"user": SCRIPT, "days": "365"}),
        client.get("/flows/run/", {"flow_exec_id": SCRIPT + "x"}).content.decode(),
    ]

    for html in pages:
        assert SCRIPT not in html
        assert escape(SCRIPT) in html


def test_each_page_makes_a_bounded_number_of_queries_whatever_the_number_of_apps(
    client: Client, django_assert_max_num_queries: DjangoAssertNumQueries
) -> None:
    for i in range(12):
        for run in ("r1", "r2"):
            app = flow_app(run, f"job{i}", i, user="pat", end_time=timezone.now())
            add_finding(app, "spark.gc", i % 5)

    for url, data in [
        ("/flows/run/", {"flow_exec_id": "r1"}),
        ("/history/", {"job_def_id": "etl_daily/job3"}),
        ("/history/", {"flow_def_id": "etl_daily"}),
        ("/compare/", {"a": "r1", "b": "r2"}),
        ("/users/", {"user": "pat"}),
    ]:
        with django_assert_max_num_queries(4):
            page(client, url, data)


def test_an_id_with_a_nul_character_is_a_400_page_not_a_database_error(client: Client) -> None:
    assert client.get("/flows/run/", {"flow_exec_id": "a\x00b"}).status_code == 400
    assert client.get("/history/", {"job_def_id": "a\x00b"}).status_code == 400


def test_the_app_list_filtered_by_user_links_to_that_users_totals(client: Client) -> None:
    make_app(user="pat")

    html = page(client, "/apps/", {"user": "pat"})

    assert 'href="/users/?user=pat"' in html


def test_a_user_name_in_the_app_list_and_dashboard_opens_the_users_page(client: Client) -> None:
    make_app(user="dora <b>")

    for url in ("/apps/", "/"):
        page = client.get(url).content.decode()
        assert 'href="/users/?user=dora%20%3Cb%3E"' in page, url
