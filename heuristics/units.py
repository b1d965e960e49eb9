"""Spark size strings in, human-formatted values out."""

from __future__ import annotations

import math
import re

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "p": 1 << 50,
    "pb": 1 << 50,
}
GIB = 1 << 30
MIB = 1 << 20


def parse_size(text: str, default_unit: str = "m") -> int:
    """Bytes in a Spark size string ("4g", "512m", "1t", "2048"); a bare number is in ``default_unit``.

    Raises ValueError on anything else.
    """
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    number, unit = match.groups()
    multiplier = _SIZE_UNITS.get((unit or default_unit).lower())
    if multiplier is None:
        raise ValueError(f"unknown size unit in {text!r}")
    return int(float(number) * multiplier)


def format_bytes(size: float) -> str:
    if size is None or math.isnan(size):
        return "n/a"
    for unit, scale in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB), ("KiB", 1 << 10)):
        if abs(size) >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{int(size)} B"


def format_duration(ms: float) -> str:
    """ "850 ms", "12.5 s", "3 min 12 s", "2 h 5 min"."""
    if ms is None or math.isnan(ms):
        return "n/a"
    if ms < 1000:
        return f"{round(ms)} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s".replace(".0 s", " s")
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s"


def format_ratio(value: float, digits: int = 2) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞"
    return f"{value:.{digits}f}"


def format_percent(value: float) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return f"{100 * value:.1f}%"
