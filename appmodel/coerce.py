"""Reading untrusted JSON: values from clusters' REST answers, event logs and stored results become the type the
reader needs, or a default, never an exception.

One module for every reader (fetchers, analyses, read models, presenters) so that "what counts as a number" is
decided once: a JSON boolean is never a number (``True`` is an ``int`` in Python, but a cluster that sends ``true``
for a byte count did not mean 1), a float is an integer only when it is whole (``3.0``, never ``3.5``), and a
string holding digits is a number only where the reader asks for it (``strings=True``: the ResourceManager and the
JobHistory Server send some numbers as strings; a stored result never does).

Names say what comes back: ``as_*`` always returns the type (the default when the value is not one), ``opt_*``
returns None instead.
"""

from __future__ import annotations

import math
from typing import Any, Final

INT64_MIN: Final = -(1 << 63)
INT64_MAX: Final = (1 << 63) - 1


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (an ``int`` or ``float``, never a ``bool``)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_float(value: Any, default: float = 0.0) -> float:
    """``value`` as a float when it is a JSON number, else ``default``."""
    return float(value) if is_number(value) else default


def opt_float(value: Any) -> float | None:
    """``value`` as a float when it is a JSON number, else None."""
    return float(value) if is_number(value) else None


def opt_finite(value: Any) -> float | None:
    """A finite float from a number or a string holding one (``"12.5"``, ``" 1e3 "``), as stored values and query
    strings carry them; None for None, a bool, NaN, an infinity, or anything ``float()`` refuses (an int too large
    for a float included)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def opt_int(value: Any, *, strings: bool = False, int64: bool = False) -> int | None:
    """``value`` as an int when it is a JSON integer or a whole float (``3.0``), else None.

    ``strings``: a string holding an integer (blanks around it ignored) counts too. ``int64``: a number outside
    the 64-bit range is None, for callers that put it in a numpy column or a bigint.
    """
    number: int | None = None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = int(value) if value.is_integer() else None
    elif strings and isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            return None
    if number is not None and int64 and not INT64_MIN <= number <= INT64_MAX:
        return None
    return number


def as_int(value: Any, default: int = 0, *, strings: bool = False, int64: bool = False) -> int:
    """:func:`opt_int`, with ``default`` instead of None."""
    number = opt_int(value, strings=strings, int64=int64)
    return default if number is None else number


def as_str(value: Any, default: str = "") -> str:
    """``value`` if it is a JSON string, else ``default``."""
    return value if isinstance(value, str) else default


def opt_str(value: Any) -> str | None:
    """``value`` if it is a JSON string (the empty one too), else None."""
    return value if isinstance(value, str) else None


def as_text(value: Any, default: str = "") -> str:
    """The text of any value: a string as it is, None as ``default``, anything else through ``str()`` (a number
    where a name was expected is still that name)."""
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)
