"""The history page's "Which stage was the outlier?" section (webui/templates/webui/_stage_anomalies.html)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse

from analyzer.stages.services import localize_template
from tests.factories import NOW, make_recurring_runs, set_stage_hosts

pytestmark = pytest.mark.django_db

TEMPLATE = "spark:airflow:etl/aggregate"
NAMES = ("csv at NativeMethodAccessorImpl.java:0", "groupByKey at /jobs/etl.py:42", "count at etl.py:57")
SCRIPT = "<script>alert('XSS')</script>"


def durations(n: int, *, seed: int = 3, noise: float = 0.05, slow: dict[int, float] | None = None) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(n):
        size = rng.normal(0, noise)
        row = [b * float(np.exp(size + rng.normal(0, noise / 2))) for b in (40_000.0, 80_000.0, 100_000.0)]
        row[2] *= (slow or {}).get(run, 1.0)
        rows.append(row)
    return rows


def history(client: Client, **params: str) -> str:
    response = client.get(reverse("webui:history"), params)
    assert response.status_code == 200
    return response.content.decode()


def section(html: str) -> str:
    match = re.search(r'<section id="stage-anomalies".*?</section>', html, re.S)
    assert match, "no stage anomalies section"
    return match.group(0)


def test_the_template_history_names_the_outlier_stage_and_links_its_runs_with_how_much_slower(client: Client) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES, job_def_id="etl/aggregate")
    localize_template(TEMPLATE, None)

    text = section(history(client, template=TEMPLATE))

    assert "Which stage was the outlier?" in text
    assert re.search(
        r"<strong>Stage 2</strong> \(<span class=\"mono\">count at etl.py:57</span>\) is the outlier in runs", text
    )
    for run in (runs[3], runs[8]):
        assert f'href="{reverse("webui:app_report", args=[run.pk])}" title="{run.app_id}"' in text
    assert re.search(r"\(\d\.\d\u00d7 its usual\)", text)  # a multiplication sign
    assert "over the 15 % that triggers a look" in text
    assert "cosine 0." in text
    assert "Runs that ended since" not in text
    # The job history shows the same result: its runs' template.
    assert "Stage 2</strong> (" in section(history(client, job_def_id="etl/aggregate"))


def test_a_category_under_alpha_says_how_much_runs_vary_against_the_threshold(client: Client) -> None:
    make_recurring_runs(TEMPLATE, durations(10, noise=0.02), names=NAMES)
    localize_template(TEMPLATE, None)

    text = section(history(client, template=TEMPLATE))

    assert re.search(
        r'<p class="empty" role="status">Not analysed: run times vary \d %, under the 15 % that trig', text
    )
    assert re.search(r"Run times vary \d %, under the 15 % that triggers a look", text)  # the category's row


def test_a_result_older_than_the_newest_run_says_when_it_was_computed(client: Client) -> None:
    make_recurring_runs(TEMPLATE, durations(9), names=NAMES)
    localize_template(TEMPLATE, None, now=NOW)
    make_recurring_runs(TEMPLATE, durations(1), names=NAMES, end_time=NOW + dt.timedelta(hours=3))

    text = section(history(client, template=TEMPLATE))

    assert "Computed <time" in text
    assert NOW.strftime("%Y-%m-%d %H:%M") in text
    assert "Runs that ended since" in text
    assert "are not in it yet" in text


def test_not_computed_yet_says_how_and_how_many_runs_are_needed(client: Client) -> None:
    make_recurring_runs(TEMPLATE, durations(3), names=NAMES)

    text = section(history(client, template=TEMPLATE))

    assert "Not computed yet: 3 successful runs, at least 8 are needed." in text
    assert "manage.py localize_stages --template" in text
    assert "hourly task" in text


def test_the_flow_history_shows_one_line_per_job_template_linked_to_its_history(client: Client) -> None:
    flow: dict[str, Any] = {"flow_def_id": "etl", "scheduler": "airflow"}
    make_recurring_runs(TEMPLATE, durations(12, slow={5: 3.0}), names=NAMES, flow_exec_id="etl/r", **flow)
    make_recurring_runs("spark:airflow:etl/load", durations(4, seed=9), names=NAMES, flow_exec_id="etl/r", **flow)
    localize_template(TEMPLATE, None)

    text = section(history(client, flow_def_id="etl"))

    assert f'href="{reverse("webui:history")}?template=spark%3Aairflow%3Aetl/aggregate"' in text
    assert re.search(r"is the outlier in run\s", text)
    assert "stage-categories" not in text  # the categories table is on the job's own history
    assert "spark:airflow:etl/load</span>: Not computed yet: 4 successful runs" in text


def test_hostile_stage_names_and_templates_are_escaped(client: Client) -> None:
    hostile_template = f"tmpl{SCRIPT}"
    make_recurring_runs(hostile_template, durations(12, slow={2: 3.0}), names=(SCRIPT, SCRIPT, SCRIPT))
    localize_template(hostile_template, None)

    html = history(client, template=hostile_template)

    assert SCRIPT not in html
    assert "&lt;script&gt;alert(&#x27;XSS&#x27;)&lt;/script&gt;" in section(html)


def test_runs_without_a_template_show_no_section(client: Client) -> None:
    make_recurring_runs("", durations(3), names=NAMES, job_def_id="adhoc/job")

    html = history(client, job_def_id="adhoc/job")

    assert "Runs (3)" in html
    assert 'id="stage-anomalies"' not in html


def spread_stage_2(runs: list[Any], slow_host_in: dict[int, str], everywhere: set[int]) -> None:
    """Stage 2 of each run as three tasks on each of four hosts; in run i, host slow_host_in[i] 4x the others, or
    every host 3x in the runs of ``everywhere``."""
    hosts = ("node-1", "node-2", "node-3", slow_host_in.get(3, "node-4"))
    for i, run in enumerate(runs):
        per_host = {
            h: [1_000.0 * (4.0 if slow_host_in.get(i) == h else 3.0 if i in everywhere else 1.0)] * 3 for h in hosts
        }
        set_stage_hosts(run, 2, per_host)


def test_the_sentence_names_the_slow_host_of_one_run_and_says_every_host_for_another(client: Client) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    spread_stage_2(runs, {3: "node-4"}, everywhere={8})
    localize_template(TEMPLATE, None)

    text = section(history(client, template=TEMPLATE))

    link_3 = f'<a href="{reverse("webui:app_report", args=[runs[3].pk])}" title="{runs[3].app_id}">the run of '
    assert re.search(
        re.escape(link_3) + r"[^<]+</a> its tasks on host <span class=\"mono host-name\">node-4</span> took "
        r"4\.0\u00d7 the others'",
        text,
    )
    assert re.search(r"</a> it was slow on every host", text)


def test_a_stage_slow_on_every_host_in_every_outlier_run_says_so_once(client: Client) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    spread_stage_2(runs, {}, everywhere={3, 8})
    localize_template(TEMPLATE, None)

    text = section(history(client, template=TEMPLATE))

    assert "; in each it was slow on every host." in text
    assert "its tasks on host" not in text
    assert "\u00d7 its usual, slow on every host</span>" in text  # the categories table too


def test_hostile_host_names_are_escaped(client: Client) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0}), names=NAMES)
    spread_stage_2(runs, {3: SCRIPT}, everywhere=set())
    localize_template(TEMPLATE, None)

    html = history(client, template=TEMPLATE)

    assert SCRIPT not in html
    assert '<span class="mono host-name">&lt;script&gt;alert(&#x27;XSS&#x27;)&lt;/script&gt;</span> took' in section(
        html
    )


def test_a_named_host_that_is_usually_slower_shows_its_usual(client: Client) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0}), names=NAMES)
    hosts = ("node-1", "node-2", "node-3", "node-4")
    for i, run in enumerate(runs):
        usual = {"node-4": 2.0 * (4.0 if i == 3 else 1.0)}
        set_stage_hosts(run, 2, {h: [1_000.0 * usual.get(h, 1.0)] * 3 for h in hosts})
    localize_template(TEMPLATE, None)

    text = section(history(client, template=TEMPLATE))

    assert "node-4</span> took 8.0\u00d7 the others' (usually 2.0\u00d7)." in text
