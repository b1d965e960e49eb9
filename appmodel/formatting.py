"""Numbers as text: sizes, durations, percents, ratios, counts. One module, one family per place the text goes.

The families differ on purpose, and each keeps the form its readers have always seen:

- **Sentences** (``format_*``): the details and advice of a finding, written by heuristics and stored with it
  ("spilled 1.50 GiB over 3 min 12 s, 12.5% of the input"). Missing is "n/a". Sizes have two decimals, a
  whole number of seconds drops its ".0", a percent has no space before "%", and an infinite ratio is "∞".
- **Pages** (``page_*``): the web UI's template filters, in table cells and short phrases. Missing is
  :data:`MISSING` (an em dash). Any number or numeric string is accepted (a stored JSON value, a database
  column), a bool or an infinity is missing. Sizes have one decimal, seconds keep their ".0" so a column of
  durations lines up, and a percent has a space before "%".
- **Settings** (``setting_*``): a value a finding's change tells the user to set, as it is typed in a
  configuration ("6g", "4608m", "2560"): sizes are rounded up, never down, so a suggestion is never below what
  it was computed from.
- **Terminal** (``terminal_*``): the text verdict of ``manage.py analyze`` and the commands' summaries. Missing is
  "unknown"; durations stay in seconds up to two minutes; "GB-h" is plain ASCII.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

from appmodel.coerce import opt_finite
from appmodel.units import GIB, KIB, MIB, TIB

MISSING: Final = "—"  # a page's missing value
_BINARY_UNITS: Final = (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB))


# ---- sentences (findings) -------------------------------------------------------------------------------------


def format_bytes(size: float) -> str:
    """ "512 B", "1.50 GiB"; "n/a" for None or NaN."""
    if size is None or math.isnan(size):
        return "n/a"
    for unit, scale in _BINARY_UNITS:
        if abs(size) >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{int(size)} B"


def format_duration(ms: float) -> str:
    """ "850 ms", "12.5 s", "12 s", "3 min 12 s", "2 h 5 min"; "n/a" for None or NaN."""
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
    """ "1.25" (``digits`` decimals), "∞" for an infinite ratio; "n/a" for None or NaN."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "∞"
    return f"{value:.{digits}f}"


def format_percent(value: float) -> str:
    """A ratio as "12.5%"; "n/a" for None or NaN."""
    if value is None or math.isnan(value):
        return "n/a"
    return f"{100 * value:.1f}%"


# ---- settings (a value as a user types it in a configuration) ------------------------------------------------


def setting_size(size: float) -> str:
    """Bytes as Spark's size settings are typed: "6g" for a whole number of GiB, else whole MiB rounded up
    ("4608m"); never below "1m"."""
    mebibytes = max(1, math.ceil(size / MIB))
    return f"{mebibytes // 1024}g" if mebibytes % 1024 == 0 else f"{mebibytes}m"


def setting_mebibytes(size: float) -> str:
    """Bytes as Hadoop's ``*.memory.mb`` and ``io.sort.mb`` are typed: whole MiB, rounded up ("2560")."""
    return str(max(1, math.ceil(size / MIB)))


# ---- pages (template filters) ---------------------------------------------------------------------------------


