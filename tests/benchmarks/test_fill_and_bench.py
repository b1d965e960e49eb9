"""The web benchmark's fill writes consistent apps, and every URL its load mix asks for answers 200."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test import Client

from analyzer.models import AnalyzedApp, HeuristicDetail, HeuristicResult, StageSummary
from analyzer.selectors import gate as gate_selectors

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import bench_web  # noqa: E402  (scripts beside the benchmarks, not a package)
import fill_apps  # noqa: E402

pytestmark = pytest.mark.django_db

APPS = 200


@pytest.fixture
def filled() -> fill_apps.Counters:
    if connection.vendor != "postgresql":
        pytest.skip("the fill writes with PostgreSQL COPY")
    return fill_apps.fill(connection, APPS, seed=3, chunk=80)


@pytest.mark.postgres("the fill writes with COPY")
def test_the_fill_writes_the_apps_asked_for_each_with_findings_and_details(filled: fill_apps.Counters) -> None:
    assert AnalyzedApp.objects.count() == APPS == filled.apps
    assert not AnalyzedApp.objects.filter(heuristic_results__isnull=True).exists()
    assert HeuristicResult.objects.count() == filled.results
    assert 10 * APPS <= filled.results <= 15 * APPS
    assert HeuristicDetail.objects.count() == 2 * filled.results
    assert StageSummary.objects.count() == filled.stages > 0
    assert set(HeuristicResult.objects.values_list("code", flat=True)) <= (gate_selectors.heuristic_codes() or set())


@pytest.mark.postgres("the fill writes with COPY")
def test_an_apps_severity_and_score_are_its_worst_finding_and_their_sum(filled: fill_apps.Counters) -> None:
    for app in AnalyzedApp.objects.prefetch_related("heuristic_results")[:50]:
        findings = list(app.heuristic_results.all())
        assert app.severity == max(f.severity for f in findings)
        assert app.score == sum(f.score for f in findings)
        assert len({f.code for f in findings}) == len(findings)
        prefix = "application_" if app.app_type == "SPARK" else "job_"
        assert app.app_id.startswith(prefix)


@pytest.mark.postgres("the fill writes with COPY")
def test_flow_runs_hold_one_to_five_apps_of_one_flow_and_ad_hoc_apps_have_no_scheduler(
    filled: fill_apps.Counters,
) -> None:
    runs = Counter(AnalyzedApp.objects.exclude(flow_exec_id="").values_list("flow_exec_id", flat=True))
    assert runs
    assert all(1 <= size <= 5 for size in runs.values())
    for run in list(runs)[:20]:
        flows = set(AnalyzedApp.objects.filter(flow_exec_id=run).values_list("flow_def_id", flat=True))
        assert len(flows) == 1
        assert run.startswith(flows.pop() + "@")
    ad_hoc = AnalyzedApp.objects.filter(flow_def_id="")
    assert ad_hoc.exists()
    assert not ad_hoc.exclude(scheduler="").exists()
    assert not AnalyzedApp.objects.exclude(flow_def_id="").filter(job_def_id="").exists()


def test_the_same_seed_fills_the_same_apps() -> None:
    shape_a = fill_apps.Shape.build(5, 1_790_000_000_000, n_flows=300)
    shape_b = fill_apps.Shape.build(5, 1_790_000_000_000, n_flows=300)
    assert shape_a.flow_user.tolist() == shape_b.flow_user.tolist()
    assert shape_a.flow_names == shape_b.flow_names


@pytest.mark.postgres("the fill writes with COPY")
def test_every_url_of_the_load_mix_answers_200(filled: fill_apps.Counters, settings: object) -> None:
    settings.HINDSIGHT_API_THROTTLE_ANON = ""  # type: ignore[attr-defined]
    settings.HINDSIGHT_API_THROTTLE_USER = ""  # type: ignore[attr-defined]
    with connection.cursor() as cursor:
        urls = bench_web.make_urls(cursor.cursor, per_endpoint=32, seed=1)
    assert set(urls) == set(bench_web.MIX)
    client = Client()
    variants = set()
    for endpoint, entries in urls.items():
        for variant, path in entries:
            response = client.get(path)
            assert response.status_code == 200, (endpoint, variant, path, response.content[:300])
            variants.add(f"{endpoint}:{variant}")
            if endpoint == "gate_flow":
                flow = parse_qs(urlsplit(path).query)["flow_def_id"][0]
                assert response.json()["app"]["app_id"] in set(
                    AnalyzedApp.objects.filter(flow_def_id=flow).values_list("app_id", flat=True)
                )
    assert len(variants) >= 20
