"""A user's journey through the web UI in headless Chromium: what they see and can do, not just status codes.

Each test builds its rows (tests/factories.py), drives the live server with Playwright and fails on any script
error, console error or dialog. Screenshots of every page land in var/artifacts/screenshots/ (conftest.py).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pytest
from browsing import Visit, words
from django.utils import timezone
from factories import add_finding, make_app
from playwright.sync_api import Page, expect

from analysis.summaries import duration_histogram
from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicDetail, Severity, StageSummary

pytestmark = pytest.mark.browser

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
FLOW = "etl_daily"
GC_THRESHOLDS = {"gc_ratio": [0.08, 0.1, 0.15, 0.2], "min_task_time_min": 5, "min_stage_task_time_min": 5}
GB = 1024**3
# Today's run started a few hours ago, so the dashboard's "last 24 hours" sections have it; yesterday's a day before.
TODAY = timezone.now().replace(minute=0, second=0, microsecond=0) - dt.timedelta(hours=6)


def run_id(start: dt.datetime) -> str:
    """An Airflow run id: slashes, colons and a plus sign, which travel as query parameters."""
    return f"{FLOW}/scheduled__{start:%Y-%m-%dT%H:%M:%S}+00:00"


RUN_A = run_id(TODAY - dt.timedelta(days=1))  # yesterday's, the baseline
RUN_B = run_id(TODAY)


@dataclass
class World:
    severe: AnalyzedApp  # the load job of today's run: Severe, with a full report
    earlier: AnalyzedApp  # the same job yesterday: Moderate
    carol: AnalyzedApp
    hostile: AnalyzedApp
    total: int


def load_job(run: str, start: dt.datetime, minutes: int, gc_ratio: float, severity: Severity) -> AnalyzedApp:
    """The load job of one etl_daily run, its GC share setting its severity, with stages and executors."""
    gc_score, spill_score = {Severity.SEVERE: (40, 8), Severity.MODERATE: (8, 4)}[severity]
    end = start + dt.timedelta(minutes=minutes)
    load = make_app(
        app_id=f"application_{int(start.timestamp())}000_0102",
        name="etl_daily: load revenue rollup",
        user="alice",
        queue="etl",
        scheduler="airflow",
        flow_def_id=FLOW,
        flow_exec_id=run,
        job_def_id=f"{FLOW}/load",
        job_name="load",
        start_time=start,
        end_time=end,
        runtime_ms=minutes * 60_000,
        used_gb_hours=minutes * 0.5,
        wasted_gb_hours=minutes * 0.5 * (0.2 + gc_ratio),
        severity=severity,
        score=gc_score + spill_score,  # hand-set costs (GB-seconds): the severe app costs the most
        metrics={"core_utilization": 0.38, "first_task_delay_ms": 9_000, "num_executors": 2},
        spark_properties={
            "spark.executor.memory": "4g",
            "spark.executor.cores": "4",
            "spark.sql.shuffle.partitions": "400",
        },
    )
    gc = add_finding(
        load,
        "spark.executor_gc",
        severity,
        position=0,
        name="Executor GC",
        score=gc_score,
        advice="Executors spent a large share of task time in garbage collection. Give them more memory "
        "(spark.executor.memory) or fewer cores each.",
        observed={"gc_ratio": gc_ratio},
        thresholds=GC_THRESHOLDS,
        executors=["1", "2"],
    )
    HeuristicDetail.objects.create(result=gc, position=0, name="GC share", value=f"{gc_ratio:.1%}")
    add_finding(load, "spark.spill", Severity.LOW, position=1, name="Spill", score=spill_score, stages=[[1, 0]])
    # 400 tasks of about 4 s with a tail of stragglers: the spill finding's stage, charted as a histogram.
    durations = np.array([3_000 + (i * 37) % 2_500 for i in range(390)] + [40_000 + 9_000 * i for i in range(10)])
    stages = [
        (0, "scan orders at Load.scala:41", 400, np.full(400, 1_000.0), 0),
        (1, "save at Load.scala:88", 400, durations, 6 * GB),
    ]
    for stage_id, name, tasks, task_ms, spilled in stages:
        StageSummary.objects.create(
            app=load, stage_id=stage_id, name=name, status="COMPLETE", num_tasks=tasks, num_complete_tasks=tasks,
            submission_time=start + dt.timedelta(minutes=1), duration_ms=int(task_ms.sum() / 8),
            executor_run_time_ms=int(task_ms.sum()), jvm_gc_time_ms=int(task_ms.sum() * gc_ratio),
            input_bytes=48 * GB if stage_id == 0 else 0, output_bytes=12 * GB if stage_id else 0,
            shuffle_read_bytes=20 * GB if stage_id else 0, shuffle_write_bytes=0 if stage_id else 20 * GB,
            disk_bytes_spilled=spilled, memory_bytes_spilled=spilled * 3,
            task_duration_quantiles=[float(q) for q in np.quantile(task_ms, [0, 0.25, 0.5, 0.75, 1])],
            task_duration_histogram=duration_histogram(task_ms),
        )  # fmt: skip
    ExecutorSummary.objects.create(app=load, executor_id="driver", host="edge-01", cores=1, added_time=start)
    for executor_id, removed_reason in [("1", ""), ("2", "Container killed by YARN for exceeding memory limits.")]:
        ExecutorSummary.objects.create(
            app=load, executor_id=executor_id, host=f"worker-0{executor_id}", cores=4, max_memory=2 * GB,
            added_time=start + dt.timedelta(seconds=20),
            removed_time=end - dt.timedelta(minutes=10) if removed_reason else None, removed_reason=removed_reason,
            total_tasks=400, total_duration_ms=int(durations.sum()), total_gc_time_ms=int(durations.sum() * gc_ratio),
            total_input_bytes=24 * GB, total_shuffle_read=10 * GB, total_shuffle_write=10 * GB,
            peak_metrics={"JVMHeapMemory": int(3.6 * GB)},
        )  # fmt: skip
    return load


def flow_run(run: str, start: dt.datetime, load_minutes: int, gc_ratio: float, severity: Severity) -> AnalyzedApp:
    """One etl_daily run: a clean 12-minute extract, then the load job."""
    extract = make_app(
        app_id=f"application_{int(start.timestamp())}000_0101",
        name="etl_daily: extract orders",
        user="alice",
        queue="etl",
        scheduler="airflow",
        flow_def_id=FLOW,
        flow_exec_id=run,
        job_def_id=f"{FLOW}/extract",
        job_name="extract",
        start_time=start,
        end_time=start + dt.timedelta(minutes=12),
        runtime_ms=12 * 60_000,
        used_gb_hours=3.2,
        wasted_gb_hours=0.4,
    )
    add_finding(extract, "spark.executor_gc", Severity.NONE, name="Executor GC", score=0, thresholds=GC_THRESHOLDS)
    return load_job(run, start + dt.timedelta(minutes=15), load_minutes, gc_ratio, severity)


def build_world() -> World:
    earlier = flow_run(RUN_A, TODAY - dt.timedelta(days=1), 50, 0.11, Severity.MODERATE)
    severe = flow_run(RUN_B, TODAY, 85, 0.17, Severity.SEVERE)
    an_hour_ago = TODAY + dt.timedelta(hours=5)
    make_app(
        app_id="application_1772330000000_0201", name="clickstream sessionize", user="bob", severity=Severity.LOW,
        score=2, start_time=an_hour_ago - dt.timedelta(minutes=20), end_time=an_hour_ago, runtime_ms=20 * 60_000,
        used_gb_hours=1.5, wasted_gb_hours=0.3,
    )  # fmt: skip
    carol = make_app(
        app_id="application_1772330000000_0301", name="ad-hoc notebook", user="carol", start_time=an_hour_ago,
        end_time=an_hour_ago + dt.timedelta(minutes=5), runtime_ms=5 * 60_000, used_gb_hours=0.2, wasted_gb_hours=0.1,
    )  # fmt: skip
    hostile = make_app(
        app_id="application_1772330000000_0666",
        name=SCRIPT,
        user=IMG,
        queue=SCRIPT,
        severity=Severity.MODERATE,
        score=8,
        start_time=an_hour_ago,
        end_time=an_hour_ago + dt.timedelta(minutes=30),
        runtime_ms=30 * 60_000,
        warnings=[f"Event log line 12: {SCRIPT}"],
        spark_properties={"spark.app.name": SCRIPT, "spark.driver.extraJavaOptions": f"-Dtag={IMG}"},
    )
    finding = add_finding(hostile, "spark.configuration", Severity.MODERATE, name="Configuration", score=8, advice=IMG)
    HeuristicDetail.objects.create(result=finding, position=0, name=SCRIPT, value=IMG)
    return World(severe=severe, earlier=earlier, carol=carol, hostile=hostile, total=AnalyzedApp.objects.count())


@pytest.fixture
def world() -> World:
    return build_world()


def app_row(page: Page, app: AnalyzedApp) -> str:
    """The text of the list row that links to ``app``'s report."""
    row = page.locator("tr", has=page.locator(f'a.app-id[href="/apps/{app.pk}/"]'))
    expect(row).to_have_count(1)
    return words(row.inner_text())


