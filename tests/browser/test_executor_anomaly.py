"""The "Which executor is odd?" panel in headless Chromium: the ranking, selecting an executor and a feature
without scripts (links), the scatter chart drawn with the selected executor marked, and a phone's width."""

from __future__ import annotations

import re

import pytest
from browsing import Visit, screenshot_dir, words
from factories import store_spark_app
from playwright.sync_api import Page, expect

from analyzer.models import AnalyzedApp

pytestmark = pytest.mark.browser

IMG = '"><img src=x onerror=alert(1)>'


@pytest.fixture
def slow_gc() -> AnalyzedApp:
    hosts = [f"worker-{i % 5 + 1}.prod.example.com" for i in range(16)]
    hosts[3] = IMG
    return store_spark_app(executors=16, tasks_per_executor=40, slow_executor="7", hosts=hosts)


def panel_shot(page: Page, name: str) -> None:
    page.locator("#executor-anomaly").screenshot(path=str(screenshot_dir() / f"{name}.png"))


def chart_drawn(page: Page) -> None:
    page.wait_for_load_state("load")
    canvas = page.locator('canvas[data-chart="executor-anomaly"]')
    canvas.wait_for(state="visible")
    page.wait_for_function("c => window.Chart.getChart(c) !== undefined", arg=canvas.element_handle())
    box = canvas.bounding_box()
    assert box is not None
    assert box["width"] > 200
    assert box["height"] > 150


def test_a_user_sees_the_odd_executor_charts_its_features_and_picks_another(visit: Visit, slow_gc: AnalyzedApp):
    page = visit.open(f"/apps/{slow_gc.pk}/#executor-anomaly")
    panel = page.locator("#executor-anomaly")
    expect(panel.get_by_role("heading", name="Which executor is odd?")).to_be_visible()
    first = panel.locator("table.executor-anomaly-ranking tbody tr").first
    expect(first).to_have_attribute("aria-current", "true")
    assert words(first.inner_text()).startswith("1 7 shown below")
    expect(panel.locator("#executor-anomaly-summary")).to_contain_text(
        re.compile(r"Executor 7 on host worker-2\.prod\.example\.com: GC time per task \d+\.\d\u00d7 its peers' mean")
    )
    chart_drawn(page)
    datasets = page.evaluate(
        """() => window.Chart.getChart(document.querySelector('canvas[data-chart="executor-anomaly"]'))
        .data.datasets.map(d => [d.label, d.pointStyle, d.data.length])"""
    )
    assert datasets == [["Executor 7's tasks", "triangle", 40], ["Other executors' tasks", "circle", 15 * 40]]
    panel_shot(page, "40-executor-anomaly-desktop")

    # Another executor and one of its features, by links (no script needed).
    panel.locator("table.executor-anomaly-ranking").get_by_role("link", name="12", exact=True).click()
    expect(page).to_have_url(re.compile(r"\?executor=12#executor-anomaly$"))
    expect(panel.locator("#executor-anomaly-features-heading")).to_contain_text("Executor 12 on")
    panel.locator("table.executor-anomaly-features").get_by_role("link", name="input per task").click()
    expect(page).to_have_url(re.compile(r"\?executor=12&feature=input_bytes#executor-anomaly$"))
    expect(panel.locator("#executor-anomaly-chart-title")).to_contain_text("Input of each task over the app")
    chart_drawn(page)
    panel_shot(page, "41-executor-anomaly-selected-feature")
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    visit.assert_clean()


def test_on_a_phone_the_panel_fits_the_screen_width(phone: Visit, slow_gc: AnalyzedApp):
    page = phone.open(f"/apps/{slow_gc.pk}/#executor-anomaly")
    chart_drawn(page)
    panel_shot(page, "42-executor-anomaly-phone")
    # Close-ups a person can read at a phone's width: the start of the ranking, and the chart.
    top = page.locator("#executor-anomaly").evaluate("e => e.getBoundingClientRect().top + window.scrollY")
    page.screenshot(
        path=str(screenshot_dir() / "43-executor-anomaly-phone-top.png"),
        full_page=True,
        clip={"x": 0, "y": float(top), "width": 390, "height": 760},
    )
    page.locator("figure.executor-anomaly-chart").screenshot(
        path=str(screenshot_dir() / "44-executor-anomaly-phone-chart.png")
    )
    assert phone.horizontal_overflow() == 0
    phone.assert_clean()


def test_a_small_app_names_the_reference_runs_it_was_compared_with_and_links_them(visit: Visit):
    runs = [
        store_spark_app(executors=4, template="nightly", start_ms=1_772_000_000_000 + i * 3_600_000, seed=i)
        for i in range(3)
    ]
    app = store_spark_app(executors=4, template="nightly", start_ms=1_772_100_000_000, slow_executor="3", seed=9)
    page = visit.open(f"/apps/{app.pk}/#executor-anomaly")
    panel = page.locator("#executor-anomaly")
    expect(panel).to_contain_text("too few to compare among themselves")
    expect(panel.locator("#executor-anomaly-summary")).to_contain_text("the reference runs' mean")
    chart_drawn(page)
    panel_shot(page, "45-executor-anomaly-reference")
    panel.get_by_role("link", name=runs[-1].app_id).click()
    expect(page.locator("h1")).to_contain_text(runs[-1].app_id)
    visit.assert_clean()
