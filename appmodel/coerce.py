"""Reading untrusted JSON: values from clusters' REST answers, event logs and stored results become the type the
reader needs, or a default, never an exception.

One module for every reader (fetchers, analyses, read models, presenters) so that "what counts as a number" is
decided once: a JSON boolean is never a number (``True`` is an ``int`` in Python, but a cluster that sends ``true``
for a byte count did not mean 1), and a string holding digits is a number only where :func:`as_int` is asked to
parse it.
"""

from __future__ import annotations

from typing import Any


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
