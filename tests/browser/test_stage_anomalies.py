"""The history page's "Which stage was the outlier?" section in headless Chromium, on a desktop and a phone.

Screenshots: var/artifacts/screenshots/stage-anomalies-desktop.png and stage-anomalies-phone.png.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

import numpy as np
import pytest
from browsing import Visit, screenshot_dir, words
from django.utils import timezone
from factories import make_recurring_runs, set_stage_hosts
from playwright.sync_api import expect

from analyzer.models import AnalyzedApp
from analyzer.stages.services import localize_template

pytestmark = pytest.mark.browser

TEMPLATE = "spark:airflow:etl_daily/aggregate_revenue"
SCRIPT = "<script>alert(1)</script>"
NAMES = (
    "csv at NativeMethodAccessorImpl.java:0",
    "groupByKey at /opt/airflow/dags/etl_daily/aggregate_revenue.py:42",
    f"count at job.py:57 {SCRIPT}",
    "save at NativeMethodAccessorImpl.java:0",
)


def _runs() -> list[AnalyzedApp]:
    """16 runs of four stages; stage 2 about 3x slower in runs 5 (on one host) and 12 (on every host); stored,
    localized, then one newer run."""
    rng = np.random.default_rng(5)
    rows = []
    for run in range(16):
        size = rng.normal(0, 0.06)
        row = [b * float(np.exp(size + rng.normal(0, 0.03))) for b in (40_000.0, 80_000.0, 100_000.0, 60_000.0)]
        if run in (5, 12):
            row[2] *= 3.0
        rows.append(row)
    now = timezone.now().replace(second=0, microsecond=0)
    runs = make_recurring_runs(TEMPLATE, rows, names=NAMES, job_def_id="etl_daily/aggregate_revenue")
    for i, app in enumerate(runs):  # recent hours, so the page's dates read as today's
        app.end_time = now - dt.timedelta(hours=len(runs) - i)
        app.start_time = app.end_time - dt.timedelta(milliseconds=app.runtime_ms or 0)
        app.save()
        hosts = ("ip-10-0-3-17.ec2.internal", "ip-10-0-3-18.ec2.internal", "ip-10-0-3-19.ec2.internal", SCRIPT)
        slow = {5: {SCRIPT: 5.0}, 12: dict.fromkeys(hosts, 3.0)}.get(i, {})
        set_stage_hosts(app, 2, {h: [900.0 * slow.get(h, 1.0), 1_100.0 * slow.get(h, 1.0)] for h in hosts})
    localize_template(TEMPLATE, None)
    return runs


def test_on_a_desktop_a_user_reads_which_stage_was_the_outlier_and_opens_a_slow_run(visit: Visit) -> None:
    _read_and_open(visit, "desktop")


def test_on_a_phone_the_stage_outliers_fit_the_screen_and_link_the_slow_runs(phone: Visit) -> None:
    _read_and_open(phone, "phone")


def _read_and_open(browser: Visit, device: str) -> None:
    runs = _runs()

    page = browser.open("/history/?" + urlencode({"template": TEMPLATE}))
    section = page.locator("#stage-anomalies")
    expect(section.get_by_role("heading", name="Which stage was the outlier?")).to_be_visible()
    sentence = words(section.locator(".stage-sentences li").first.inner_text())
    assert sentence.startswith(f"Stage 2 (count at job.py:57 {SCRIPT}) is the outlier in runs ")
    assert "\u00d7 its usual" in sentence  # a multiplication sign
    assert f"its tasks on host {SCRIPT} took 5.0\u00d7 the others'" in sentence
    assert "it was slow on every host" in sentence
    assert words(section.locator(".stage-categories").inner_text()).count("over the 15 % that triggers a look") == 1
    section.locator(".stage-localization").scroll_into_view_if_needed()
    browser.shot(f"stage-anomalies-{device}")
    section.screenshot(path=str(screenshot_dir() / f"stage-anomalies-{device}-section.png"))
    assert browser.horizontal_overflow() == 0

    section.locator(".stage-sentences li").first.get_by_role("link").first.click()
    page.wait_for_url("**/apps/*/")
    assert page.url.rstrip("/").split("/")[-1] in {str(runs[5].pk), str(runs[12].pk)}
    browser.assert_clean()
