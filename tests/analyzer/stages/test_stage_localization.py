"""Stage anomaly localization in the product: stored runs in, one StageLocalization per template out
(analyzer.stages.services), the due selection, the command, and the real recurring samples."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from django.core.management import call_command

from analysis.stages.signature import stage_signature
from analyzer.models import AnalyzedApp, Cluster, StageLocalization
from analyzer.stages.services import localize_due, localize_template
from tests.factories import NOW, add_stage, make_app, make_recurring_runs, set_stage_hosts
from webui.presenters.stages import localization_views

pytestmark = pytest.mark.django_db


class Stage(NamedTuple):
    stage_id: int
    attempt_id: int
    name: str


TEMPLATE = "spark:airflow:etl/aggregate"
NAMES = ("csv at NativeMethodAccessorImpl.java:0", "groupByKey at /jobs/etl.py:42", "count at etl.py:57", "save at x:1")
BASE_MS = (40_000.0, 80_000.0, 100_000.0, 60_000.0)


def durations(n: int, *, seed: int = 7, noise: float = 0.05, slow: dict[int, float] | None = None) -> list[list[float]]:
    """``n`` runs of four stages: a shared size drift, per-stage noise, and stage 2 ``slow[run]`` times slower."""
    rng = np.random.default_rng(seed)
    rows = []
    for run in range(n):
        size = rng.normal(0, noise)
        row = [b * float(np.exp(size + rng.normal(0, noise / 2))) for b in BASE_MS]
        row[2] *= (slow or {}).get(run, 1.0)
        rows.append(row)
    return rows


def test_the_stage_slowed_3x_in_2_of_12_runs_is_stored_with_those_runs() -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    assert (stored.template, stored.cluster, stored.n_runs, stored.n_categories, stored.n_anomalous) == (
        TEMPLATE,
        None,
        12,
        1,
        1,
    )
    assert stored.latest_end == runs[-1].end_time
    [category] = stored.result["categories"]
    assert category["analysed"]
    top = category["stages"][0]
    assert top["stage"] == "2"
    assert top["anomalous"]
    assert set(top["outlier_runs"]) == {str(runs[3].pk), str(runs[8].pk)}
    assert all(2.0 < s < 4.5 for s in top["slowdown"])
    assert category["stage_names"]["2"] == "count at etl.py:57"
    assert stored.runs[str(runs[3].pk)]["app_id"] == runs[3].app_id
    [view] = localization_views(templates=[TEMPLATE])
    assert view["sentences"][0].startswith("stage 2 (count at etl.py:57) is the outlier in runs ")
    assert runs[3].app_id in view["sentences"][0]
    assert "x its usual" in view["sentences"][0]
    json.dumps(stored.result)  # JSON-ready as stored


def test_runs_that_vary_less_than_alpha_are_not_analysed_and_the_reason_says_by_how_much() -> None:
    make_recurring_runs(TEMPLATE, durations(12, noise=0.02), names=NAMES)

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    assert stored.n_anomalous == 0
    [category] = localization_views(templates=[TEMPLATE])[0]["categories"]
    assert not category["analysed"]
    assert category["cv"] < 0.15
    assert category["reason"].startswith("run times vary ")
    assert category["reason"].endswith("%, under the 15 % that triggers a look")


def test_too_few_runs_are_stored_as_not_analysed_with_the_runs_needed() -> None:
    make_recurring_runs(TEMPLATE, durations(5, slow={2: 3.0}), names=NAMES)

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    [category] = localization_views(templates=[TEMPLATE])[0]["categories"]
    assert (category["analysed"], category["runs"]) == (False, 5)
    assert category["reason"] == "5 runs: at least 8 are needed"
    assert localization_views(templates=[TEMPLATE])[0]["reason"] == "5 runs: at least 8 are needed"


def test_failed_partial_and_other_cluster_runs_are_left_out_and_a_retried_stage_counts_all_attempts() -> None:
    prod = Cluster.objects.create(name="prod")
    runs = make_recurring_runs(TEMPLATE, durations(10), names=NAMES)
    make_recurring_runs(TEMPLATE, durations(2, seed=1), names=NAMES, status="FAILED")
    make_recurring_runs(TEMPLATE, durations(2, seed=2), names=NAMES, partial=True)
    make_recurring_runs(TEMPLATE, durations(9, seed=3), names=NAMES, cluster=prod)
    add_stage(runs[4], 2, 400_000.0, attempt_id=1, name=NAMES[2])  # a retry that took long
    runs[4].runtime_ms = (runs[4].runtime_ms or 0) + 400_000
    runs[4].save()

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    assert stored.n_runs == 10
    assert set(stored.runs) == {str(r.pk) for r in runs}
    [category] = stored.result["categories"]
    top = category["stages"][0]
    assert (top["stage"], top["outlier_runs"]) == ("2", [str(runs[4].pk)])


def test_a_run_missing_a_stage_drops_that_stage_from_its_category() -> None:
    rows: list[list[float | None]] = [list(r) for r in durations(10, slow={6: 3.0})]
    rows[1][3] = None  # stage 3 has no duration in run 1 (skipped)

    runs = make_recurring_runs(TEMPLATE, rows, names=NAMES)
    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    [category] = stored.result["categories"]
    assert category["dropped_stages"] == ["3"]
    assert category["stages"][0]["outlier_runs"] == [str(runs[6].pk)]


def test_runs_stored_before_signatures_existed_are_signed_from_their_stage_rows() -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES, stage_signature="")
    make_recurring_runs(TEMPLATE, [list(BASE_MS[:3])] * 2, names=NAMES, stage_signature="")  # one stage fewer

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    categories = {c["runs"]: c for c in stored.result["categories"]}
    assert set(categories) == {12, 2}
    assert categories[12]["signature"] == stage_signature([Stage(i, 0, n) for i, n in enumerate(NAMES)])
    assert set(categories[12]["stages"][0]["outlier_runs"]) == {str(runs[3].pk), str(runs[8].pk)}


def test_localize_due_picks_only_templates_with_new_runs_and_enough_of_them() -> None:
    make_recurring_runs("tmpl:old", durations(9, slow={4: 3.0}), names=NAMES)
    make_recurring_runs("tmpl:new", durations(9, slow={4: 3.0}), names=NAMES)
    make_recurring_runs("tmpl:few", durations(3), names=NAMES)
    make_app(template="", end_time=NOW)  # an ad hoc app has no template: never localized
    first = localize_template("tmpl:old", None)
    assert first is not None

    done = localize_due(now=NOW)

    assert [s.template for s in done] == ["tmpl:new"]
    assert localize_due(now=NOW) == []  # nothing new since
    make_recurring_runs("tmpl:old", [list(BASE_MS)], names=NAMES, end_time=NOW + dt.timedelta(minutes=5))
    again = localize_due(now=NOW + dt.timedelta(hours=1))
    assert [(s.template, s.n_runs, s.computed_at) for s in again] == [("tmpl:old", 10, NOW + dt.timedelta(hours=1))]
    assert StageLocalization.objects.filter(template="tmpl:old").count() == 1  # replaced, not added


def test_localize_due_is_bounded_per_call_and_the_rest_waits_for_the_next(settings: Any) -> None:
    settings.HINDSIGHT_STAGE_LOCALIZATION_PER_CALL = 1
    make_recurring_runs("tmpl:a", durations(8), names=NAMES)
    make_recurring_runs("tmpl:b", durations(8), names=NAMES)

    assert len(localize_due()) == 1
    assert len(localize_due()) == 1
    assert localize_due() == []


def test_newer_runs_than_the_stored_result_make_it_stale() -> None:
    make_recurring_runs(TEMPLATE, durations(9), names=NAMES)
    localize_template(TEMPLATE, None)
    make_recurring_runs(TEMPLATE, [list(BASE_MS)], names=NAMES, end_time=NOW + dt.timedelta(hours=2))

    [view] = localization_views(templates=[TEMPLATE])

    assert view["stale"]
    assert view["newest_run_end"] == NOW + dt.timedelta(hours=2)


def test_the_command_prints_categories_anomalous_stages_and_sentences() -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    out = io.StringIO()

    call_command("localize_stages", "--template", TEMPLATE, stdout=out)

    text = out.getvalue()
    assert f"{TEMPLATE}: 12 runs, 1 categories" in text
    assert "0123456789abcdef: 12 runs, CV " in text
    assert "analysed" in text
    assert "anomalous stage 2 (count at etl.py:57): cosine " in text
    assert "Stage 2 (count at etl.py:57) is the outlier in runs " in text
    assert runs[3].app_id in text
    assert runs[8].app_id in text
    assert "Localized 1 template(s); 1 with an anomalous stage." in text


def test_the_command_without_options_says_when_nothing_is_due_and_fails_on_an_unknown_template() -> None:
    out, err = io.StringIO(), io.StringIO()

    call_command("localize_stages", stdout=out)
    with pytest.raises(SystemExit) as exit_info:
        call_command("localize_stages", "--template", "nope\x1b[31m", stdout=out, stderr=err)

    assert "Nothing to localize" in out.getvalue()
    assert exit_info.value.code == 1
    assert "no finished, successful run of template 'nope?[31m'" in err.getvalue()


def test_the_command_prints_hostile_stage_names_without_terminal_escapes() -> None:
    make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0}), names=(*NAMES[:2], "count\x1b]0;pwned\x07 at x.py:1"))
    out = io.StringIO()

    call_command("localize_stages", "--all", stdout=out)

    assert "\x1b" not in out.getvalue()
    assert "count?]0;pwned? at x.py:1" in out.getvalue()


def test_a_result_stored_in_an_unexpected_shape_reads_as_unreadable_not_as_a_crash_or_as_empty() -> None:
    StageLocalization.objects.create(
        template=TEMPLATE,
        result={"categories": [None, {"stages": ["x"]}, {"stages": 5, "cv": "x"}], "ranking": 3},
        runs=[],
    )

    [view] = localization_views(templates=[TEMPLATE])

    assert view["sentences"] == []
    assert view["categories"] == []
    assert view["reason"].startswith("the stored stage localization cannot be read (")
    assert view["reason"].endswith(f"compute it again with manage.py localize_stages --template {TEMPLATE}")


# --- the real recurring samples --------------------------------------------------------------------------------

RECURRING = Path(__file__).resolve().parents[3] / "samples" / "recurring"


@pytest.mark.skipif(not (RECURRING / "manifest.json").exists(), reason="samples/recurring missing")
def test_on_the_recurring_samples_the_injected_slow_host_stage_of_reconcile_run_4_is_found() -> None:
    """The slow_host cause sleeps in half the tasks of stage 1 (after the groupByKey) of inventory_sync/reconcile run
    4 and clickstream_hourly/sessionize run 15. Reconcile (14 runs, one signature) localizes it alone: stage 1 ranks
    first with run 4 its only outlier run. Sessionize's local-mode runs are noisier (the first runs warm the JVM):
    run 15 is among stage 1's outlier runs, beside others."""
    import heuristics
    from analysis.pipeline import analyze
    from analyzer.services import report_store
    from fetchers import spark_eventlog

    manifest = json.loads((RECURRING / "manifest.json").read_text())
    suite = heuristics.load_suite()
    stored_by_run: dict[tuple[str, int], int] = {}
    for entry in manifest["apps"]:
        if entry["task_id"] not in ("reconcile", "sessionize"):
            continue
        [outcome] = list(spark_eventlog.read_apps(RECURRING / entry["file"]))
        assert outcome.app is not None, outcome.error
        app = report_store(report=analyze(outcome.app, suite), source=str(RECURRING / entry["file"]))
        stored_by_run[(entry["task_id"], entry["run"])] = app.pk

    stored = {s.template: s for s in localize_due()}

    reconcile = stored["spark:airflow:inventory_sync/reconcile"]
    [category] = reconcile.result["categories"]
    assert category["analysed"]
    top = category["stages"][0]
    assert (top["stage"], top["anomalous"], top["outlier_runs"]) == ("1", True, [str(stored_by_run[("reconcile", 4)])])
    signatures = set(AnalyzedApp.objects.filter(template=reconcile.template).values_list("stage_signature", flat=True))
    assert signatures == {category["signature"]}  # stored by report_store, one for all 14 runs
    assert category["signature"]
    sessionize = stored["spark:airflow:clickstream_hourly/sessionize"]
    [category] = sessionize.result["categories"]
    stage_1 = next(s for s in category["stages"] if s["stage"] == "1")
    assert stage_1["anomalous"]
    assert str(stored_by_run[("sessionize", 15)]) in stage_1["outlier_runs"]


