"""Sizes: the byte multiples and the parsers of size strings in configuration values. One module for every reader.

Two grammars, because the two systems read their settings differently:

- :func:`parse_size`: Spark's size strings ("4g", "512m", "1.5t", "8 GB"). What a bare number means is the
  caller's to say, never a default: Spark reads ``spark.*.memory`` and ``*.memoryOverhead`` in MiB
  (``default_unit="m"``) but ``spark.memory.offHeap.size`` in bytes (``"b"``). :func:`parse_size_or_none` is the
  same for callers that treat an absent or unreadable value as unknown instead of an error.
- :func:`parse_hadoop_size`: Hadoop's sizes (``dfs.blocksize``): a whole number of bytes, or one with a single
  k/m/g/t/p suffix ("128m").

Sizes are binary (KiB = 1024 bytes), as both systems count them.
"""

from __future__ import annotations

import math
import re
from typing import Final

KIB: Final = 1 << 10
MIB: Final = 1 << 20
GIB: Final = 1 << 30
TIB: Final = 1 << 40
PIB: Final = 1 << 50

_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_SIZE_UNITS: Final = {
    "b": 1,
    "k": KIB,
    "kb": KIB,
    "m": MIB,
    "mb": MIB,
    "g": GIB,
    "gb": GIB,
    "t": TIB,
    "tb": TIB,
    "p": PIB,
    "pb": PIB,
}
_HADOOP_SUFFIXES: Final = {"k": KIB, "m": MIB, "g": GIB, "t": TIB, "p": PIB}


def parse_size(text: str, default_unit: str) -> int:
    """Bytes in a Spark size string ("4g", "512m", "1t", "2048"); a bare number is in ``default_unit`` ("b", "k",
    "m", ...). Raises ValueError on anything else: a negative, unknown unit, or a size too large to be finite.
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    number, unit = match.groups()
    multiplier = _SIZE_UNITS.get((unit or default_unit).lower())
    if multiplier is None:
        raise ValueError(f"unknown size unit in {text!r}")
    value = float(number) * multiplier
    if not math.isfinite(value):
        raise ValueError(f"not a finite size: {text!r}")
    return int(value)


def parse_size_or_none(text: str | None, default_unit: str) -> int | None:
    """:func:`parse_size`, with None for an absent (None) or unreadable value instead of an error."""
    if text is None:
        return None
    try:
        return parse_size(text, default_unit)
    except ValueError:
        return None


def parse_hadoop_size(text: str) -> int:
    """Bytes in a Hadoop size ("134217728", "128m", "1g"): a whole number with at most one k/m/g/t/p suffix
    (any case, surrounding blanks ignored); no fractions, no "mb". The sign is kept: a caller decides whether a
    size of zero or less means anything. Raises ValueError on anything else.
    """
    lowered = text.strip().lower()
    scale = _HADOOP_SUFFIXES.get(lowered[-1:], 1)
    try:
        return int(lowered[:-1] if scale > 1 else lowered) * scale
    except ValueError:
        raise ValueError(f"not a Hadoop size: {text!r}") from None


def round_up(value: float, step: int) -> int:
    """``value`` rounded up to a whole multiple of ``step`` (a positive whole number), as an int; 0 stays 0."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    return math.ceil(value / step) * step
