"""Defaults from defaults.yaml, overridden by an optional user YAML file; strict, typed, fail-fast."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

import msgspec
import yaml

from heuristics.base import ConfigError, Heuristic, HeuristicConfig
from heuristics.severity import Thresholds

ENV_VAR = "HINDSIGHT_HEURISTICS_FILE"
PROFILE_ENV_VAR = "HINDSIGHT_SEVERITY_PROFILE"
# The severity profiles (docs/IMPACT.md, docs/HEURISTICS.md "Severity profiles"), the default first: "impact" bounds
# a rule's severity by its measured cost (analysis/impact/profile.py); "drelephant" gives Dr. Elephant's severities.
PROFILES = ("impact", "drelephant")
DEFAULT_PROFILE = PROFILES[0]
DEFAULTS_PATH = Path(__file__).with_name("defaults.yaml")
CUSTOM_KEY = "custom"
PROFILES_KEY = "profiles"  # a top-level section of profile overlays: {profile: {heuristic code: {key: value}}}
ENABLED_KEY = "enabled"
_CUSTOM_ENTRY_KEYS = frozenset({"path", "config", ENABLED_KEY})

_AT_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_NAMED_FIELD = re.compile(r"(?:unknown|missing required) field `(?P<field>[^`]+)`")


# libyaml's safe loader when PyYAML was built with it: the same documents, ten times faster than the pure-Python one
# (the two built-in YAML files took 25 ms of every `analyze` start-up, issue 15).
_SAFE_LOADER: Final[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load_yaml(stream: IO[str]) -> Any:
    """``yaml.safe_load`` on the fastest safe loader available; raises ``yaml.YAMLError`` on bad YAML."""
    return yaml.load(stream, Loader=_SAFE_LOADER)  # noqa: S506 (a safe loader: plain data only)


def read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = safe_load_yaml(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of heuristic code -> settings, got {type(data).__name__}")
    return data


def _decode_hook(target: type, value: Any) -> Any:
    if isinstance(target, type) and issubclass(target, Thresholds):
        return target.from_config(value)
    raise NotImplementedError(f"unsupported config type {target!r}")


def build_config(config_type: type[HeuristicConfig], section: Mapping[str, Any], prefix: str) -> HeuristicConfig:
    """Validate one section into the heuristic's typed config; errors name ``prefix.key``."""
    try:
        return msgspec.convert(dict(section), config_type, strict=True, dec_hook=_decode_hook)
    except msgspec.ValidationError as exc:
        message = str(exc)
        key = ""
        if at := _AT_PATH.search(message):
            key, message = at.group("path"), message[: at.start()]
        elif named := _NAMED_FIELD.search(message):
            key = named.group("field")
        if message.startswith("Object contains unknown field"):
            message = f"unknown key; known keys: {', '.join(sorted(config_type.__struct_fields__))}"
        raise ConfigError(f"{prefix}.{key}: {message}" if key else f"{prefix}: {message}") from None


def _section(data: Mapping[str, Any], code: str, origin: str) -> dict[str, Any]:
    section = data.get(code)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{code}: expected a mapping of settings in {origin}, got {type(section).__name__}")
    return section


def _pop_enabled(section: dict[str, Any], prefix: str) -> bool:
    enabled = section.pop(ENABLED_KEY, True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{prefix}.{ENABLED_KEY}: expected true or false, got {enabled!r}")
    return enabled


def check_profile(profile: str) -> str:
    """The profile name, or ConfigError naming the known ones."""
    if profile not in PROFILES:
        raise ConfigError(f"{PROFILE_ENV_VAR}: unknown severity profile {profile!r}; known: {', '.join(PROFILES)}")
    return profile


def profile_from_env() -> str:
    """$HINDSIGHT_SEVERITY_PROFILE (trimmed, lower case), else the default; an unknown name is a ConfigError."""
    return check_profile(os.environ.get(PROFILE_ENV_VAR, "").strip().lower() or DEFAULT_PROFILE)


def profile_overlays(data: Mapping[str, Any], origin: str) -> dict[str, dict[str, Any]]:
    """The ``profiles:`` section of one file, checked: known profile names, each a mapping of sections.

    Heuristic codes and keys inside are checked by load_suite (every profile's, not only the active one's).
    """
    profiles = data.get(PROFILES_KEY)
    if profiles is None:
        return {}
    if not isinstance(profiles, dict):
        raise ConfigError(f"{PROFILES_KEY}: expected a mapping of profile -> heuristic settings in {origin}")
    overlays: dict[str, dict[str, Any]] = {}
    for name, overlay in profiles.items():
        if name not in PROFILES:
            known = ", ".join(PROFILES)
            raise ConfigError(f"{PROFILES_KEY}.{name}: unknown severity profile in {origin}; known: {known}")
        if overlay is not None and not isinstance(overlay, dict):
            raise ConfigError(f"{PROFILES_KEY}.{name}: expected a mapping of heuristic code -> settings in {origin}")
        overlays[name] = dict(overlay or {})
    return overlays


def check_keys(cls: type[Heuristic[Any]], data: Mapping[str, Any], origin: str, prefix: str) -> dict[str, Any]:
    """The heuristic's section of ``data``; an unknown key is a ConfigError named ``<prefix><code>.<key>``."""
    section = _section(data, cls.code, origin)
    known = set(cls.Config.__struct_fields__) | {ENABLED_KEY}
    if unknown := sorted(set(section) - known):
        keys = ", ".join(sorted(known))
        raise ConfigError(f"{prefix}{cls.code}.{unknown[0]}: unknown key in {origin}; known keys: {keys}")
    return section


Layer = tuple[Mapping[str, Any], str, str]  # (data, origin for messages, prefix of its keys in messages)


def configure_builtin(cls: type[Heuristic[Any]], layers: list[Layer]) -> Heuristic[Any] | None:
    """The heuristic with its section of each layer merged in order (later keys win), or None when disabled.

    load_suite's layers: defaults.yaml, its profile overlay, the user file, the user file's profile overlay. An
    unknown key is named with its layer's prefix (``profiles.drelephant.spark.spill.x``) before merging.
    """
    section: dict[str, Any] = {}
    for data, origin, prefix in layers:
        section.update(check_keys(cls, data, origin, prefix))
    enabled = _pop_enabled(section, cls.code)
    config = build_config(cls.Config, section, cls.code)
    return cls(config) if enabled else None


def import_custom(index: int, entry: Any) -> tuple[type[Heuristic[Any]], dict[str, Any], bool]:
    prefix = f"{CUSTOM_KEY}[{index}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{prefix}: expected a mapping with 'path' and optional 'config', got {entry!r}")
    if unknown := sorted(set(entry) - _CUSTOM_ENTRY_KEYS):
        raise ConfigError(f"{prefix}.{unknown[0]}: unknown key; known keys: config, enabled, path")
    path = entry.get("path")
    if not isinstance(path, str) or "." not in path:
        raise ConfigError(f"{prefix}.path: expected a dotted path like 'mypkg.module.MyHeuristic', got {path!r}")
    module_name, _, attribute = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{prefix}.path: cannot import {path!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Heuristic)):
        raise ConfigError(f"{prefix}.path: {path!r} is not a heuristics.Heuristic subclass")
    config = entry.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{prefix}.config: expected a mapping, got {type(config).__name__}")
    enabled = _pop_enabled({ENABLED_KEY: entry.get(ENABLED_KEY, True)}, prefix)
    return cls, config, enabled


def user_file_from_env() -> str | None:
    return os.environ.get(ENV_VAR) or None
