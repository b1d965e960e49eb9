"""Every response carries a Content-Security-Policy and the usual hardening headers (issue 15, F15).

The policy allows only the site's own scripts, so the templates must hold no inline script and no on* attribute;
Swagger UI is served by drf-spectacular's split view, whose start-up script is a file of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[2] / "webui" / "templates"


@pytest.mark.parametrize("path", ["/", "/apps/", "/help/", "/login/", "/api/docs/", "/api/v1/heuristics", "/healthz"])
def test_every_response_has_a_content_security_policy_allowing_only_the_sites_own_scripts(path: str) -> None:
    """F15: no CSP header was sent."""
    response = Client().get(path)
    policy = response["Content-Security-Policy"]
    directives = {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}
    assert directives["script-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["base-uri"] == ["'self'"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_swagger_ui_loads_its_start_up_script_as_a_file_not_inline() -> None:
    """F15: drf-spectacular's SpectacularSwaggerView writes an inline script the CSP would block."""
    page = Client().get("/api/docs/").content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", page), page
    script = re.search(r'<script src="(/api/docs/\?script=[^"]*)"', page)
    assert script is not None, page
    answer = Client().get(script.group(1).replace("&amp;", "&"))
    assert answer.status_code == 200
    assert b"SwaggerUIBundle" in answer.content


def test_no_template_has_an_inline_script_an_event_handler_attribute_or_a_style_attribute() -> None:
    """A guard for the F15 policy (main had none yet): script-src and style-src 'self' would block them."""
    found = []
    for template in TEMPLATES.rglob("*.html"):
        text = re.sub(r"{%.*?%}|{{.*?}}", "", template.read_text())  # template tags are not HTML attributes
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag and "application/json" not in tag:
                found.append(f"{template.name}: {tag}")
        found += [f"{template.name}: {m}" for m in re.findall(r"<[^>]*\s(on[a-z]+|style)\s*=", text)]
    # json_script writes <script type="application/json">: data, never run, and allowed by the policy.
    assert found == []


def test_the_policy_can_be_replaced_from_the_environment_default_lives_in_base() -> None:
    assert "script-src 'self'" in settings.HINDSIGHT_CONTENT_SECURITY_POLICY