def assert_charts_drawn(page: Page) -> None:
    """Every chart placeholder on the page (canvas[data-chart]) holds a Chart.js chart with a real size."""
    page.wait_for_load_state("load")  # after a click the page may still be running its deferred scripts
    canvases = page.locator("canvas[data-chart]")
    if canvases.count() == 0:
        return  # this page has no charts (yet)
    assert page.evaluate("typeof window.Chart") == "function", "the page has charts but Chart.js did not load"
    for canvas in canvases.all():
        canvas.wait_for(state="visible")
        page.wait_for_function("c => window.Chart.getChart(c) !== undefined", arg=canvas.element_handle())
        box = canvas.bounding_box()
        assert box is not None, canvas.get_attribute("data-chart")
        assert box["width"] > 0, canvas.get_attribute("data-chart")
        assert box["height"] > 0, canvas.get_attribute("data-chart")


def injected(page: Page) -> int:
    """Elements the hostile values would have become had they reached the page as markup."""
    count: int = page.evaluate(
        """document.querySelectorAll('img[src="x"]').length
        + [...document.scripts].filter(s => s.type !== "application/json" && s.text.includes("alert(1)")).length"""
    )
    return count


def test_a_user_goes_from_the_dashboard_to_a_severe_app_its_help_its_flow_runs_and_their_history(
    visit: Visit, world: World
) -> None:
    severe = world.severe
    page = visit.open("/")

    # Dashboard: totals, the severity table and the worst app first.
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")
    expect(page.locator(".tile").first).to_have_text(re.compile(rf"^\s*{world.total}\s*apps analyzed\s*$"))
    severe_row = page.locator("table.severity-counts tbody tr", has_text="Severe")
    expect(severe_row.locator("td").first).to_have_text("1")
    worst = page.locator("section", has=page.get_by_role("heading", name="Worst apps by cost"))
    expect(worst.locator("a.app-id").first).to_have_text(severe.app_id)
    visit.shot("01-dashboard")

    # Search from the header box by the app's id.
    box = page.get_by_role("searchbox", name="Search apps by id, user or name")
    box.fill(severe.app_id)
    page.get_by_role("search").get_by_role("button", name="Search").click()
    expect(page).to_have_url(re.compile(r"/apps/\?q=" + re.escape(severe.app_id) + "$"))
    expect(page.locator("#results-heading")).to_have_text(re.compile(r"1 app matches"))
    assert "Severe" in app_row(page, severe)
    assert "etl_daily: load revenue rollup" in app_row(page, severe)
    visit.shot("02-search-results")

    # The report: identity, verdict, the finding that made it Severe.
    page.locator(f'a.app-id[href="/apps/{severe.pk}/"]').click()
    expect(page.locator("h1")).to_contain_text(severe.app_id)
    expect(page.locator(".verdict")).to_have_text(re.compile(r"Severe\s+Cost 48 GB·s"))
    gc = page.locator("article.heuristic", has=page.get_by_role("heading", name="Executor GC"))
    expect(gc).to_contain_text("Severe")
    expect(gc.locator("table.observed tbody tr")).to_have_text(
        re.compile(r"gc_ratio\s*0\.17\s*0\.08, 0\.1, 0\.15, 0\.2")
    )
    assert_charts_drawn(page)
    visit.shot("03-report")

    # Its help page shows the thresholds in force now.
    gc.get_by_role("link", name=re.compile(r"^About this heuristic\W+Executor GC$")).click()
    expect(page).to_have_url(re.compile(r"/help/spark\.executor_gc/$"))
    expect(page.locator("h1")).to_have_text("Executor GC")
    expect(page.get_by_role("heading", name="Current configuration")).to_be_visible()
    from heuristics import load_suite

    configured = next(h for h in load_suite().heuristics if h.code == "spark.executor_gc").config_as_dict()
    levels = page.locator("table.levels tr", has=page.locator("th", has_text="gc_ratio")).locator("td")
    assert [float(text) for text in levels.all_inner_texts()] == configured["gc_ratio"]
    visit.shot("04-help-executor-gc")

    # Back on the report, the flow execution it belongs to.
    page.go_back()
    page.locator("#identity").get_by_role("link", name=RUN_B).click()
    expect(page.locator("h1")).to_have_text(RUN_B)
    expect(page.locator("#apps-heading")).to_have_text("Apps (2)")
    jobs = page.locator("table.flow-apps tbody tr td[data-label='Job']").all_inner_texts()
    assert jobs == ["extract", "load"]  # start order
    expect(page.locator(".verdict")).to_contain_text("Severe")
    assert_charts_drawn(page)
    visit.shot("05-flow-execution")

    # Compare it with the day before.
    page.get_by_label("Compare with flow execution").fill(RUN_A)
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("h1")).to_have_text("Compare flow executions")
    expect(page.locator(".compare-sides")).to_contain_text(RUN_A)
    expect(page.locator(".compare-sides")).to_contain_text(RUN_B)
    expect(page.locator("#jobs-heading")).to_have_text("Jobs (2)")
    load_row = page.locator("table.compare-jobs tbody tr", has=page.get_by_role("link", name="load"))
    worst = page.locator("table.compare-totals tr", has_text="Worst severity")
    expect(worst).to_contain_text("Severe")
    expect(worst).to_contain_text("Moderate")
    expect(load_row).to_contain_text("Changed")
    expect(load_row).to_contain_text("spark.executor_gc")
    visit.shot("06-compare")

    # The load job's history: both runs, the GC row going from Moderate to Severe.
    load_row.get_by_role("link", name="load").click()
    expect(page.locator("h1")).to_contain_text("Job history")
    expect(page.locator("h1")).to_contain_text(f"{FLOW}/load")
    expect(page.locator("#runs-heading")).to_have_text("Runs (2)")
    gc_strip = page.locator("table.strip tr", has=page.locator("th", has_text="spark.executor_gc"))
    assert [t.strip() for t in gc_strip.locator(".mark").evaluate_all("ms => ms.map(m => m.title)")] == [
        "Moderate",
        "Severe",
    ]  # oldest on the left
    assert_charts_drawn(page)
    visit.shot("07-job-history")

    # The flow's history, one row per execution, each opening its flow page.
    page.go_back()
    page.locator(".compare-sides").get_by_role("link", name=RUN_B).click()
    page.locator("dl.facts").get_by_role("link", name=FLOW, exact=True).click()
    expect(page.locator("h1")).to_contain_text("Flow history")
    runs = page.locator("table.runs a.app-id").all_inner_texts()
    assert runs == [RUN_B, RUN_A]  # latest first
    assert_charts_drawn(page)
    visit.shot("08-flow-history")
    page.locator("table.runs").get_by_role("link", name=RUN_A).click()
    expect(page.locator("h1")).to_have_text(RUN_A)

    visit.assert_clean()


