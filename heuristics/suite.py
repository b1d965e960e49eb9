"""A configured, ordered set of heuristics and the app-level roll-up."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appmodel.spark import SparkApp
from heuristics.base import ConfigError, Heuristic, HeuristicResult
from heuristics.config import (
    CUSTOM_KEY,
    DEFAULTS_PATH,
    PROFILES_KEY,
    Layer,
    build_config,
    check_keys,
    check_profile,
    configure_builtin,
    import_custom,
    profile_from_env,
    profile_overlays,
    read_yaml,
    user_file_from_env,
)
from heuristics.registry import BUILTINS, RegistryError
from heuristics.severity import Severity
from heuristics.spark.table import forget_task_tables

log = logging.getLogger(__name__)


def app_type_of(app: Any) -> str:
    return "spark" if isinstance(app, SparkApp) else str(getattr(app, "app_type", "unknown"))


@dataclass(frozen=True)
class Suite:
    heuristics: list[Heuristic[Any]]  # enabled, in registry order, then custom ones in file order
    user_file: str | None = None
    # The severity profile (docs/IMPACT.md): "impact" (severity follows measured cost) or "drelephant" (Dr.
    # Elephant's severities exactly, its rules included).
    profile: str = "impact"

    def get(self, code: str) -> Heuristic[Any] | None:
        return next((h for h in self.heuristics if h.code == code), None)

    def applicable(self, app: Any) -> list[Heuristic[Any]]:
        """The enabled heuristics that judge this kind of app (Spark, MapReduce), in suite order."""
        app_type = app_type_of(app)
        return [h for h in self.heuristics if app_type in h.app_types]

    def evaluate(self, app: Any) -> list[HeuristicResult]:
        """One result per applicable heuristic; a heuristic that raises gives NONE with the error as detail."""
        results = []
        forget_task_tables()
        for heuristic in self.applicable(app):
            try:
                result = heuristic.evaluate(app)
                if not isinstance(result, HeuristicResult):
                    raise TypeError(f"evaluate returned {type(result).__name__}, not a HeuristicResult")
            except Exception as exc:
                log.exception("heuristic %s failed on %s", heuristic.code, getattr(app, "app_id", "?"))
                result = heuristic.no_finding(
                    ("Warning", f"this heuristic failed on this app's data: {type(exc).__name__}: {exc}"),
                    error=f"{type(exc).__name__}: {exc}",
                )
            results.append(result)
        forget_task_tables()
        return results


def configured_suite(user_file: str | None = None, profile: str | None = None) -> Suite:
    """``load_suite(user_file, profile)``, loaded once per process and again when the file changes (long-running
    workers)."""
    user_file = user_file or user_file_from_env()
    profile = check_profile(profile) if profile else profile_from_env()
    try:
        stamp = Path(user_file).stat().st_mtime_ns if user_file else 0
    except OSError:
        stamp = -1  # load_suite says what is wrong with it
    return _configured_suite(user_file, profile, stamp)


@functools.lru_cache(maxsize=4)
def _configured_suite(user_file: str | None, profile: str, stamp: int) -> Suite:
    return load_suite(user_file, profile)


def load_suite(user_file: str | None = None, profile: str | None = None) -> Suite:
    """Built-in heuristics with defaults.yaml, overlaid by the user file (or $HINDSIGHT_HEURISTICS_FILE).

    ``profile`` (else $HINDSIGHT_SEVERITY_PROFILE, else "impact") picks the ``profiles:`` overlay: the settings of
    a heuristic are, later winning, defaults.yaml's, defaults.yaml's ``profiles.<profile>``, the user file's, the
    user file's ``profiles.<profile>`` (docs/HEURISTICS.md "Severity profiles").
    """
    profile = check_profile(profile) if profile else profile_from_env()
    defaults = read_yaml(DEFAULTS_PATH)
    user_file = user_file or user_file_from_env()
    user = read_yaml(user_file) if user_file else {}
    registry = BUILTINS.copy()
    layers: list[Layer] = []
    for origin, data in ((str(DEFAULTS_PATH), defaults), (user_file or "the user file", user)):
        overlays = profile_overlays(data, origin)
        sections: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [("", data, (CUSTOM_KEY, PROFILES_KEY))]
        sections += [(f"{PROFILES_KEY}.{name}.", overlay, ()) for name, overlay in overlays.items()]
        for prefix, codes, extra in sections:
            for key in codes:
                if key not in extra and key not in registry:
                    known = ", ".join(sorted(h.code for h in registry))
                    raise ConfigError(f"{prefix}{key}: unknown heuristic in {origin}; known: {known}")
            for cls in registry:  # every profile's keys, so a mistake shows before that profile is chosen
                check_keys(cls, codes, origin, prefix)
        layers += [(data, origin, ""), (overlays.get(profile, {}), origin, f"{PROFILES_KEY}.{profile}.")]
    heuristics = [h for cls in registry if (h := configure_builtin(cls, layers)) is not None]

    customs = user.get(CUSTOM_KEY) or []
    if not isinstance(customs, list):
        raise ConfigError(f"{CUSTOM_KEY}: expected a list of {{path, config}} entries")
    for index, entry in enumerate(customs):
        cls, section, enabled = import_custom(index, entry)
        try:
            registry.add(cls)
        except RegistryError as exc:
            raise ConfigError(f"{CUSTOM_KEY}[{index}].path: {exc}") from None
        config = build_config(cls.Config, section, f"{CUSTOM_KEY}[{index}].config")
        if enabled:
            heuristics.append(cls(config))
    registry.freeze()
    return Suite(heuristics=heuristics, user_file=user_file, profile=profile)


def app_severity(results: Iterable[HeuristicResult]) -> Severity:
    return max((r.severity for r in results), default=Severity.NONE)


def app_score(results: Iterable[HeuristicResult]) -> int:
    return sum(r.score for r in results)
