"""Spark size strings in, human-formatted values out."""

from __future__ import annotations

import math

from appmodel import conf

GIB = 1 << 30
MIB = 1 << 20


def parse_size(text: str, default_unit: str = "m") -> int:
    """Bytes in a Spark memory setting: a bare number is MiB, as Spark reads spark.*.memory. ValueError if garbage."""
    return conf.parse_size(text, default_unit)


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
