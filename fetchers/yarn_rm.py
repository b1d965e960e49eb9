"""The ``yarn-rm`` backend: which applications finished on a YARN cluster, from its ResourceManager REST API.

The ResourceManager knows every application (queue, user, final status, MB-seconds and vcore-seconds used)
but holds no Spark event log. A YARN cluster is therefore configured as a pair: this backend to discover the
finished apps and to enrich results with the RM's view (``rm_app_summary``), and a History Server or an
event-log directory backend to fetch each app. ``fetch`` here refuses, saying so.

High availability: ``urls`` lists every RM. The active one is the first whose ``/ws/v1/cluster/info`` reports
``haState`` ACTIVE (a non-HA RM reports ACTIVE or nothing); it is remembered, and probed for again after a
connection error or a bad answer (a standby RM, a failover in progress).

Response shapes: refdata README section 4.1 (``{"apps": {"app": [...]}}``; ``memorySeconds`` in MB-seconds).
Unknown keys are ignored and missing ones are None; an empty list may come as ``"apps": null``, ``{}``, ``""``
(Jersey 2 + Jettison) or no ``apps`` key at all (Jersey 2 + MOXy), and a one-app list as a bare object.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from appmodel.coerce import opt_int, opt_str
from appmodel.spark import SparkApp
from fetchers.backends import AppRef, Backend, BackendError, Parameter, ParameterError, register
from fetchers.http import HTTP_PARAMETERS, HttpPolicy, get_json, session_for

__all__ = ("ResourceManagerBackend", "rm_app_summary")

logger = logging.getLogger(__name__)

INFO_PATH: Final = "/ws/v1/cluster/info"
APPS_PATH: Final = "/ws/v1/cluster/apps"
# Every terminal state: the final status (what the app itself reported) decides what is kept.
TERMINAL_STATES: Final = "FINISHED,FAILED,KILLED"
FINAL_STATUSES: Final = frozenset({"SUCCEEDED", "FAILED", "KILLED", "UNDEFINED"})

# The RM's view of an app kept on each AppRef: (key, kind). RM answers are untrusted; numbers may come as strings.
_RM_FIELDS: Final[tuple[tuple[str, type], ...]] = (
    ("queue", str),
    ("user", str),
    ("name", str),
    ("applicationType", str),
    ("finalStatus", str),
    ("state", str),
    ("startedTime", int),
    ("finishedTime", int),
    ("elapsedTime", int),
    ("allocatedMB", int),
    ("allocatedVCores", int),
    ("memorySeconds", int),
    ("vcoreSeconds", int),
    ("trackingUrl", str),
    ("applicationTags", str),
)


@register
class ResourceManagerBackend(Backend):
    name = "yarn-rm"
    label = "YARN ResourceManager"
    parameters = (
        Parameter("urls", list, "ResourceManager web addresses, all of them for HA (http://rm1:8088)", required=True),
        Parameter(
            "final_statuses",
            list,
            "Final statuses to analyze; add KILLED to analyze killed apps too",
            default=("SUCCEEDED", "FAILED"),
        ),
        Parameter("application_types", list, "YARN application types to list", default=("SPARK",)),
        *HTTP_PARAMETERS,
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.urls = [_base_url(self.name, url) for url in self.params["urls"]]
        if not self.urls:
            raise ParameterError(f"{self.name}.urls: at least one ResourceManager address is needed")
        self.final_statuses = {status.upper() for status in self.params["final_statuses"]}
        unknown = self.final_statuses - FINAL_STATUSES
        if unknown:
            known = ", ".join(sorted(FINAL_STATUSES))
            raise ParameterError(f"{self.name}.final_statuses: unknown {', '.join(sorted(unknown))}; known: {known}")
        self.application_types = {kind.upper() for kind in self.params["application_types"]}
        if self.params["timeout_s"] <= 0:
            raise ParameterError(f"{self.name}.timeout_s: must be positive")
        self._session = session_for(HttpPolicy.from_params(self.params))
        self._session.headers["Accept"] = "application/json"
        self.active_url: str | None = None

    def list_finished(self, start_ms: int, end_ms: int) -> list[AppRef]:
        query = {
            "finishedTimeBegin": str(start_ms),
            "finishedTimeEnd": str(end_ms - 1),  # the RM's bounds are inclusive; the window's end is not
            "states": TERMINAL_STATES,
            "applicationTypes": ",".join(sorted(self.application_types)),
            "deSelects": "resourceRequests",  # not needed, and the bulk of the answer
        }
        refs: list[AppRef] = []
        for app in apps_of(self._cluster_get(APPS_PATH, query)):
            ref = self._ref(app)
            if ref is not None and (ref.finished_ms is None or start_ms <= ref.finished_ms < end_ms):
                refs.append(ref)
        refs.sort(key=lambda ref: (ref.finished_ms is None, ref.finished_ms or 0, ref.app_id))
        return refs

    def fetch(self, ref: AppRef) -> SparkApp:
        raise BackendError(
            f"{ref.app_id}: the ResourceManager holds no event logs: "
            "fetch Spark apps through the cluster's History Server or event-log directory",
            permanent=True,
        )

    def _ref(self, app: Mapping[str, Any]) -> AppRef | None:
        view: dict[str, Any] = {
            key: opt_str(app.get(key)) if kind is str else opt_int(app.get(key), strings=True)
            for key, kind in _RM_FIELDS
        }
        app_id = opt_str(app.get("id"))
        if not app_id:
            logger.warning("%s: an app without an id ignored", self.name)
            return None
        final_status = (view["finalStatus"] or "").upper()
        if final_status not in FINAL_STATUSES - {"UNDEFINED"}:
            # An RM that left finalStatus out: a FAILED or KILLED state says it; FINISHED alone does not.
            state = (view["state"] or "").upper()
            final_status = state if state in ("FAILED", "KILLED") else ""
        if final_status not in self.final_statuses:
            return None
        kind = view["applicationType"]
        if kind is not None and kind.upper() not in self.application_types:
            return None
        view["finalStatus"] = final_status
        finished = view["finishedTime"] if view["finishedTime"] else None  # 0 = not finished
        return AppRef(
            app_id=app_id,
            finished_ms=finished,
            name=view["name"] or "",
            user=view["user"] or "",
            extra=view,
        )

    def _cluster_get(self, path: str, query: Mapping[str, str]) -> Any:
        """The JSON at ``path`` on the active RM; after a failure, finds the active RM again and retries once."""
        for attempt in (1, 2):
            base = self._active()
            try:
                return self._get_json(base + path, query)
            except BackendError as error:
                # Even a "permanent" answer (a standby's redirect page, a proxy's error) may be cured by failover.
                self.active_url = None
                if attempt == 2:
                    raise
                logger.info("%s: %s; looking for the active ResourceManager again", self.name, error)
        raise AssertionError("unreachable")

    def _active(self) -> str:
        if self.active_url is not None:
            return self.active_url
        problems: list[str] = []
        for base in self.urls:
            try:
                body = self._get_json(base + INFO_PATH, {})
            except BackendError as error:
                problems.append(str(error))
                continue
            info = body.get("clusterInfo") if isinstance(body, dict) else None
            if not isinstance(info, dict):
                problems.append(f"{base}: no clusterInfo in the answer")
                continue
            ha_state = info.get("haState")
            if ha_state is None or ha_state == "ACTIVE":
                self.active_url = base
                return base
            problems.append(f"{base}: haState {str(ha_state)[:40]}")
        raise BackendError(f"{self.name}: no active ResourceManager ({'; '.join(problems)})")

    def _get_json(self, url: str, query: Mapping[str, str]) -> Any:
        """One GET under the shared HTTP policy (timeouts, retries, TLS, auth); every failure is a BackendError."""
        return get_json(self._session, url, **query)


def apps_of(body: Any) -> list[Mapping[str, Any]]:
    """The app objects of a ``/ws/v1/cluster/apps`` answer, whatever form an empty or one-app list takes."""
    if not isinstance(body, dict):
        raise BackendError(f"ResourceManager apps answer is not a JSON object but {type(body).__name__}")
    apps = body.get("apps")
    if not isinstance(apps, dict):  # None, "", absent: no apps
        return []
    listed = apps.get("app")
    if isinstance(listed, dict):  # Jettison writes a one-element list as the element, an empty one as {}
        listed = [listed] if listed else []
    if not isinstance(listed, list):
        return []
    return [app for app in listed if isinstance(app, dict)]


def rm_app_summary(extra: Mapping[str, Any]) -> dict[str, Any]:
    """The ResourceManager's facts about an app, as a result stores them; missing or ill-typed values are None.

    ``memory_mb_seconds`` is the RM's ``memorySeconds`` (MB-seconds); ``memory_gb_hours`` the same in the unit
    Dr. Elephant shows ("resource used"); ``vcore_seconds`` is vcore-seconds; times are ms.
    """
    memory_mb_seconds = opt_int(extra.get("memorySeconds"), strings=True)
    tags = opt_str(extra.get("applicationTags"))
    return {
        "queue": opt_str(extra.get("queue")),
        "user": opt_str(extra.get("user")),
        "application_type": opt_str(extra.get("applicationType")),
        "final_status": opt_str(extra.get("finalStatus")),
        "state": opt_str(extra.get("state")),
        "started_ms": opt_int(extra.get("startedTime"), strings=True),
        "finished_ms": opt_int(extra.get("finishedTime"), strings=True),
        "elapsed_ms": opt_int(extra.get("elapsedTime"), strings=True),
        "memory_mb_seconds": memory_mb_seconds,
        "memory_gb_hours": None if memory_mb_seconds is None else memory_mb_seconds / 1024 / 3600,
        "vcore_seconds": opt_int(extra.get("vcoreSeconds"), strings=True),
        "tracking_url": opt_str(extra.get("trackingUrl")),
        "tags": [tag.strip() for tag in tags.split(",") if tag.strip()] if tags else [],
    }


def _base_url(backend: str, url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"  # how yarn.resourcemanager.webapp.address is written: host:port
    if not url.startswith(("http://", "https://")):
        raise ParameterError(f"{backend}.urls: {url!r} is not an http(s) address")
    return url
