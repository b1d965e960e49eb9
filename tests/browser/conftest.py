"""Browser tests: the web UI in real headless Chromium (Debian's ``chromium``), driven by Playwright.

The app is served by pytest-django's ``live_server`` (a thread on 127.0.0.1 against the test PostgreSQL
database, static files included); each test commits its rows (``transactional_db``, which ``live_server``
brings) so that thread sees them. Nothing is downloaded: Playwright launches the system Chromium
(``HINDSIGHT_CHROMIUM``, default ``/usr/bin/chromium``), never a browser of its own. Without Chromium or
Playwright these tests skip locally and fail under ``CI=true``, so a CI machine without its browser cannot pass
silently; ``scripts/bootstrap.sh`` installs Chromium when it can.

Full-page screenshots of the pages visited go to ``var/artifacts/screenshots/`` (``$HINDSIGHT_ARTIFACTS``
moves them), for a person to look at after a run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
from browsing import Visit

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Dialog, Error, Playwright, ViewportSize

# The live server binds here (pytest-django reads this when the session's server starts), not to "localhost",
# which may resolve to ::1 first.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")

CHROMIUM = os.environ.get("HINDSIGHT_CHROMIUM", "/usr/bin/chromium")
DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}  # an iPhone 12 to 14 held upright, in CSS pixels


def _unavailable(reason: str) -> NoReturn:
    """Fail under CI, where the browser is part of the setup; skip elsewhere."""
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}:
        pytest.fail(f"the browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def playwright_driver(django_db_setup: None) -> Iterator[Playwright]:
    # While Playwright runs, its event loop counts as running in this thread, and Django refuses database calls
    # from such a thread. So the test database is created first (django_db_setup), and the scope is the module,
    # not the session: it stops with these tests and no later test sees its loop.
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -r requirements-dev.txt)")
    if not os.access(CHROMIUM, os.X_OK):
        _unavailable(f"no Chromium at {CHROMIUM}: apt-get install chromium, or point HINDSIGHT_CHROMIUM at one")
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as running:
        # Then the ORM calls of these tests (their rows, the flush after each) come from a thread where Django
        # sees a running loop; its guard is for code inside a loop, and this code is plain synchronous code.
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield running


@pytest.fixture(scope="module")
def browser(playwright_driver: Playwright) -> Iterator[Browser]:
    # Containers often give /dev/shm only 64 MB, where Chromium's renderer crashes on long pages.
    launched = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=["--disable-dev-shm-usage"])
    yield launched
    launched.close()


def _visit(browser: Browser, live_server: Any, viewport: ViewportSize) -> Iterator[Visit]:
    # A context per test: no cookies, cache or history carried over from another test.
    context = browser.new_context(viewport=viewport, locale="en-US", timezone_id="UTC")
    context.set_default_timeout(10_000)
    page = context.new_page()
    visit = Visit(page=page, base_url=str(live_server.url))

    def on_console(message: ConsoleMessage) -> None:
        # Every error counts, a missing file (a 404) included: base.html names an empty icon, so not even
        # /favicon.ico is asked for. A Content-Security-Policy violation (an inline script or style the policy
        # blocked) is reported as a console error too, so every browser test also checks the policy.
        if message.type == "error":
            visit.problems.append(f"console error: {message.text} at {message.location.get('url', '?')}")

    def on_page_error(error: Error) -> None:
        visit.problems.append(f"uncaught: {error.message}")

    def on_dialog(dialog: Dialog) -> None:
        visit.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()  # an open dialog would block the page until the test times out

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    page.on("dialog", on_dialog)
    yield visit
    context.close()


@pytest.fixture
def visit(browser: Browser, live_server: Any) -> Iterator[Visit]:
    """A fresh desktop-sized page on the live server."""
    yield from _visit(browser, live_server, DESKTOP)


@pytest.fixture
def phone(browser: Browser, live_server: Any) -> Iterator[Visit]:
    """A fresh page the size of a phone held upright."""
    yield from _visit(browser, live_server, PHONE)
