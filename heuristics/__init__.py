"""Heuristics: pure checks over the app model, each with a code, thresholds and a help page.

Usage: ``suite = load_suite(); results = suite.evaluate(app)``.
"""

from heuristics import mapreduce as _mapreduce  # noqa: F401  (registers the built-in MapReduce heuristics)
from heuristics import spark as _spark  # noqa: F401  (registers the built-in Spark heuristics)
from heuristics.base import (
    Change,
    ConfigError,
    Count,
    Headroom,
    Heuristic,
    HeuristicConfig,
    HeuristicResult,
    NonNegative,
    Positive,
    PositiveCount,
    score_of,
)
from heuristics.config import ENV_VAR
from heuristics.registry import BUILTINS, Registry, RegistryError, register
from heuristics.severity import Ascending, Descending, Severity, Thresholds
from heuristics.suite import Suite, app_score, app_severity, configured_suite, load_suite

BUILTINS.freeze()

__all__ = [
    "BUILTINS",
    "ENV_VAR",
    "Ascending",
    "Change",
    "ConfigError",
    "Count",
    "Descending",
    "Headroom",
    "Heuristic",
    "HeuristicConfig",
    "HeuristicResult",
    "NonNegative",
    "Positive",
    "PositiveCount",
    "Registry",
    "RegistryError",
    "Severity",
    "Suite",
    "Thresholds",
    "app_score",
    "app_severity",
    "configured_suite",
    "load_suite",
    "register",
    "score_of",
]
