"""The report's "Which executor is odd?" panel: ranking, selection by query parameters, escaping, old apps."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.test import Client
from factories import make_app, store_spark_app

from analyzer.models import AnalyzedApp, AppType

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'


def page(client: Client, app: AnalyzedApp, query: str = "") -> str:
    response = client.get(f"/apps/{app.pk}/{query}")
    assert response.status_code == 200
    return response.content.decode()


def panel(html: str) -> str:
    match = re.search(r'<section id="executor-anomaly".*?</section>', html, re.S)
    assert match, "no executor anomaly panel"
    return match.group(0)


def text(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))).strip()


def chart_data(html: str) -> dict:
    match = re.search(r'<script id="executor-anomaly-data" type="application/json">(.*?)</script>', html, re.S)
    assert match, "no chart data"
    return json.loads(match.group(1))


@pytest.fixture
def slow_gc() -> AnalyzedApp:
    return store_spark_app(executors=12, slow_executor="7", hosts=[f"worker-{i}.example" for i in range(12)])


def test_the_most_unusual_executor_is_selected_with_its_worst_feature_charted(client: Client, slow_gc: AnalyzedApp):
    html = page(client, slow_gc)
    shown = panel(html)
    words = text(shown)
    assert "Compared with the other executors" in words or "other executors of this app (its peers)" in words
    assert "Executor 7 on worker-6.example: its features, most unusual first" in words
    first_row = re.search(r"<tbody>\s*<tr[^>]*>(.*?)</tr>", shown, re.S)
    assert first_row
    assert ">7<" in first_row.group(1)
    assert "shown below" in first_row.group(1)
    assert "GC time per task" in words
    assert re.search(r"Executor 7 on host worker-6\.example: GC time per task \d+\.\d\u00d7 its peers' mean", words)
    data = chart_data(html)
    assert data["feature"] == "gc_time_ms"
    assert data["executor"] == "7"
    assert len(data["selected"]["t"]) == 20
    assert len(data["others"]["t"]) == 11 * 20
    assert min(data["selected"]["v"]) > max(data["others"]["v"])  # its tasks spend five times the GC
    assert 'data-chart="executor-anomaly"' in shown
    assert "charts.js" in html


def test_every_other_executor_is_a_link_that_selects_it_without_javascript(client: Client, slow_gc: AnalyzedApp):
    shown = panel(page(client, slow_gc))
    links = re.findall(r'href="\?executor=([^"#&]+)#executor-anomaly"', shown)
    assert sorted(links, key=int) == [str(i) for i in range(1, 13) if i != 7]
    html = page(client, slow_gc, "?executor=3")
    assert "Executor 3 on worker-2.example: its features" in text(panel(html))
    assert chart_data(html)["executor"] == "3"
    assert len(chart_data(html)["selected"]["t"]) == 20


def test_a_feature_link_charts_that_feature_for_the_selected_executor(client: Client, slow_gc: AnalyzedApp):
    shown = panel(page(client, slow_gc, "?executor=7"))
    assert 'href="?executor=7&amp;feature=input_bytes#executor-anomaly"' in shown
    html = page(client, slow_gc, "?executor=7&feature=input_bytes")
    data = chart_data(html)
    assert data["feature"] == "input_bytes"
    assert data["unit"] == "bytes"
    words = text(panel(html))
    assert "input per task" in words
    assert "MiB" in words  # bytes shown in plain units


def test_an_unknown_executor_or_feature_in_the_query_shows_the_default_with_a_note(
    client: Client, slow_gc: AnalyzedApp
):
    words = text(panel(page(client, slow_gc, f"?executor={SCRIPT}&feature=nope")))
    assert "is not ranked; showing the most anomalous one" in words
    assert "Executor 7 on worker-6.example" in words
    html = page(client, slow_gc, f"?executor={SCRIPT}")
    assert SCRIPT not in html


def test_hostile_executor_ids_and_hosts_are_escaped_in_the_panel_and_its_chart(client: Client):
    app = store_spark_app(
        executors=12,
        executor_ids=[SCRIPT, *[str(i) for i in range(2, 13)]],
        hosts=[IMG, *[f"h{i}" for i in range(2, 13)]],
        slow_executor=SCRIPT,
    )
    html = page(client, app)
    assert SCRIPT not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in panel(html)
    assert chart_data(html)["executor"] == SCRIPT  # json_script escapes it inside the script element
    assert "?executor=%3Cscript%3Ealert%281%29%3C%2Fscript%3E#executor-anomaly" not in panel(html)  # it is shown
    html = page(client, app, "?executor=2")
    assert "?executor=%3Cscript%3Ealert%281%29%3C%2Fscript%3E#executor-anomaly" in panel(html)


def test_an_app_stored_before_the_ranking_existed_says_it_was_not_computed(client: Client):
    old = make_app()
    words = text(panel(page(client, old)))
    assert "not computed for this app (analyzed before" in words


def test_a_small_app_says_it_was_compared_with_its_peers_for_want_of_a_reference(client: Client):
    app = store_spark_app(executors=4, slow_executor="2")
    words = text(panel(page(client, app)))
    assert "No template" in words or "no template" in words
    assert "compared to peers" in words


def test_a_reference_model_links_the_runs_it_used(client: Client):
    runs = [store_spark_app(executors=4, template="t", start_ms=1_772_000_000_000 + i * 3_600_000) for i in range(3)]
    app = store_spark_app(executors=4, template="t", start_ms=1_772_100_000_000, slow_executor="3")
    shown = panel(page(client, app))
    assert "too few to compare among themselves" in text(shown)
    for run in runs:
        assert f'href="/apps/{run.pk}/"' in shown
    assert "Reference runs mean ± std" in text(shown)


def test_a_local_mode_app_says_so_in_one_line_instead_of_a_panel(client: Client):
    app = store_spark_app(master="local[2]")
    html = page(client, app)
    assert '<section id="executor-anomaly"' not in html
    line = re.search(r'<p id="executor-anomaly"[^>]*>(.*?)</p>', html, re.S)
    assert line
    assert "local mode" in text(line.group(1))


def test_a_mapreduce_job_has_no_executor_panel(client: Client):
    job = make_app(app_type=AppType.MAPREDUCE)
    html = page(client, job)
    assert 'id="executor-anomaly"' not in html
