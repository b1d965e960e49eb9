"""Signing in and the API docs in headless Chromium, under the Content-Security-Policy (issue 15, F1 and F15).

A blocked inline script or style shows as a console error ("Refused to execute ... Content Security Policy"),
which Visit.assert_clean fails on.
"""

from __future__ import annotations

import pytest
from browsing import Visit
from django.contrib.auth.models import User
from django.test import override_settings
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def test_swagger_ui_draws_the_api_under_the_content_security_policy(visit: Visit) -> None:
    """F15: Swagger UI must work with script-src 'self' (drf-spectacular's split view, files from the sidecar)."""
    response = visit.page.goto(visit.base_url + "/api/docs/")
    assert response is not None
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(visit.page.locator(".swagger-ui .opblock").first).to_be_visible()
    visit.shot("api-docs")
    visit.assert_clean()


@override_settings(HINDSIGHT_API_AUTH="token")
def test_in_token_mode_a_visitor_signs_in_reaches_the_page_asked_for_and_signs_out(visit: Visit) -> None:
    """F1: the pages are behind a real sign-in page; the header says who is signed in and signs out."""
    User.objects.create_user("ana", password="right-horse-battery")
    page = visit.open("/apps/?q=etl")
    expect(page).to_have_url(visit.base_url + "/login/?next=/apps/%3Fq%3Detl")
    visit.shot("sign-in")
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill("right-horse-battery")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(visit.base_url + "/apps/?q=etl")
    expect(page.locator(".account")).to_contain_text("Signed in as ana")
    page.get_by_role("button", name="Sign out").click()
    visit.open("/apps/")
    expect(page).to_have_url(visit.base_url + "/login/?next=/apps/")
    visit.assert_clean()
