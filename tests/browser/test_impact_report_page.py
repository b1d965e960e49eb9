"""The report's headline, each finding's cost and the what-if chart in headless Chromium, at a desktop's and a
phone's width (issue 14)."""

from __future__ import annotations

import pytest
from browsing import Visit, screenshot_dir
from playwright.sync_api import Page, expect

from analyzer.models import AnalyzedApp
from analyzer.services import report_store
from tests.impact_reports import CLEAN, PARTITIONS, SMALL_TASKS, sample_report, with_change

pytestmark = pytest.mark.browser


@pytest.fixture
def costly() -> AnalyzedApp:
    report = with_change(sample_report(SMALL_TASKS))
    return report_store(report=report, source=report.source)


def what_if_drawn(page: Page) -> list[list[object]]:
    page.wait_for_load_state("load")
    canvas = page.locator('canvas[data-chart="what-if"]')
    canvas.wait_for(state="visible")
    page.wait_for_function("c => window.Chart.getChart(c) !== undefined", arg=canvas.element_handle())
    box = canvas.bounding_box()
    assert box is not None
    assert box["width"] > 200
    assert box["height"] > 150
    datasets: list[list[object]] = page.evaluate(
        """() => window.Chart.getChart(document.querySelector('canvas[data-chart="what-if"]'))
        .data.datasets.map(d => [d.label, d.data.length])"""
    )
    return datasets


def no_overflow(visit: Visit) -> None:
    """Nothing sticks out to the right of a phone's screen; the message names what does."""
    wide = visit.page.evaluate(
        """() => Array.from(document.querySelectorAll('body *'))
        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
        .filter(e => !e.parentElement || e.parentElement.getBoundingClientRect().right <= window.innerWidth + 1)
        .slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id)"""
    )
    assert visit.horizontal_overflow() == 0, wide


def section_shot(page: Page, selector: str, name: str) -> None:
    page.locator(selector).screenshot(path=str(screenshot_dir() / f"{name}.png"))


def test_the_report_leads_with_the_headline_and_charts_the_what_if(visit: Visit, costly: AnalyzedApp) -> None:
    page = visit.open(f"/apps/{costly.pk}/")
    headline = page.locator("#headline")
    expect(headline.get_by_role("heading", name="Headline")).to_be_visible()
    expect(headline).to_contain_text(f"{PARTITIONS.property} = {PARTITIONS.value}")
    expect(page.locator("#h-1 .finding-cost")).to_contain_text("of the run")
    labels = [label for label, _points in what_if_drawn(page)]
    assert labels[0] == "Estimated runtime"
    assert labels[1].startswith("This run (")
    assert labels[2].startswith("Ideal (")
    assert labels[3] == "Critical path"
    section_shot(page, "#headline", "50-impact-headline-desktop")
    section_shot(page, "#what-if", "51-impact-what-if-desktop")
    visit.shot("52-impact-report-desktop")
    visit.assert_clean()


def test_nothing_widens_the_report_or_the_dashboard_on_a_phone(phone: Visit, costly: AnalyzedApp) -> None:
    page = phone.open(f"/apps/{costly.pk}/")
    what_if_drawn(page)
    section_shot(page, "#headline", "53-impact-headline-phone")
    section_shot(page, "#what-if", "54-impact-what-if-phone")
    phone.shot("55-impact-report-phone")
    no_overflow(phone)
    clean = sample_report(CLEAN)
    app = report_store(report=clean, source=clean.source)
    page = phone.open(f"/apps/{app.pk}/")
    expect(page.locator("#headline")).to_contain_text("Nothing here is worth changing")
    no_overflow(phone)
    phone.open("/")
    phone.shot("56-impact-dashboard-phone")
    no_overflow(phone)
    phone.open("/help/#score")
    no_overflow(phone)
    phone.assert_clean()