def test_the_hourly_beat_task_localizes_the_due_templates(settings: Any) -> None:
    from analyzer.tasks import localize_stages_task

    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)

    outcome = localize_stages_task.apply().get()

    assert settings.CELERY_BEAT_SCHEDULE["localize-stages"]["task"] == "analyzer.tasks.localize_stages_task"
    assert settings.CELERY_BEAT_SCHEDULE["localize-stages"]["schedule"] == 3600
    assert outcome == {"localized": [[TEMPLATE, None]], "with_anomalous_stages": 1}
    assert StageLocalization.objects.get(template=TEMPLATE).latest_end == runs[-1].end_time


# --- which hosts ------------------------------------------------------------------------------------------------

HOSTS = ("node-1", "node-2", "node-3", "node-4", "node-5")


def spread_stage_2(runs: list[AnalyzedApp], factors: dict[int, dict[str, float]], usual: dict[str, float]) -> None:
    """Stage 2 of each run as four tasks per host of HOSTS, each host's tasks ``usual[host]`` (default 1) times as
    long as the others', and in run i ``factors[i][host]`` times that (every host: the stage slow everywhere)."""
    for i, run in enumerate(runs):
        per_host = {
            host: [
                1_000.0 * usual.get(host, 1.0) * factors.get(i, {}).get(host, 1.0) * (1 + 0.02 * k) for k in range(4)
            ]
            for host in HOSTS
        }
        set_stage_hosts(run, 2, per_host)