def test_a_keyboard_user_reaches_the_search_box_by_tab_and_searches_with_enter(visit: Visit, world: World) -> None:
    page = visit.open("/")

    page.keyboard.press("Tab")
    first = page.evaluate("document.activeElement.textContent")
    assert first.strip() == "Skip to content"  # the first stop skips the header
    for _ in range(12):
        if page.evaluate("document.activeElement.id") == "nav-q":
            break
        page.keyboard.press("Tab")
    else:
        pytest.fail("Tab never reached the search box")
    page.keyboard.type("carol")
    page.keyboard.press("Enter")

    expect(page).to_have_url(re.compile(r"/apps/\?q=carol$"))
    assert "ad-hoc notebook" in app_row(page, world.carol)
    expect(page.locator("table.apps a.app-id")).to_have_count(1)
    visit.shot("10-keyboard-search")
    visit.assert_clean()


def test_markup_in_an_apps_name_user_properties_and_findings_shows_as_text_and_never_runs(
    visit: Visit, world: World
) -> None:
    hostile = world.hostile
    page = visit.open(f"/apps/{hostile.pk}/")

    expect(page.locator(".app-name-line")).to_have_text(SCRIPT)
    expect(page.get_by_text(SCRIPT, exact=True).first).to_be_visible()
    expect(page.locator("#identity").get_by_role("link", name=IMG)).to_be_visible()
    expect(page.locator(".warnings")).to_have_text(f"Event log line 12: {SCRIPT}")
    finding = page.locator("article.heuristic", has=page.get_by_role("heading", name="Configuration"))
    expect(finding.locator(".advice p")).to_have_text(IMG)
    expect(finding.locator("table.details tr")).to_have_text(re.compile(re.escape(SCRIPT) + r"\s*" + re.escape(IMG)))
    page.get_by_text("Show 2 properties").click()
    properties = page.locator("table.properties")
    expect(properties.locator("tr", has_text="spark.app.name").locator("td")).to_have_text(SCRIPT)
    expect(properties.locator("tr", has_text="spark.driver.extraJavaOptions").locator("td")).to_have_text(
        f"-Dtag={IMG}"
    )
    assert injected(page) == 0
    visit.shot("20-hostile-report")

    # The list, reached by typing the hostile user name into the search box: echoed back as a value only.
    box = page.get_by_role("searchbox", name="Search apps by id, user or name")
    box.fill(IMG)
    box.press("Enter")
    expect(page.locator("#results-heading")).to_have_text(re.compile(r"1 app matches"))
    row = app_row(page, hostile)
    assert SCRIPT in row
    assert IMG in row
    expect(page.locator("#nav-q")).to_have_value(IMG)
    expect(page.locator("#id_q")).to_have_value(IMG)
    assert injected(page) == 0
    visit.shot("21-hostile-list")

    visit.assert_clean()


def test_on_a_phone_the_report_and_the_search_results_fit_the_screen_width(phone: Visit, world: World) -> None:
    page = phone.open(f"/apps/{world.severe.pk}/")
    expect(page.locator("h1")).to_contain_text(world.severe.app_id)
    assert_charts_drawn(page)
    phone.shot("30-phone-report")
    report_overflow = phone.horizontal_overflow()

    phone.open("/apps/?q=etl_daily")
    expect(page.locator("#results-heading")).to_have_text(re.compile(r"4 apps match"))
    phone.shot("31-phone-search")
    search_overflow = phone.horizontal_overflow()

    # Up to 1 px is the rounding of a fractional layout width, not a sideways scroll.
    overflow = f"wider than the phone's screen: the report by {report_overflow} px, the search by {search_overflow} px"
    assert report_overflow <= 1, overflow
    assert search_overflow <= 1, overflow
    phone.assert_clean()
