"""Clusters, their sources and polling checkpoints: the only code that writes ``Cluster`` and ``Source`` rows.

Every way of configuring a source (the ``sources`` command, a YAML file, the admin) goes through
``source_spec``, which validates the parameters against the backend's own declaration and splits the sensitive
ones (passwords, tokens) into ``Source.secrets``; those are never shown, and are masked out of stored errors.

A source's checkpoint is the end of the last window whose apps were all recorded. A poller asks
``poll_window`` for the next window, records its apps, then calls ``checkpoint_advance``; the checkpoint only
moves forward, so a slow poller finishing late cannot move it back.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import orjson
import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from analyzer.models import Cluster, Source, SourceBackend
from appmodel.redaction import MASK, mask_secrets
from fetchers.backends import (
    BACKENDS,
    BUILTIN_MODULES,
    REDACTION_PARAMETER,
    Backend,
    BackendError,
    ParameterError,
    validate_parameters,
)
from fetchers.http import HTTP_PARAMETERS

MAX_ERROR_CHARS: Final = 4000
CLUSTER_NAME_MAX: Final = 64  # the lengths of the Cluster columns
JOBHISTORY_URL_MAX: Final = 1024
HTTP_PARAMETER_NAMES: Final = frozenset(p.name for p in HTTP_PARAMETERS)
# The parameters that say which source it is; the others (timeouts, auth) may change without making it another.
_IDENTITY: Final[dict[str, tuple[str, ...]]] = {
    SourceBackend.SPARK_HISTORY: ("url",),
    SourceBackend.YARN_RM: ("urls",),
    SourceBackend.EVENTLOG_DIR: ("paths",),
}
_URL_PARAMETERS: Final = ("url", "urls", "webhdfs_url")
_HDFS_SCHEMES: Final = frozenset({"hdfs", "webhdfs", "swebhdfs"})
_HOST: Final = re.compile(r"[A-Za-z0-9._:-]+")  # a name, IPv4 or (unbracketed) IPv6 address
# Keys of a cluster in a sources file; ``http`` may also name environment variables holding the secrets.
CLUSTER_KEYS: Final = (
    "spark_history",
    "resourcemanagers",
    "jobhistory",
    "eventlog_dirs",
    "http",
    "poll_interval_s",
    "safety_margin_s",
    "relist_lookback_s",
    "webhdfs_urls",
    "hdfs_user",
    "spark_history_fetch_mode",
)
POLL_INTERVAL_MAX_S: Final = 86_400
SAFETY_MARGIN_MAX_S: Final = 86_400
SECRET_ENV_KEYS: Final = {"password_env": "password", "token_env": "token"}


class SourceConfigError(ValueError):
    """A cluster or source configuration is wrong; the message names the offending name, key or parameter."""


@dataclass(frozen=True)
class SourceSpec:
    """A validated source, ready to store."""

    backend: str
    params: dict[str, Any]
    secrets: dict[str, str] = field(repr=False)
    key: str


@dataclass(frozen=True)
class ClusterSpec:
    """A validated cluster with all its sources."""

    name: str
    jobhistory_url: str
    sources: tuple[SourceSpec, ...]
    # Polling settings for every source of the cluster; None leaves a source's own (the defaults: 10 s, 60 s).
    poll_interval_s: int | None = None
    safety_margin_s: int | None = None
    relist_lookback_s: int | None = None

    def polling(self) -> dict[str, int]:
        values = {
            "poll_interval_s": self.poll_interval_s,
            "safety_margin_s": self.safety_margin_s,
            "relist_lookback_s": self.relist_lookback_s,
        }
        return {name: value for name, value in values.items() if value is not None}


@dataclass
class LoadResult:
    """What applying a sources file changed, by cluster name."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


# Validation


