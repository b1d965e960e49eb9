"""Help content: each heuristic's docstring and current thresholds, read from the loaded heuristic suite.

The help text is plain text (a docstring); it is split into paragraphs, bullet lists and preformatted
blocks here and always rendered escaped.
"""

from __future__ import annotations

import inspect
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings

from analysis import metrics as metrics_module
from appmodel.formatting import page_setting
from heuristics.severity import is_four_levels

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TextBlock:
    kind: Literal["h", "p", "ul", "pre"]
    lines: list[str]


@dataclass(frozen=True, slots=True)
class HeuristicHelp:
    code: str
    name: str
    app_types: list[str]
    summary: str
    blocks: list[TextBlock]
    levels: list[tuple[str, list[str]]] = field(default_factory=list)  # four-level thresholds by setting
    settings: list[tuple[str, str]] = field(default_factory=list)  # every other setting


@dataclass(frozen=True, slots=True)
class Catalog:
    heuristics: list[HeuristicHelp]
    error: str = ""  # why the list is empty or incomplete, for the page to say


def _paragraph_blocks(lines: list[str]) -> list[TextBlock]:
    """One chunk of lines (no blank line inside) as a paragraph, a bullet list or a code block."""
    if all(line.startswith(("    ", "\t", ">>>")) for line in lines):
        return [TextBlock("pre", [inspect.cleandoc("\n".join(lines))])]
    if not any(line.lstrip().startswith(("- ", "* ")) for line in lines):
        return [TextBlock("p", [" ".join(line.strip() for line in lines)])]
    head: list[str] = []
    items: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(("- ", "* ")):
            items.append(stripped[2:].strip())
        elif items:
            items[-1] += " " + stripped  # a wrapped item continues
        else:
            head.append(stripped)
    return ([TextBlock("p", [" ".join(head)])] if head else []) + [TextBlock("ul", items)]


def text_blocks(text: str) -> list[TextBlock]:
    """Docstring text as headings, paragraphs (hard-wrapped lines joined), bullet lists and code blocks.

    A line ending in ":" followed by indented lines is a section heading ("Why it matters:").
    """
    blocks: list[TextBlock] = []
    for chunk in inspect.cleandoc(text or "").split("\n\n"):
        lines = [line.rstrip() for line in chunk.split("\n") if line.strip()]
        if not lines:
            continue
        first = lines[0]
        if first.endswith(":") and not first.startswith(" ") and len(lines) > 1 and lines[1].startswith(" "):
            blocks.append(TextBlock("h", [first[:-1].strip()]))
            lines = inspect.cleandoc("\n".join(lines[1:])).split("\n")
        elif lines[0].startswith(" ") and blocks and blocks[-1].kind != "pre":
            lines = inspect.cleandoc("\n".join(lines)).split("\n")  # a section's next paragraph
        blocks.extend(_paragraph_blocks(lines))
    return blocks


_INLINE_CODE = re.compile(r"``(.+?)``|`([^`]+)`")
_EMPHASIS = re.compile(r"(?<![\w*])\*(\w[^*]*?)\*(?![\w*])")


def inline_segments(text: str) -> list[tuple[bool, str]]:
    """Text split into (is_code, text) pieces at ``code`` and `code` marks; *emphasis* marks are dropped."""
    segments: list[tuple[bool, str]] = []
    position = 0
    for match in _INLINE_CODE.finditer(text):
        if match.start() > position:
            segments.append((False, _EMPHASIS.sub(r"\1", text[position : match.start()])))
        segments.append((True, match.group(1) or match.group(2)))
        position = match.end()
    if position < len(text):
        segments.append((False, _EMPHASIS.sub(r"\1", text[position:])))
    return segments


def metrics_explanation() -> list[TextBlock]:
    """The metrics module's own explanation of how the resource metrics are computed, minus its summary line."""
    blocks = text_blocks(metrics_module.__doc__ or "")[1:]
    return [b for b in blocks if not (b.kind == "p" and b.lines[0].startswith("Definitions ("))]


def _describe(heuristic: Any) -> HeuristicHelp:
    help_text = str(getattr(heuristic, "help_text", "") or "")
    blocks = text_blocks(help_text)
    summary = blocks[0].lines[0] if blocks and blocks[0].kind == "p" else ""
    try:
        config = dict(heuristic.config_as_dict() or {})
    except Exception:  # a broken config must not take the help page down
        logger.exception("config_as_dict failed for heuristic %s", getattr(heuristic, "code", "?"))
        config = {}
    app_types = [str(getattr(t, "value", t)) for t in getattr(heuristic, "app_types", ()) or ()]
    return HeuristicHelp(
        code=str(heuristic.code),
        name=str(getattr(heuristic, "name", heuristic.code)),
        app_types=app_types,
        summary=summary,
        blocks=blocks,
        levels=[(str(k), [page_setting(v) for v in value]) for k, value in config.items() if is_four_levels(value)],
        settings=[(str(k), page_setting(value)) for k, value in config.items() if not is_four_levels(value)],
    )


def heuristic_catalog() -> Catalog:
    """Every heuristic of the configured suite, in suite order; an explanation instead when it cannot load."""
    try:
        from heuristics import load_suite  # imported late: a broken heuristics package must not break the UI
    except ImportError:
        return Catalog([], "No heuristic suite is installed in this version of Hindsight.")
    try:
        suite = load_suite(settings.HINDSIGHT_HEURISTICS_FILE, settings.HINDSIGHT_SEVERITY_PROFILE)
    except Exception as exc:  # a bad override file is a user error to show, not a server error
        logger.exception("loading the heuristic suite failed")
        return Catalog([], f"The heuristic configuration could not be loaded: {exc}")
    return Catalog([_describe(h) for h in getattr(suite, "heuristics", ())])


def heuristic_help(code: str) -> HeuristicHelp | None:
    return next((h for h in heuristic_catalog().heuristics if h.code == code), None)
