"""Defaults from defaults.yaml, overridden by an optional user YAML file; strict, typed, fail-fast."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import yaml

from heuristics.base import ConfigError, Heuristic, HeuristicConfig
from heuristics.severity import Thresholds

ENV_VAR = "HINDSIGHT_HEURISTICS_FILE"
DEFAULTS_PATH = Path(__file__).with_name("defaults.yaml")
CUSTOM_KEY = "custom"
ENABLED_KEY = "enabled"
_CUSTOM_ENTRY_KEYS = frozenset({"path", "config", ENABLED_KEY})

_AT_PATH = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")
_NAMED_FIELD = re.compile(r"(?:unknown|missing required) field `(?P<field>[^`]+)`")


def read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
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


def configure_builtin(
    cls: type[Heuristic[Any]], defaults: Mapping[str, Any], user: Mapping[str, Any]
) -> Heuristic[Any] | None:
    """The heuristic with defaults overlaid by the user's section, or None when disabled."""
    section = {**_section(defaults, cls.code, str(DEFAULTS_PATH)), **_section(user, cls.code, "the user file")}
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
