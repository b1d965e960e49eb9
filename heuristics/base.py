"""What a heuristic is and what it returns."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from heuristics.severity import Severity, Thresholds

HELP_SECTIONS: tuple[str, ...] = ("What it measures", "Why it matters", "What to change")

Observed = dict[str, float | int | str]


class ConfigError(ValueError):
    """Bad heuristic configuration; the message starts with the offending key."""


class HeuristicConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Base of every heuristic's typed, frozen config. Thresholds fields are typed Ascending or Descending."""


ConfigT = TypeVar("ConfigT", bound=HeuristicConfig)

# Config field types for guards and other scalar settings: the lower bound is checked when the config loads, so a
# bad value stops start-up with "<code>.<key>: Expected `int` >= 0" instead of a heuristic failing on some app.
# Each heuristic's Config comments say which a key is and why; docs/HEURISTICS.md lists them.
Count = Annotated[int, msgspec.Meta(ge=0)]
"""A count where 0 is meaningful (a guard of 0 judges everything, however little data there is)."""
PositiveCount = Annotated[int, msgspec.Meta(ge=1)]
"""A count or size where 0 means nothing (a divisor, a length to cut text to)."""
NonNegative = Annotated[float, msgspec.Meta(ge=0)]
"""A size, duration or share where 0 is meaningful (no floor); NaN is refused, infinity allowed."""
Positive = Annotated[float, msgspec.Meta(gt=0)]
"""A scale or divisor, where 0 would divide by zero or mean nothing."""
Headroom = Annotated[float, msgspec.Meta(ge=1, le=10)]
"""A factor over an observed peak: below 1 would suggest less than the app used, above 10 is no headroom."""


@dataclass(frozen=True, slots=True)
class Change:
    """One concrete change to make, with its value computed from this app (never a bare "lower X").

    ``property`` is a configuration key (``spark.sql.shuffle.partitions``) or, for a change that is not a setting,
    a short action name (``salt keys of stage 3``); ``value`` the value to set, as the user would type it;
    ``reason`` one sentence saying where the value comes from (``"41 GiB of shuffle data / 200 MiB per task"``).
    """

    property: str
    value: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"property": self.property, "value": self.value, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class HeuristicResult:
    code: str
    name: str
    severity: Severity
    score: int
    details: list[tuple[str, str]]  # the report's details table, human-formatted values
    advice: str  # one line, what to change; "" when severity is NONE
    observed: dict[str, float | int | str]  # raw observed values; under a four-level threshold key, the worst judged
    thresholds: dict[str, object]  # the config values applied
    stages: list[tuple[int, int]]  # stage attempts involved
    executors: list[str]  # executor ids involved
    # What to change, with values computed from the app (docs/IMPACT.md); empty when there is nothing to change.
    changes: tuple[Change, ...] = ()


def score_of(severity: Severity, counted: int) -> int:
    """Dr. Elephant's score: severity x tasks (or executors) counted, only from MODERATE up."""
    return int(severity) * max(0, int(counted)) if severity >= Severity.MODERATE else 0


def config_value_as_builtin(value: Any) -> Any:
    if isinstance(value, Thresholds):
        return value.as_config()
    if isinstance(value, tuple | list):
        return [config_value_as_builtin(v) for v in value]
    return value


class Heuristic(Generic[ConfigT]):
    """Base class: subclasses set ``code``, ``name``, ``app_types``, a nested ``Config`` and ``evaluate``.

    Subclass as ``class Mine(Heuristic["Mine.Config"])`` so ``self.config`` has Mine.Config's type; a bare
    ``Heuristic`` base still works, with an untyped config. The class docstring is the heuristic's help page.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    app_types: ClassVar[tuple[str, ...]] = ("spark",)
    # A ClassVar cannot name ConfigT, so __init__ checks at run time that the config is this class's Config.
    Config: ClassVar[type[HeuristicConfig]] = HeuristicConfig

    def __init__(self, config: ConfigT) -> None:
        if not isinstance(config, self.Config):
            raise TypeError(f"{self.code}: config must be a {self.Config.__qualname__}, got {type(config).__name__}")
        self.config: ConfigT = config

    @property
    def help_text(self) -> str:
        return inspect.cleandoc(type(self).__doc__ or "")

    def config_as_dict(self) -> dict[str, object]:
        return {f: config_value_as_builtin(getattr(self.config, f)) for f in self.config.__struct_fields__}

    def evaluate(self, app: Any) -> HeuristicResult:
        raise NotImplementedError

    def judge(self, observed: Observed, key: str, value: float) -> Severity:
        """The severity of ``value`` against the four-level thresholds ``key``.

        Keeps the worst value judged under ``observed[key]``, so the report shows what the thresholds met.
        NaN means not judged: NONE, and nothing is recorded.
        """
        thresholds = self._thresholds(key)
        if not math.isnan(value):
            self._keep_worst(observed, key, thresholds, value if isinstance(value, int) else float(value))
        return thresholds.severity_of(value)

    def judge_each(self, observed: Observed, key: str, values: npt.ArrayLike) -> npt.NDArray[np.int8]:
        """``judge`` over an array (one value per stage, executor, ...); NaN entries are not judged."""
        thresholds = self._thresholds(key)
        array = np.asarray(values, dtype=np.float64)
        judged = array[~np.isnan(array)]
        if judged.size:
            self._keep_worst(observed, key, thresholds, float(judged.max() if thresholds.ascending else judged.min()))
        return thresholds.severities_of(array)

    def _thresholds(self, key: str) -> Thresholds:
        thresholds = getattr(self.config, key, None)
        if not isinstance(thresholds, Thresholds):
            raise TypeError(f"{self.code}: {key} is not a four-level threshold setting")
        return thresholds

    @staticmethod
    def _keep_worst(observed: Observed, key: str, thresholds: Thresholds, value: float) -> None:
        before = observed.get(key)
        if isinstance(before, int | float) and (before >= value if thresholds.ascending else before <= value):
            return
        observed[key] = value

    def result(
        self,
        severity: Severity,
        *,
        counted: int,
        details: Sequence[tuple[str, str]],
        advice: str = "",
        observed: Observed | None = None,
        stages: Iterable[tuple[int, int]] = (),
        executors: Iterable[str] = (),
        changes: Iterable[Change] = (),
    ) -> HeuristicResult:
        severity = Severity(severity)
        return HeuristicResult(
            code=self.code,
            name=self.name,
            severity=severity,
            score=score_of(severity, counted),
            details=list(details),
            advice=advice if severity > Severity.NONE else "",
            observed=dict(observed or {}),
            thresholds=self.config_as_dict(),
            stages=sorted(set(stages)),
            executors=list(dict.fromkeys(executors)),
            changes=tuple(changes) if severity > Severity.NONE else (),
        )

    def no_finding(self, *details: tuple[str, str], **observed: float | int | str) -> HeuristicResult:
        """Severity NONE with an explanatory detail (too little data, metric not logged, ...)."""
        return self.result(Severity.NONE, counted=0, details=details, observed=observed)
