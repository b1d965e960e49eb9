"""Values made JSON-safe: numpy, enums, dataclasses, tuples and sets become plain builtins, NaN becomes null.

One converter for everything stored or answered as JSON. JSON has no NaN and no infinity; what an infinity
becomes is the caller's explicit choice, because the stored data already differs and must stay as it is:

- ``infinity="string"`` (the default): ``"inf"`` / ``"-inf"``. A finding's observed values, metrics, stage rows and
  parse stats are stored so: an infinite max/median ratio is a finding, not a missing value, and the pages
  show it as "∞" (``appmodel.formatting.page_value``).
- ``infinity="null"``: null, like NaN. The research analyses' answers (an attribution's explanation, a host
  snapshot, executor feature rows) are numbers a chart or a model reads back, where a string would not be one.

:func:`jsonb_safe` is :func:`json_safe` for PostgreSQL's ``jsonb``, which refuses the NUL character in any string.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np

Infinity = Literal["string", "null"]


def json_safe(value: Any, *, infinity: Infinity = "string") -> Any:
    """``value`` as JSON-ready builtins: numpy to Python, enums to their values, dataclasses and mappings to
    objects with string keys, tuples, sets and arrays to lists, NaN to None, an infinity as ``infinity`` says
    (see the module's docstring). Anything else becomes its ``str()``.
    """
    if value is None or isinstance(value, bool | str):
        return str(value) if isinstance(value, enum.Enum) and isinstance(value, str) else value
    if isinstance(value, enum.Enum):
        return json_safe(value.value, infinity=infinity)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        if math.isnan(value):
            return None
        if math.isfinite(value):
            return float(value)
        if infinity == "null":
            return None
        return "inf" if value > 0 else "-inf"
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, infinity=infinity) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset | np.ndarray):
        return [json_safe(v, infinity=infinity) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, infinity=infinity)
    return str(value)


def strip_nul(text: str) -> str:
    """``text`` without NUL characters, which PostgreSQL refuses in text columns and ``jsonb``."""
    return text.replace("\x00", "") if "\x00" in text else text


def jsonb_safe(value: Any) -> Any:
    """:func:`json_safe` (infinities as strings) with NUL characters removed from every string and key."""
    value = json_safe(value)
    if isinstance(value, str):
        return strip_nul(value)
    if isinstance(value, dict):
        return {strip_nul(k): jsonb_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonb_safe(v) for v in value]
    return value