def page_duration(ms: Any) -> str:
    """Milliseconds as "850 ms", "12.5 s", "12.0 s", "3 min 12 s" or "2 h 5 min"."""
    value = opt_finite(ms)
    if value is None:
        return MISSING
    if abs(value) < 1000:
        return f"{round(value)} ms"
    if abs(value) < 60_000:
        return f"{value / 1000:.1f} s"
    hours, rest = divmod(round(value / 1000), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {seconds} s"


def page_duration_s(seconds: Any) -> str:
    """Seconds written as :func:`page_duration` writes milliseconds."""
    value = opt_finite(seconds)
    return MISSING if value is None else page_duration(value * 1000)


def page_gb_hours(value: Any) -> str:
    """ "1,234.500 GB·h"."""
    number = opt_finite(value)
    return MISSING if number is None else f"{number:,.3f} GB·h"


def page_percent(ratio: Any, digits: int = 1) -> str:
    """A ratio as "12.5 %" (``digits`` decimals)."""
    number = opt_finite(ratio)
    return MISSING if number is None else f"{100 * number:.{digits}f} %"


def page_share(part: Any, whole: Any) -> str:
    """``part`` as a percentage of ``whole`` ("12.5 %"), or "" when undefined (either missing, or ``whole`` 0)."""
    part_number, whole_number = opt_finite(part), opt_finite(whole)
    if part_number is None or not whole_number:
        return ""
    return f"{100 * part_number / whole_number:.1f} %"


def page_bytes(value: Any) -> str:
    """Bytes as "512 B" or "1.5 GiB"."""
    number = opt_finite(value)
    if number is None:
        return MISSING
    for unit, scale in _BINARY_UNITS:
        if abs(number) >= scale:
            return f"{number / scale:.1f} {unit}"
    return f"{int(number)} B"


def page_mebibytes(value: Any) -> str:
    """A size given in MiB (YARN's "MB"), as :func:`page_bytes` writes bytes."""
    number = opt_finite(value)
    return MISSING if number is None else page_bytes(number * MIB)


def page_count(value: Any) -> str:
    """ "1,234" for a whole number, three significant digits ("0.125", "1.23e+04") otherwise."""
    number = opt_finite(value)
    if number is None:
        return MISSING
    return f"{int(number):,}" if number.is_integer() else f"{number:,.3g}"


def page_value(value: Any) -> str:
    """Any stored JSON value as one line of text (numbers rounded for reading; "inf" is "∞")."""
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "∞" if value > 0 else "-∞" if value < 0 else "n/a"
        if value.is_integer() or abs(value) >= 10_000:
            return f"{value:,.0f}"
        return f"{value:.4g}" if abs(value) >= 0.001 else f"{value:.2e}"
    if isinstance(value, str):
        return {"inf": "∞", "-inf": "-∞"}.get(value, value)  # stored JSON spells infinities as strings
    if isinstance(value, list | tuple) and all(not isinstance(v, dict | list) for v in value):
        return ", ".join(page_value(v) for v in value)
    if isinstance(value, dict) and all(not isinstance(v, dict | list) for v in value.values()):
        return ", ".join(f"{key} {page_value(v)}" for key, v in value.items())
    return json_text(value)


def page_setting(value: Any) -> str:
    """A configured value as the help pages write a heuristic's setting: "yes"/"no", a whole float without its ".0"
    ("3", not "3.0"), other numbers and strings as Python writes them (no separators, no rounding: a setting reads
    as it is typed in the YAML), a flat list joined by ", ", anything else as JSON."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list | tuple) and all(isinstance(v, int | float | str) for v in value):
        return ", ".join(page_setting(v) for v in value)
    return json.dumps(value, default=str, ensure_ascii=False)


def page_z_score(value: float | None) -> str:
    """A z-score (a host's slowness in standard deviations) with two decimals and a true minus sign, U+2212, rather
    than a hyphen ("0.50", "\N{MINUS SIGN}1.25"); :data:`MISSING` for None."""
    return MISSING if value is None else f"{value:.2f}".replace("-", "\N{MINUS SIGN}")


def json_text(value: Any) -> str:
    """A stored JSON value as text: a string as it is, anything else as compact JSON (non-ASCII kept)."""
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


# ---- terminal (commands) --------------------------------------------------------------------------------------


def terminal_duration(ms: int | None) -> str:
    """ "95.0 s" up to two minutes, then "3 min 12 s" or "2 h 5 min"; "unknown" for None."""
    if ms is None:
        return "unknown"
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {secs} s"


def terminal_gb_hours(value: float | None) -> str:
    """ "12.345 GB-h"; "unknown" for None."""
    return "unknown" if value is None else f"{value:.3f} GB-h"


def terminal_decimal_size(n: int) -> str:
    """Bytes in decimal units, as a file's size is usually read: "12.3 MB", "340 kB"."""
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"