def _backend_class(name: str) -> type[Backend]:
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    if name not in BACKENDS:
        raise SourceConfigError(f"unknown fetcher backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[name]


def check_address(where: str, url: str) -> None:
    """An http(s) address with a host and a valid port, and no credentials in it (they would be shown)."""
    url = url.strip()
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")  # host:port is how Hadoop writes addresses
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
        parts = urlsplit("")
    if "@" in parts.netloc:
        raise SourceConfigError(f"{where}: credentials in the address are refused; use --auth basic or bearer")
    host_ok = bool(parts.hostname) and _HOST.fullmatch(parts.hostname or "") is not None
    if parts.scheme not in {"http", "https"} or not host_ok or not port_ok:
        raise SourceConfigError(f"{where}: expected http(s)://host[:port], got {mask_secrets(url, ())!r}")


def source_spec(backend: str, given: Mapping[str, Any]) -> SourceSpec:
    """``given`` parameters checked by the backend itself, split into params and secrets; SourceConfigError."""
    backend_class = _backend_class(backend)
    try:
        validate_parameters(backend_class, given)  # first: names like "self" would otherwise break the call
        configured = backend_class(**given)
    except (ParameterError, BackendError) as error:
        raise SourceConfigError(mask_secrets(str(error), _sensitive_values(backend_class, given))) from None
    declared = {p.name: p for p in backend_class.parameters}
    for name in _URL_PARAMETERS:
        value = configured.params.get(name)
        for url in value if isinstance(value, list) else [value] if value else []:
            check_address(f"{backend}.{name}", str(url))
    given_names = sorted(name for name, value in given.items() if value is not None)
    params = {name: configured.params[name] for name in given_names if not declared[name].sensitive}
    secrets = {name: str(configured.params[name]) for name in given_names if declared[name].sensitive}
    identity = {name: _identity_value(name, configured.params.get(name)) for name in _IDENTITY.get(backend, ())}
    key = hashlib.sha256(orjson.dumps(identity, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return SourceSpec(backend=backend, params=params, secrets=secrets, key=key)


def _identity_value(name: str, value: Any) -> Any:
    """An address or path as written in any of its equivalent ways (trailing "/", no scheme), lists sorted."""
    if isinstance(value, list):
        return sorted({_identity_value(name, item) for item in value})
    if not isinstance(value, str):
        return value
    value = value.strip()
    if name in _URL_PARAMETERS:
        value = value.rstrip("/").removesuffix("/api/v1")
        return value.lower() if "://" in value else f"http://{value}".lower()
    return value.rstrip("/") or "/"


def _sensitive_values(backend_class: type[Backend], given: Mapping[str, Any]) -> list[str]:
    return [str(given[p.name]) for p in backend_class.parameters if p.sensitive and given.get(p.name)]


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def cluster_spec(
    name: str,
    *,
    spark_history: str | None = None,
    resourcemanagers: Sequence[str] = (),
    jobhistory: str | None = None,
    eventlog_dirs: Sequence[str] = (),
    http_params: Mapping[str, Any] | None = None,
    poll_interval_s: int | None = None,
    safety_margin_s: int | None = None,
    webhdfs_urls: Sequence[str] = (),
    hdfs_user: str | None = None,
    spark_history_fetch_mode: str | None = None,
    relist_lookback_s: int | None = None,
) -> ClusterSpec:
    """A cluster validated whole: its name, the JobHistory address and one source per kind given."""
    try:
        validate_slug(name)
    except ValidationError:
        raise SourceConfigError(f"cluster name {name!r}: use letters, digits, '-' and '_' only") from None
    if len(name) > CLUSTER_NAME_MAX:
        raise SourceConfigError(f"cluster name {name[:20]!r}...: longer than {CLUSTER_NAME_MAX} characters")
    http = dict(http_params or {})
    unknown = sorted(set(http) - HTTP_PARAMETER_NAMES)
    if unknown:
        raise SourceConfigError(f"{name}: unknown HTTP parameter(s) {', '.join(unknown)}")
    jobhistory_url = (jobhistory or "").strip().rstrip("/")
    if jobhistory_url:
        check_address(f"{name}.jobhistory", jobhistory_url)
        if len(jobhistory_url) > JOBHISTORY_URL_MAX:
            raise SourceConfigError(f"{name}.jobhistory: longer than {JOBHISTORY_URL_MAX} characters")
    sources: list[SourceSpec] = []
    if spark_history:
        mode = {"fetch_mode": spark_history_fetch_mode} if spark_history_fetch_mode else {}
        sources.append(source_spec(SourceBackend.SPARK_HISTORY, {"url": spark_history, **mode, **http}))
    elif spark_history_fetch_mode:
        raise SourceConfigError(f"{name}: spark_history_fetch_mode needs a Spark History Server")
    if _unique(resourcemanagers):
        sources.append(source_spec(SourceBackend.YARN_RM, {"urls": _unique(resourcemanagers), **http}))
    directories = _unique(eventlog_dirs)
    if directories:
        remote: dict[str, Any] = {}
        if any(urlsplit(d).scheme.lower() in _HDFS_SCHEMES for d in directories):
            # Directories on HDFS are read over WebHDFS: the cluster's HTTP policy and HDFS user apply to them.
            remote = {**http}
            if _unique(webhdfs_urls):
                remote["webhdfs_url"] = _unique(webhdfs_urls)
            if hdfs_user:
                remote["hdfs_user"] = hdfs_user
        elif _unique(webhdfs_urls) or hdfs_user:
            raise SourceConfigError(
                f"{name}: webhdfs_urls and hdfs_user apply only to hdfs:// or webhdfs:// directories"
            )
        sources.append(source_spec(SourceBackend.EVENTLOG_DIR, {"paths": directories, **remote}))
    if not sources and not jobhistory_url:
        raise SourceConfigError(
            f"{name}: give at least one of a Spark History Server, ResourceManager, JobHistory or event-log directory"
        )
    _check_seconds(f"{name}.poll_interval_s", poll_interval_s, 1, POLL_INTERVAL_MAX_S)
    _check_seconds(f"{name}.safety_margin_s", safety_margin_s, 0, SAFETY_MARGIN_MAX_S)
    _check_seconds(f"{name}.relist_lookback_s", relist_lookback_s, 0, 7 * SAFETY_MARGIN_MAX_S)
    return ClusterSpec(
        name=name,
        jobhistory_url=jobhistory_url,
        sources=tuple(sources),
        poll_interval_s=poll_interval_s,
        safety_margin_s=safety_margin_s,
        relist_lookback_s=relist_lookback_s,
    )


def _check_seconds(where: str, value: Any, low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SourceConfigError(f"{where}: expected whole seconds from {low} to {high}, got {value!r}")


# Writes


def _sources_apply(cluster: Cluster, specs: Sequence[SourceSpec], polling: Mapping[str, int]) -> bool:
    """Makes the cluster's sources exactly ``specs``: kept ones keep their checkpoint. True if anything changed."""
    existing = {(s.backend, s.params_key): s for s in cluster.sources.all()}
    changed = False
    for spec in specs:
        source = existing.pop((spec.backend, spec.key), None)
        if source is None:
            Source.objects.create(
                cluster=cluster,
                backend=spec.backend,
                params=spec.params,
                secrets=spec.secrets,
                params_key=spec.key,
                **polling,
            )
            changed = True
            continue
        wanted = {"params": spec.params, "secrets": spec.secrets, **polling}
        stale = [name for name, value in wanted.items() if getattr(source, name) != value]
        if stale:
            for name in stale:
                setattr(source, name, wanted[name])
            source.save(update_fields=[*stale, "updated_at"])
            changed = True
    if existing:
        Source.objects.filter(pk__in=[s.pk for s in existing.values()]).delete()
        changed = True
    return changed


def cluster_add(name: str, **options: Any) -> Cluster:
    """A new cluster with one source per kind given (``options``: those of :func:`cluster_spec`); SourceConfigError
    for bad input or a name already taken."""
    spec = cluster_spec(name, **options)
    try:
        with transaction.atomic():
            cluster = Cluster.objects.create(name=spec.name, jobhistory_url=spec.jobhistory_url)
            _sources_apply(cluster, spec.sources, spec.polling())
    except IntegrityError:
        raise SourceConfigError(f"cluster {name!r} already exists") from None
    return cluster


def cluster_remove(name: str) -> None:
    """Deletes the cluster and its sources (with their checkpoints); SourceConfigError if there is none."""
    deleted, _ = Cluster.objects.filter(name=name).delete()
    if not deleted:
        raise SourceConfigError(f"no cluster named {name!r}")


def cluster_list() -> list[Cluster]:
    """All clusters by name, their sources prefetched."""
    return list(Cluster.objects.prefetch_related("sources"))


def source_describe(source: Source) -> dict[str, Any]:
    """A source as it may be shown anywhere: every secret replaced by the mask."""
    return {
        "backend": source.backend,
        "params": {**source.params, **dict.fromkeys(source.secrets, MASK)},
        "enabled": source.enabled,
        "poll_interval_s": source.poll_interval_s,
        "safety_margin_s": source.safety_margin_s,
        "checkpoint_ms": source.checkpoint_ms,
        "last_poll_at": source.last_poll_at.isoformat() if source.last_poll_at else None,
        "last_success_at": source.last_success_at.isoformat() if source.last_success_at else None,
        "last_error": source.last_error,
    }


def source_backend(source: Source) -> Backend:
    """The configured fetcher backend of a source (params and secrets); SourceConfigError if they became invalid."""
    backend_class = _backend_class(source.backend)
    given = {**source.params, **source.secrets}
    if REDACTION_PARAMETER in backend_class.parameters and not given.get(REDACTION_PARAMETER.name):
        # The install's extra secret patterns apply to every log a source reads, as to `analyze`.
        given[REDACTION_PARAMETER.name] = list(settings.HINDSIGHT_REDACTION_PATTERNS)
    try:
        validate_parameters(backend_class, given)
        return backend_class(**given)
    except (ParameterError, BackendError) as error:
        raise SourceConfigError(mask_secrets(str(error), source.secrets.values())) from None


# Sources file


def _read_sources_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            document = yaml.safe_load(handle)
    except OSError as error:
        raise SourceConfigError(f"{path}: cannot read ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise SourceConfigError(f"{path}:{line} not valid YAML") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise SourceConfigError(f"{path}: expected a mapping with a 'clusters' key")
    unknown = sorted(str(k) for k in set(document) - {"clusters"})
    if unknown:
        raise SourceConfigError(f"{path}: unknown key(s) {', '.join(unknown)}")
    clusters = document.get("clusters") or {}
    if not isinstance(clusters, dict):
        raise SourceConfigError(f"{path}: clusters: expected a mapping of cluster names")
    return clusters


def _string_list(where: str, value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise SourceConfigError(f"{where}: expected a string or a list of strings")
    return items


def _optional_string(where: str, value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise SourceConfigError(f"{where}: expected a string")
    return value


def _http_from_file(where: str, value: Any) -> dict[str, Any]:
    """The ``http`` mapping with ``password_env`` / ``token_env`` replaced by the environment's values."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SourceConfigError(f"{where}: expected a mapping")
    http: dict[str, Any] = {}
    for key, given in value.items():
        if key in SECRET_ENV_KEYS:
            http[SECRET_ENV_KEYS[key]] = secret_from_env(f"{where}.{key}", given)
        else:
            http[str(key)] = given
    return http


def secret_from_env(where: str, variable: Any) -> str:
    """The value of the environment variable named ``variable``; SourceConfigError naming it when unset."""
    if not isinstance(variable, str) or not variable:
        raise SourceConfigError(f"{where}: expected the name of an environment variable")
    value = os.environ.get(variable)
    if not value:
        raise SourceConfigError(f"{where}: environment variable {variable} is not set")
    return value


def sources_file_specs(path: Path) -> list[ClusterSpec]:
    """Every cluster of a sources file, validated; SourceConfigError naming the first bad key or value."""
    specs = []
    for name, entry in _read_sources_file(path).items():
        where = f"{path}: clusters.{name}"
        entry = entry or {}
        if not isinstance(entry, dict):
            raise SourceConfigError(f"{where}: expected a mapping")
        unknown = sorted(str(k) for k in set(entry) - set(CLUSTER_KEYS))
        if unknown:
            raise SourceConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(CLUSTER_KEYS)}")
        try:
            specs.append(
                cluster_spec(
                    str(name),
                    spark_history=_optional_string(f"{where}.spark_history", entry.get("spark_history")),
                    resourcemanagers=_string_list(f"{where}.resourcemanagers", entry.get("resourcemanagers")),
                    jobhistory=_optional_string(f"{where}.jobhistory", entry.get("jobhistory")),
                    eventlog_dirs=_string_list(f"{where}.eventlog_dirs", entry.get("eventlog_dirs")),
                    http_params=_http_from_file(f"{where}.http", entry.get("http")),
                    poll_interval_s=entry.get("poll_interval_s"),
                    safety_margin_s=entry.get("safety_margin_s"),
                    relist_lookback_s=entry.get("relist_lookback_s"),
                    webhdfs_urls=_string_list(f"{where}.webhdfs_urls", entry.get("webhdfs_urls")),
                    hdfs_user=_optional_string(f"{where}.hdfs_user", entry.get("hdfs_user")),
                    spark_history_fetch_mode=_optional_string(
                        f"{where}.spark_history_fetch_mode", entry.get("spark_history_fetch_mode")
                    ),
                )
            )
        except SourceConfigError as error:
            message = str(error)
            raise SourceConfigError(message if message.startswith(str(path)) else f"{path}: {message}") from None
    return specs


def sources_load(path: Path, *, prune: bool = False) -> LoadResult:
    """Applies a sources file: clusters created or updated to match it, all or nothing. Idempotent.

    With ``prune``, clusters the file does not name are removed. Sources that stay keep their checkpoints.
    """
    specs = sources_file_specs(path)
    result = LoadResult()
    with transaction.atomic():
        for spec in specs:
            cluster, created = Cluster.objects.get_or_create(
                name=spec.name, defaults={"jobhistory_url": spec.jobhistory_url}
            )
            changed = _sources_apply(cluster, spec.sources, spec.polling())
            if not created and cluster.jobhistory_url != spec.jobhistory_url:
                cluster.jobhistory_url = spec.jobhistory_url
                cluster.save(update_fields=["jobhistory_url", "updated_at"])
                changed = True
            if created:
                result.created.append(spec.name)
            else:
                (result.updated if changed else result.unchanged).append(spec.name)
        if prune:
            stale = Cluster.objects.exclude(name__in=[spec.name for spec in specs])
            result.removed = list(stale.values_list("name", flat=True))
            stale.delete()
    return result


# Checkpoints


def poll_window(source: Source, now_ms: int, *, initial_lookback_s: int | None = None) -> tuple[int, int] | None:
    """The next window [start_ms, end_ms) to list, or None when it would be empty.

    It starts at the checkpoint, or ``initial_lookback_s`` (setting HINDSIGHT_INITIAL_LOOKBACK_S, default 1 h)
    before now for a new source, and ends the source's safety margin before now.
    """
    if initial_lookback_s is None:
        initial_lookback_s = int(settings.HINDSIGHT_INITIAL_LOOKBACK_S)
    start_ms = source.checkpoint_ms if source.checkpoint_ms is not None else now_ms - initial_lookback_s * 1000
    end_ms = now_ms - source.safety_margin_s * 1000
    return (start_ms, end_ms) if end_ms > start_ms else None


def checkpoint_advance(source: Source, end_ms: int) -> bool:
    """Records that every app finished before ``end_ms`` is recorded; True if the checkpoint moved.

    The update is conditional in the database, so a poller holding a stale ``source`` never moves it backward.
    """
    now = timezone.now()
    with transaction.atomic():
        Source.objects.filter(pk=source.pk).update(last_poll_at=now, last_success_at=now, last_error="")
        moved = (
            Source.objects.filter(pk=source.pk)
            .filter(Q(checkpoint_ms__isnull=True) | Q(checkpoint_ms__lt=end_ms))
            .update(checkpoint_ms=end_ms)
        )
    with contextlib.suppress(Source.DoesNotExist):  # removed meanwhile: nothing left to advance
        source.refresh_from_db(fields=["checkpoint_ms", "last_poll_at", "last_success_at", "last_error"])
    return bool(moved)


def poll_failed(source: Source, error: BaseException | str) -> str:
    """Stores a failed poll's error, secrets masked, leaving the checkpoint; returns the stored text."""
    text = mask_secrets(str(error) or type(error).__name__, source.secrets.values())[:MAX_ERROR_CHARS]
    Source.objects.filter(pk=source.pk).update(last_poll_at=timezone.now(), last_error=text)
    with contextlib.suppress(Source.DoesNotExist):
        source.refresh_from_db(fields=["last_poll_at", "last_error"])
    return text
