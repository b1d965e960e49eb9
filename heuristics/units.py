"""The old home of the size and formatting helpers, kept as names only: they live in :mod:`appmodel.units` and
:mod:`appmodel.formatting` (the sentence family). Custom heuristics and older tests import them from here.
"""

from __future__ import annotations

from appmodel import units
from appmodel.formatting import format_bytes, format_duration, format_percent, format_ratio
from appmodel.units import GIB, MIB

__all__ = ["GIB", "MIB", "format_bytes", "format_duration", "format_percent", "format_ratio", "parse_size"]


def parse_size(text: str, default_unit: str = "m") -> int:
    """:func:`appmodel.units.parse_size` with a bare number in MiB, as Spark reads ``spark.*.memory``."""
    return units.parse_size(text, default_unit)
