"""Template hygiene that a page test would only catch by reading the page."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "webui" / "templates"


def test_no_template_comment_spans_lines_since_django_prints_such_a_comment_on_the_page() -> None:
    """Django's ``{# #}`` comments end at the line's end: one that goes on to the next line is not a comment and
    is shown to every reader of the page (it was, above the report's heuristics). ``{% comment %}`` spans lines."""
    unclosed = [
        f"{path.relative_to(TEMPLATES)}:{number}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\{#(?!.*#\})", line)
    ]
    assert unclosed == []
