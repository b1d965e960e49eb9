"""The Hosts page in headless Chromium: a straggler's histogram with its fitted density, the table, a host's trend.

Screenshots (desktop and phone) land in var/artifacts/screenshots/hosts-*.png.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from browsing import Visit, words
from django.utils import timezone
from factories import add_host_tasks, make_app
from playwright.sync_api import Page, expect

from analyzer.hosts import services as host_services
from analyzer.models import Cluster

pytestmark = pytest.mark.browser

HOSTILE = '"><img src=x onerror=alert(1)>'


def ranked_cluster() -> None:
    """A 30-host cluster with two slow hosts (one with a hostile name), ranked in three hourly snapshots."""
    prod = Cluster.objects.create(name="prod")
    rng = np.random.default_rng(7)
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    for a in range(6):
        app = make_app(cluster=prod, end_time=now - dt.timedelta(hours=4, minutes=a))
        for h in range(30):
            host = f"worker-{h:02d}.prod.example.com"
            shift = 0.0
            if h == 3:
                host, shift = HOSTILE, 1.0
            elif h == 17:
                shift = 1.6
            # Task z-scores are skewed to the right (a few slow tasks), as in real stages.
            add_host_tasks(app, host, rng.gamma(2.0, 0.7, 50) - 1.4 + shift)
    for hour in range(3):
        host_services.rank_hosts_snapshots(now=now - dt.timedelta(hours=2 - hour), windows=["24h", "7d"])


def assert_charts_drawn(page: Page) -> None:
    page.wait_for_load_state("load")
    assert page.evaluate("typeof window.Chart") == "function"
    for canvas in page.locator("canvas[data-chart]").all():
        canvas.wait_for(state="visible")
        page.wait_for_function("c => window.Chart.getChart(c) !== undefined", arg=canvas.element_handle())
        box = canvas.bounding_box()
        assert box is not None
        assert box["width"] > 0
        assert box["height"] > 0


def test_the_hosts_page_shows_stragglers_with_their_histograms_and_the_table(visit: Visit) -> None:
    ranked_cluster()
    page = visit.open("/hosts/?cluster=prod&window=24h")
    expect(page.get_by_role("heading", name="Straggler hosts (2)")).to_be_visible()
    assert page.locator('canvas[data-chart="host-histogram"]').count() == 2
    assert_charts_drawn(page)
    first = words(page.locator("table.hosts-table tbody tr").first.inner_text())
    assert first.startswith("0 worker-17.prod.example.com")
    assert first.lower().endswith("straggler")
    assert page.evaluate("document.querySelectorAll('img[src=\"x\"]').length") == 0
    visit.shot("hosts-desktop")
    page.get_by_role("link", name="worker-17.prod.example.com").first.click()
    expect(page.get_by_role("heading", name="Trend")).to_be_visible()
    assert_charts_drawn(page)
    assert page.locator('canvas[data-chart="host-trend-mean"]').count() == 1
    visit.shot("hosts-detail-desktop")
    visit.assert_clean()


def test_the_hosts_page_fits_a_phone(phone: Visit) -> None:
    ranked_cluster()
    page = phone.open("/hosts/?cluster=prod&window=24h")
    assert_charts_drawn(page)
    assert phone.horizontal_overflow() == 0
    phone.shot("hosts-phone")
    page = phone.open("/hosts/?cluster=prod&window=24h&host=worker-17.prod.example.com")
    assert_charts_drawn(page)
    assert phone.horizontal_overflow() == 0
    phone.shot("hosts-detail-phone")
    phone.assert_clean()


def test_without_a_snapshot_the_page_says_how_to_make_one(visit: Visit) -> None:
    page = visit.open("/hosts/")
    expect(page.get_by_text("No host ranking is stored yet")).to_be_visible()
    expect(page.locator("nav").get_by_role("link", name="Hosts")).to_have_attribute("aria-current", "page")
    visit.assert_clean()