def test_a_stage_slow_on_one_host_names_that_host_and_one_slow_everywhere_says_every_host() -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    spread_stage_2(runs, {3: {"node-3": 4.0}, 8: dict.fromkeys(HOSTS, 3.0)}, usual={})

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    top = stored.result["categories"][0]["stages"][0]
    by_run = {h["run"]: h for h in top["hosts"]}
    in_3, in_8 = by_run[str(runs[3].pk)], by_run[str(runs[8].pk)]
    assert (in_3["verdict"], [h["host"] for h in in_3["hosts"]], in_3["n_hosts"]) == ("hosts", ["node-3"], 5)
    assert in_3["hosts"][0]["ratio"] == pytest.approx(4.0, rel=0.01)
    assert (in_8["verdict"], in_8["hosts"]) == ("everywhere", [])
    assert stored.result["params"]["host_factor"] == 1.5
    [view] = localization_views(templates=[TEMPLATE])
    sentence = view["sentences"][0]
    assert f"in run {runs[3].app_id} its tasks on host node-3 took 4.0x the others'" in sentence
    assert f"in run {runs[8].app_id} it was slow on every host" in sentence
    out = io.StringIO()
    call_command("localize_stages", "--template", TEMPLATE, stdout=out)
    assert "its tasks on host node-3 took 4.0x the others'" in out.getvalue()


