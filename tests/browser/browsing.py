"""What a browser test holds while it drives a page: the page, what went wrong in it, and where screenshots go."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO = Path(__file__).resolve().parents[2]


def screenshot_dir() -> Path:
    """``$HINDSIGHT_ARTIFACTS/screenshots``, by default ``var/artifacts/screenshots`` in the checkout."""
    root = Path(os.environ.get("HINDSIGHT_ARTIFACTS") or REPO / "var" / "artifacts")
    path = root / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class Visit:
    """One test's page on the live server, with what went wrong in it: script and console errors, dialogs."""

    page: Page
    base_url: str
    problems: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def open(self, path: str) -> Page:
        response = self.page.goto(self.base_url + path)
        assert response is not None, path
        assert response.ok, f"{path} answered {response.status}"
        return self.page

    def shot(self, name: str) -> Path:
        """A full-page screenshot, for a person to look at after the run."""
        path = screenshot_dir() / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def horizontal_overflow(self) -> int:
        """How many CSS pixels the page is wider than the viewport (0 when nothing scrolls sideways)."""
        extra: Any = self.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        return max(0, int(extra))

    def assert_clean(self) -> None:
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.problems == [], f"errors in the page: {self.problems}"


def words(text: str) -> str:
    """Text with each run of whitespace as one space, as it reads."""
    return re.sub(r"\s+", " ", text).strip()
