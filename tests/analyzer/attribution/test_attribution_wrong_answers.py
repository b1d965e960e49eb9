"""The wrong answers issue 16 found in the slowdown attribution, each as the product stores and serves it: retried
failures blamed on "More data", slow hosts blamed on "Data skew", a one-off job given a panel borrowed from other
jobs, a model above the production bar serving High, and harmless moves shown as making a run slower."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import numpy as np
import pytest
from attribution_history import GB, stored_run
from django.test import Client, override_settings
from factories import NOW, add_finding

from analyzer.attribution.schema import CauseEffect, Confidence, Explanation, FeatureEffect
from analyzer.attribution.selectors import app_attribution
from analyzer.attribution.services import attribution_train
from analyzer.models import AnalyzedApp, Cluster
from webui.presenters.attribution import described

pytestmark = pytest.mark.django_db

USUAL_QUANTILES = [1000.0, 1800.0, 2000.0, 2200.0, 3000.0]  # longest task 1.5x the median
SLOW_HOST_QUANTILES = [1000.0, 1800.0, 2000.0, 2400.0, 7000.0]  # 3.5x: tasks stretched on a slow host


def run(
    template: str,
    runtime_s: float,
    end: dt.datetime,
    cluster: Cluster,
    *,
    failed: int = 0,
    slow_host: bool = False,
) -> AnalyzedApp:
    """A run as the analysis stores it: ``num_tasks`` counts attempts (failed ones included); a slow host stretches
    the heaviest stage's longest tasks without giving them more bytes (read skew stays 1.1)."""
    metrics: dict[str, Any] = {
        "num_tasks": 100 + failed,
        "num_succeeded_tasks": 100,
        "slow_host_task_share": 0.45 if slow_host else 0.0,
        "host_cpu_ratio_spread": 0.05,
        "driver_idle_ms": 3000,
    }
    stage = {
        "num_failed_tasks": failed,
        "task_duration_quantiles": SLOW_HOST_QUANTILES if slow_host else USUAL_QUANTILES,
    }
    app = stored_run(
        template, runtime_s=runtime_s, input_bytes=GB, end=end, cluster=cluster, metrics=metrics, stage=stage
    )
    add_finding(app, "spark.task_skew", 1, observed={"max_read_skew": 1.1, "max_time_skew": 1.5})
    return app


@pytest.fixture
def trained() -> Cluster:
    """8 templates x 16 runs; in each, 2 runs retried 15-30 failed tasks and 2 ran on a slow host, both slower."""
    cluster = Cluster.objects.create(name="prod")
    rng = np.random.default_rng(3)
    for t in range(8):
        usual = 400.0 * (t + 1)
        for r in range(16):
            end = NOW - dt.timedelta(days=1 + r, minutes=5 * t)
            noise = float(rng.lognormal(0, 0.03))
            if r in (3, 11):
                failed = int(rng.integers(15, 31))
                run(f"job{t}", usual * (1 + 0.025 * failed) * noise, end, cluster, failed=failed)
            elif r in (6, 14):
                run(f"job{t}", usual * 1.6 * noise, end, cluster, slow_host=True)
            else:
                run(f"job{t}", usual * noise, end, cluster)
    attribution_train(days=30, now=NOW)
    return cluster


def test_a_run_with_many_failed_attempts_leads_with_failures_not_data_volume(trained: Cluster) -> None:
    app = run("job2", 1200 * 1.55, NOW - dt.timedelta(hours=1), trained, failed=22)
    answer = app_attribution(app)
    assert answer.explanation is not None, answer.reason
    causes = answer.explanation.causes
    assert causes[0].code == "failures"
    volume = next(c for c in causes if c.code == "data_volume")
    assert not volume.unusual
    assert next(m for m in volume.members if m.name == "num_tasks").value == 100  # successful tasks only


def test_task_duration_skew_without_byte_skew_leads_with_the_host_cause_not_data_skew(trained: Cluster) -> None:
    app = run("job5", 2400 * 1.6, NOW - dt.timedelta(hours=1), trained, slow_host=True)
    answer = app_attribution(app)
    assert answer.explanation is not None, answer.reason
    assert answer.explanation.causes[0].code == "host_health"
    skew = next(c for c in answer.explanation.causes if c.code == "skew")
    assert not skew.unusual


def test_a_template_with_too_few_runs_gets_no_panel_but_a_line_saying_how_many_it_has_and_needs(
    trained: Cluster, client: Client
) -> None:
    for hours in (30, 20):
        run("one-off", 500, NOW - dt.timedelta(hours=hours), trained)
    app = run("one-off", 900, NOW - dt.timedelta(hours=1), trained)
    answer = app_attribution(app)
    assert answer.explanation is None
    assert "this job has 3 successful run(s) stored (0 in the serving model's training window)" in answer.reason
    assert "5 of its own are needed" in answer.reason
    html = client.get(f"/apps/{app.pk}/").content.decode()
    section = re.search(r'<section id="attribution".*?</section>', html, re.S)
    assert section
    assert "5 of its own are needed" in section.group(0)
    assert "attribution-causes" not in section.group(0)
    assert "most similar templates" not in section.group(0)


def test_a_model_above_the_production_bar_says_so_on_the_report_and_gives_no_high(trained: Cluster) -> None:
    app = run("job1", 800 * 1.6, NOW - dt.timedelta(hours=1), trained, slow_host=True)
    with override_settings(HINDSIGHT_ATTRIBUTION_PRODUCTION_MARE=0.0):
        answer = app_attribution(app)
    assert answer.explanation is not None
    assert any("above the production bar" in note for note in answer.notes)
    assert answer.explanation.confidence.level != "high"


def feature(name: str, value: float, baseline: float, z: float, delta: float = 0.0) -> FeatureEffect:
    return FeatureEffect(name=name, unit="", value=value, baseline=baseline, z=z, delta_s=delta)


def test_a_cause_whose_values_all_moved_the_harmless_way_is_not_shown_as_making_the_run_slower() -> None:
    less_data = CauseEffect(
        code="data_volume",
        label="More data",
        tag="user",
        effect_s=40.0,  # the forest credits it, yet every value is below usual
        unusual=False,
        members=[feature("input_bytes", 1e9, 4e9, -6.0, 30.0), feature("shuffle_read_bytes", 1e8, 2e8, -4.0, 10.0)],
    )
    more_gc = CauseEffect(
        code="memory_gc",
        label="Memory pressure / GC",
        tag="system",
        effect_s=300.0,
        unusual=True,
        members=[feature("gc_time_share", 0.4, 0.05, 12.0, 300.0)],
    )
    explanation = Explanation(
        template="t",
        mode="causes",
        actual_s=1000.0,
        predicted_s=990.0,
        baseline_s=600.0,
        predicted_baseline_s=610.0,
        confidence=Confidence(
            level="medium",
            rel_error=0.01,
            interval_s=[900.0, 1100.0],
            inside_interval=True,
            message="m",
            explained_share=0.95,
        ),
        causes=[more_gc, less_data],
        features=["gc_time_share", "input_bytes", "shuffle_read_bytes"],
        baseline_borrowed=False,
        donors=[],
        context_delta_s=0.0,
    )
    data = described(explanation)
    shown = {c["code"]: c["shown"] for c in data["causes"]}
    assert shown == {"memory_gc": True, "data_volume": False}
    assert "More data" in data["no_effect"]