def test_a_host_that_is_always_slower_is_not_why_a_run_was_slow_so_the_stage_was_slow_on_every_host() -> None:
    """The cluster samples' shape: node-5 takes 2x every run; stage 2 is then slowed on every host in runs 3 and 8,
    where node-5 is still 2x the others: no host stands out beyond its usual."""
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    spread_stage_2(runs, {3: dict.fromkeys(HOSTS, 3.0), 8: dict.fromkeys(HOSTS, 3.0)}, usual={"node-5": 2.0})

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    top = stored.result["categories"][0]["stages"][0]
    assert [h["verdict"] for h in top["hosts"]] == ["everywhere", "everywhere"]
    [view] = localization_views(templates=[TEMPLATE])
    assert view["sentences"][0].endswith("; in each it was slow on every host")
    assert all(r["hosts"]["verdict"] == "everywhere" for r in view["categories"][0]["stages"][0]["outlier_runs"])


def test_a_usually_slower_host_is_named_when_it_was_far_slower_than_its_usual_with_its_usual_said() -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    spread_stage_2(runs, {3: {"node-5": 4.0}, 8: {"node-5": 4.0}}, usual={"node-5": 2.0})

    localize_template(TEMPLATE, None)

    [view] = localization_views(templates=[TEMPLATE])
    run_3 = next(r for r in view["categories"][0]["stages"][0]["outlier_runs"] if r["pk"] == runs[3].pk)
    [host] = run_3["hosts"]["slow_hosts"]
    assert host["host"] == "node-5"
    assert host["ratio"] == pytest.approx(8.0, rel=0.01)
    assert host["usual"] == pytest.approx(2.0, rel=0.01)
    assert (
        f"in run {runs[3].app_id} its tasks on host node-5 took 8.0x the others' (usually 2.0x)"
        in (view["sentences"][0])
    )


