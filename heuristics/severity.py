"""Severity levels and four-level thresholds, with Dr. Elephant's inclusive semantics."""

from __future__ import annotations

import itertools
import math
from enum import IntEnum
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from appmodel.coerce import is_number


class Severity(IntEnum):
    NONE = 0
    LOW = 1
    MODERATE = 2
    SEVERE = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.capitalize()


def parse_threshold_value(raw: object) -> float:
    """A number, or a string holding a number or a simple fraction such as "1/8" (parsed, never evaluated)."""
    if isinstance(raw, bool):
        raise ValueError(f"expected a number, got {raw!r}")
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(Fraction(raw.strip()))
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a number or a fraction like 1/8, got {raw!r}") from None
    else:
        raise ValueError(f"expected a number, got {type(raw).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {raw!r}")
    return value


class Thresholds:
    """Four inclusive thresholds (low, moderate, severe, critical) and a direction.

    Ascending: a value at or above a threshold reaches its level. Descending: at or below. Equal neighbours
    are allowed (that level is then unreachable), a reversed order is not.
    """

    __slots__ = ("ascending", "critical", "low", "moderate", "severe")
    default_ascending: ClassVar[bool] = True

    low: float
    moderate: float
    severe: float
    critical: float
    ascending: bool

    def __init__(
        self, low: object, moderate: object, severe: object, critical: object, *, ascending: bool | None = None
    ) -> None:
        values = [parse_threshold_value(v) for v in (low, moderate, severe, critical)]
        direction = self.default_ascending if ascending is None else ascending
        pairs = itertools.pairwise(values)
        if not all((a <= b) if direction else (a >= b) for a, b in pairs):
            order = "ascending" if direction else "descending"
            raise ValueError(f"thresholds must be in {order} order (low, moderate, severe, critical), got {values}")
        for name, value in zip(("low", "moderate", "severe", "critical"), values, strict=True):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "ascending", direction)

    @classmethod
    def from_config(cls, raw: object) -> Thresholds:
        if isinstance(raw, Thresholds):
            return raw if isinstance(raw, cls) else cls(*raw.values)
        if isinstance(raw, str):
            raw = raw.split(",")  # Dr. Elephant's "a, b, c, d" form
        if not isinstance(raw, list | tuple) or len(raw) != 4:
            raise ValueError(f"expected 4 values (low, moderate, severe, critical), got {raw!r}")
        return cls(*raw)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Thresholds are immutable")

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle through __init__, which validates
        return (_rebuild, (type(self), self.values, self.ascending))

    @property
    def values(self) -> tuple[float, float, float, float]:
        return (self.low, self.moderate, self.severe, self.critical)

    def severity_of(self, value: float) -> Severity:
        if value is None or math.isnan(value):
            return Severity.NONE
        reached = (value >= t if self.ascending else value <= t for t in self.values)
        return Severity(sum(reached))

    def severities_of(self, values: npt.ArrayLike) -> npt.NDArray[np.int8]:
        """Vectorized severity_of; NaN gives NONE."""
        array = np.asarray(values, dtype=np.float64)
        levels = np.zeros(array.shape, dtype=np.int8)
        for t in self.values:
            levels += (array >= t) if self.ascending else (array <= t)
        return levels

    def as_config(self) -> list[float | int]:
        return [int(v) if v.is_integer() else v for v in self.values]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Thresholds):
            return NotImplemented
        return self.values == other.values and self.ascending == other.ascending

    def __hash__(self) -> int:
        return hash((self.values, self.ascending))

    def __repr__(self) -> str:
        direction = "ascending" if self.ascending else "descending"
        return f"Thresholds({', '.join(map(str, self.as_config()))}, {direction})"


class Ascending(Thresholds):
    """Config field type: higher values are worse."""

    __slots__ = ()
    default_ascending = True


class Descending(Thresholds):
    """Config field type: lower values are worse."""

    __slots__ = ()
    default_ascending = False


def is_four_levels(value: object) -> bool:
    """Whether a configured or stored value is four threshold levels (low, moderate, severe, critical).

    The one rule for every page and answer that tells thresholds from other settings: a list or tuple of exactly
    four finite numbers, the form :meth:`Thresholds.as_config` writes (and so ``config_as_dict`` and a stored
    finding's ``thresholds``). A bool is not a number here, nor is a string holding one: ``appmodel.coerce``'s
    rule, since neither a loaded config nor a stored result ever writes thresholds that way; NaN and the
    infinities are not levels either (``Thresholds`` refuses them, and stored JSON spells them as null or "inf").
    """
    return isinstance(value, list | tuple) and len(value) == 4 and all(is_number(v) and math.isfinite(v) for v in value)


def _rebuild(cls: type[Thresholds], values: tuple[float, ...], ascending: bool) -> Thresholds:
    return cls(*values, ascending=ascending)
