"""Resource budgets of reading one input (a Spark event log or a MapReduce job history): what a hostile or broken
file may cost before the read stops, and the clipping of name-like fields.

Every log is untrusted: a 2 KB zstd file can hold gigabytes of newlines, a 200 MB app name, a 200 MB environment.
The defaults (docs/SOURCES.md "Resource budgets" gives the reasoning from measured logs) leave every real log
untouched, the 4.75 GB 1M-task benchmark log included. Each is a setting of the same name as in ``SETTINGS``; the
analyzer applies the ones set once at start-up (``analyzer.fetch_budgets``, via :func:`set_default_budgets`), and
every reader given no budgets uses :func:`default_budgets`:

* decompressed bytes per compressed part at most ``max_ratio`` x its compressed size (not below 1 MiB), and at
  most ``max_bytes`` per log; non-empty lines at most ``max_lines``; one line at most ``max_line_bytes`` (a longer
  one is skipped without being held and counted malformed). Over the first three the read stops and the result is
  ``partial``, with a warning naming the budget and its setting.
* ``time_s``: wall-clock seconds reading one log may take, checked once per decoded chunk (1 MiB); over it the
  log is not analyzed at all (an error naming the setting), since what was read is an arbitrary prefix.
* ``max_name_chars`` / ``max_text_chars``: name-like fields (app, user, job and stage names, hosts, queue,
  configuration keys) and longer texts (descriptions, call sites, configuration values, failure reasons) are cut at
  parse time, with one warning per kind of field.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Final

GIB: Final = 1 << 30
MIB: Final = 1 << 20
# A compressed part may always decompress to this much, whatever its ratio: tiny files have odd ratios, and so
# much text costs well under a second to read.
MIN_DECOMPRESSED_ALLOWANCE: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class ReadBudgets:
    max_ratio: int = 200
    max_bytes: int = 64 * GIB
    max_lines: int = 200_000_000
    max_line_bytes: int = 64 * MIB
    time_s: float = 900.0
    max_name_chars: int = 1_000
    max_text_chars: int = 100_000

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{SETTINGS[spec.name]}: expected a positive number, got {value!r}")


# The setting (and environment variable) of each budget (docs/SOURCES.md "Resource budgets").
SETTINGS: Final[Mapping[str, str]] = {
    "max_ratio": "HINDSIGHT_READ_MAX_RATIO",
    "max_bytes": "HINDSIGHT_READ_MAX_BYTES",
    "max_lines": "HINDSIGHT_READ_MAX_LINES",
    "max_line_bytes": "HINDSIGHT_READ_MAX_LINE_BYTES",
    "time_s": "HINDSIGHT_INPUT_TIME_BUDGET_S",
    "max_name_chars": "HINDSIGHT_READ_MAX_NAME_CHARS",
    "max_text_chars": "HINDSIGHT_READ_MAX_TEXT_CHARS",
}


_default_budgets = ReadBudgets()


def default_budgets() -> ReadBudgets:
    """The budgets of every read given none: the defaults above, or what the settings made them at start-up."""
    return _default_budgets


def set_default_budgets(budgets: ReadBudgets) -> None:
    """Replace the budgets every later read uses by default (the analyzer applies its settings once at start-up)."""
    global _default_budgets
    _default_budgets = budgets


class OverTime(Exception):
    """Reading one input took longer than its wall-clock budget; the message says so, naming the setting."""


class Deadline:
    """The wall-clock budget of one read, checked cheaply (once per chunk) by the loop that reads."""

    __slots__ = ("_at", "_budget_s")

    def __init__(self, budget_s: float) -> None:
        self._budget_s = budget_s
        self._at = time.monotonic() + budget_s

    def check(self) -> None:
        if time.monotonic() > self._at:
            raise OverTime(
                f"reading stopped after the {self._budget_s:g} s budget for one input "
                f"({SETTINGS['time_s']}); not analyzed"
            )


def over_budget_warning(what: str, budget: str) -> str:
    """The warning of a read stopped by a budget: what was exceeded and the setting that raises it."""
    return (
        f"{what}: the read stopped here and the rest of the log is not analyzed (raise {SETTINGS[budget]} to read it)"
    )


class Clipper:
    """Cuts name-like and text fields at their budget, counting what it cut per kind of field; ``warnings()`` is one
    line per kind (never one per event: a hostile log can repeat a long name a million times)."""

    __slots__ = ("_clipped", "max_name", "max_text")

    def __init__(self, budgets: ReadBudgets) -> None:
        self.max_name = budgets.max_name_chars
        self.max_text = budgets.max_text_chars
        self._clipped: dict[str, tuple[int, int, str]] = {}  # kind -> (values cut, limit, budget)

    def name(self, kind: str, value: str) -> str:
        return value if len(value) <= self.max_name else self._cut(kind, value, self.max_name, "max_name_chars")

    def text(self, kind: str, value: str) -> str:
        return value if len(value) <= self.max_text else self._cut(kind, value, self.max_text, "max_text_chars")

    def _cut(self, kind: str, value: str, limit: int, budget: str) -> str:
        count, _, _ = self._clipped.get(kind, (0, limit, budget))
        self._clipped[kind] = (count + 1, limit, budget)
        return value[:limit]

    def warnings(self) -> list[str]:
        return [
            f"{count} {kind} longer than {limit:,} characters cut to that length ({SETTINGS[budget]})"
            for kind, (count, limit, budget) in self._clipped.items()
        ]


class TimingFixes:
    """Impossible times (an end before its start, a time past the app's end) set right, counted per kind; one
    warning per kind. Any fix makes the result partial: the log's clock cannot be trusted there."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, kind: str, count: int = 1) -> None:
        if count:
            self._counts[kind] = self._counts.get(kind, 0) + count

    def __bool__(self) -> bool:
        return bool(self._counts)

    def warnings(self) -> list[str]:
        return [f"impossible times set right: {count} {kind}" for kind, count in self._counts.items()]