@pytest.mark.parametrize("hosts", [("localhost",), ("node-1", "node-2")], ids=["local mode", "two hosts"])
def test_fewer_than_three_hosts_say_nothing_about_hosts(hosts: tuple[str, ...]) -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    for i, run in enumerate(runs):
        slow = 3.0 if i in (3, 8) else 1.0
        set_stage_hosts(run, 2, {host: [1_000.0 * slow * (2 if host == hosts[-1] else 1)] * 4 for host in hosts})

    stored = localize_template(TEMPLATE, None)

    assert stored is not None
    top = stored.result["categories"][0]["stages"][0]
    assert [h["verdict"] for h in top["hosts"]] == ["unknown", "unknown"]
    [view] = localization_views(templates=[TEMPLATE])
    assert "host" not in view["sentences"][0]


def test_runs_stored_before_host_times_existed_say_nothing_about_hosts() -> None:
    make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)  # host_task_times {}

    localize_template(TEMPLATE, None)

    [view] = localization_views(templates=[TEMPLATE])
    assert view["sentences"][0].startswith("stage 2 (count at etl.py:57) is the outlier in runs ")
    assert "host" not in view["sentences"][0]


def test_the_command_prints_hostile_host_names_without_terminal_escapes() -> None:
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0}), names=NAMES)
    hostile = "evil\x1b]0;pwned\x07"
    for i, run in enumerate(runs):
        slow = {hostile: 4.0} if i == 3 else {}
        set_stage_hosts(run, 2, {h: [1_000.0 * slow.get(h, 1.0)] * 3 for h in (*HOSTS[:3], hostile)})
    out = io.StringIO()

    call_command("localize_stages", "--all", stdout=out)

    assert "\x1b" not in out.getvalue()
    assert "its tasks on host evil?]0;pwned? took 4.0x the others'" in out.getvalue()


CLUSTER = Path(__file__).resolve().parents[3] / "samples" / "cluster"


@pytest.mark.skipif(not (CLUSTER / "manifest.json").exists(), reason="samples/cluster missing")
def test_on_the_cluster_samples_the_slowed_stage_was_slow_on_every_host_in_its_outlier_runs() -> None:
    """samples/cluster: 12 runs on 8 hosts, stage 1 slowed 3.5x on every host in runs 4, 8 and 11, and one host
    (127.0.0.7) 2x slower in every run. Through the product (analysis, storage, localization): stage 1 with those
    runs, each slow on every host, the always-slow host not blamed."""
    import heuristics
    from analysis.pipeline import analyze
    from analyzer.services import report_store
    from fetchers import spark_eventlog

    manifest = json.loads((CLUSTER / "manifest.json").read_text())
    suite = heuristics.load_suite()
    stored_by_run: dict[int, AnalyzedApp] = {}
    for entry in manifest["apps"]:
        [outcome] = list(spark_eventlog.read_apps(CLUSTER / entry["file"]))
        assert outcome.app is not None, outcome.error
        stored_by_run[entry["run"]] = report_store(
            report=analyze(outcome.app, suite), source=str(CLUSTER / entry["file"])
        )

    [stored] = localize_due()

    slowed = manifest["slow_stage"]
    expected = {str(stored_by_run[e["run"]].pk) for e in manifest["apps"] if e["cause"] == "slow_stage"}
    top = stored.result["categories"][0]["stages"][0]
    assert (top["stage"], set(top["outlier_runs"])) == (str(slowed["stage_id"]), expected)
    assert [(h["verdict"], h["n_hosts"]) for h in top["hosts"]] == [("everywhere", 8)] * 3
    [view] = localization_views(templates=[stored.template])
    assert view["sentences"][0].endswith("; in each it was slow on every host")
