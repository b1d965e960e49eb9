"""Fetcher backends: each knows one kind of source, declares its parameters, and has one job.

A backend lists the applications that finished in a time window and fetches one of them into the app model.
It knows nothing of Django, checkpoints or Celery: the services above it decide which window to ask for and
record what came back. Parameters are declared (name, type, required, sensitive), so a source configured in
the admin, a config file or the command line is validated the same way, and sensitive values (passwords,
tokens) are never shown.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from appmodel import MapReduceApp, SparkApp


class BackendError(Exception):
    """A source could not be listed or an app could not be fetched. ``permanent`` errors are not retried."""

    def __init__(self, message: str, *, permanent: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.status = status  # the HTTP status that caused it, when one did


class ParameterError(ValueError):
    """A backend parameter is missing, unknown or of the wrong type; the message names it."""


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: type  # str, int, float, bool, or list (of str)
    help: str
    required: bool = False
    default: Any = None
    sensitive: bool = False  # never shown in the UI, admin lists or logs


@dataclass(frozen=True)
class AppRef:
    """One finished application attempt a backend can fetch."""

    app_id: str
    attempt_id: str | None = None
    finished_ms: int | None = None
    name: str = ""
    user: str = ""
    # Backend-specific facts needed to fetch it (e.g. a log path) or to enrich it (e.g. the RM's queue).
    extra: Mapping[str, Any] = field(default_factory=dict)


# Backends that read event logs declare this, so an install's extra secret patterns reach the reader.
REDACTION_PARAMETER: Final = Parameter(
    "redaction_patterns", list, "Extra regexes: configuration keys matching them are redacted", default=()
)


class Backend:
    """Base of every fetcher backend; subclasses set ``name``, ``label`` and ``parameters``."""

    name: ClassVar[str]
    label: ClassVar[str]
    parameters: ClassVar[tuple[Parameter, ...]] = ()

    def __init__(self, **params: Any) -> None:
        self.params = validate_parameters(type(self), params)
        # JSON-able memory between listings (e.g. logs seen in progress). The caller loads it before a listing
        # and persists it after, so it survives restarts; a backend keeps it small and bounded.
        self.state: dict[str, Any] = {}

    def list_finished(self, start_ms: int, end_ms: int) -> list[AppRef]:
        """Applications that finished in [start_ms, end_ms), oldest first."""
        raise NotImplementedError

    def fetch(self, ref: AppRef) -> SparkApp | MapReduceApp:
        """The app model of one listed attempt; raises BackendError."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """The parameters as they may be shown: sensitive values masked."""
        sensitive = {p.name for p in self.parameters if p.sensitive}
        return {k: ("********" if k in sensitive and v else v) for k, v in self.params.items()}


_COERCE: Final[dict[type, Callable[[Any], Any]]] = {str: str, int: int, float: float}


def validate_parameters(backend: type[Backend], given: Mapping[str, Any]) -> dict[str, Any]:
    """Given values checked against the declaration: unknown, missing or mistyped ones raise ParameterError."""
    declared = {p.name: p for p in backend.parameters}
    unknown = set(given) - set(declared)
    if unknown:
        raise ParameterError(f"{backend.name}: unknown parameter(s) {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    for param in backend.parameters:
        value = given.get(param.name, param.default)
        if value is None:
            if param.required:
                raise ParameterError(f"{backend.name}.{param.name}: required")
            values[param.name] = None
            continue
        values[param.name] = _typed(backend.name, param, value)
    return values


def _typed(backend: str, param: Parameter, value: Any) -> Any:
    where = f"{backend}.{param.name}"
    if param.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"true", "false", "1", "0", "yes", "no"}:
            return value.lower() in {"true", "1", "yes"}
        raise ParameterError(f"{where}: expected true or false, got {value!r}")
    if param.kind is list:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise ParameterError(f"{where}: expected a list of strings")
        return [i.strip() for i in items if i.strip()]
    try:
        return _COERCE[param.kind](value)
    except (KeyError, TypeError, ValueError):
        raise ParameterError(f"{where}: expected {param.kind.__name__}, got {value!r}") from None


BACKENDS: dict[str, type[Backend]] = {}


def register(backend: type[Backend]) -> type[Backend]:
    """Class decorator: adds a backend under its name; a duplicate name is an error."""
    if backend.name in BACKENDS:
        raise ValueError(f"fetcher backend {backend.name!r} is registered twice")
    BACKENDS[backend.name] = backend
    return backend


# Imported on first use, so that reading a log never pulls in the HTTP stack.
BUILTIN_MODULES: Final = (
    "fetchers.spark_history",
    "fetchers.yarn_rm",
    "fetchers.eventlog_dir",
    "fetchers.jobhistory",
)


def backend_for(name: str, **params: Any) -> Backend:
    """A configured backend by name; ParameterError for an unknown name or bad parameters."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    if name not in BACKENDS:
        raise ParameterError(f"unknown fetcher backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name](**params)
