"""On-demand analysis: one app of a cluster fetched and analyzed now, again if it was analyzed before.

The REST API's ``POST /api/v1/analyze`` (a CI job that has just run an app) calls this. Nothing here fetches: the
request is recorded the way polling records a listed app, as the cluster's ``AppClaim`` for (cluster, app id,
attempt), waiting and due now, and the Celery task ``analyzer.tasks.analyze_app_task`` is sent by name, so the web
process imports neither the tasks nor the fetchers (an import-linter contract keeps it so). Without Celery, the
next ``poll`` pass analyzes the due claim all the same.

Which source fetches it:

* An app recorded before (by polling, a backfill or an earlier request) is re-armed: its claim goes back to waiting
  with a fresh fetch budget and is fetched as its listing said (its source and ``ref``), even when it was done.
  Without ``attempt_id`` the latest recorded attempt of the id is taken. A claim a live worker holds right now is
  left to it: its outcome answers the request.
* A new app is recorded for the first source of the cluster that can fetch an app by id: a Spark History Server
  (``/applications/<id>[/<attempt>]/logs``), else an event-log directory (the worker lists the directories and
  takes the complete log of that id: ``analyzer.ingestion.polling``). A MapReduce job (a ``job_`` id, or an
  ``application_`` id the ResourceManager said is MAPREDUCE) is recorded under its YARN application id for the
  cluster's yarn-rm source, as its listing would be, and fetched from the cluster's JobHistory Server.
* A cluster with no such source (a yarn-rm source alone only lists) cannot serve the request: ``NoSourceForApp``.

Waiting (``wait_for_analysis``) reads the claim every half second until it is done (its stored app is the
analysis made for this request: the claim was waiting since the request) or failed for good, or the wait runs out.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from analyzer.models import AppClaim, ClaimState, Cluster, Source, SourceBackend, YarnAppView
from analyzer.selectors.apps import app_id_exact

log = logging.getLogger(__name__)

ANALYZE_TASK: Final = "analyzer.tasks.analyze_app_task"  # sent by name: see the module docstring
MAX_WAIT_S: Final = 300
POLL_EVERY_S: Final = 0.5
MAPREDUCE: Final = "MAPREDUCE"
# Sources that fetch a Spark app knowing only its id, in the order they are preferred.
_BY_ID: Final = (SourceBackend.SPARK_HISTORY, SourceBackend.EVENTLOG_DIR)


class OnDemandError(Exception):
    """A request that cannot be served; ``code`` and ``field`` go into the API's error body."""

    code = "invalid"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class UnknownCluster(OnDemandError):
    code = "not_found"


class NoSourceForApp(OnDemandError):
    code = "no_source"


@dataclass(frozen=True, slots=True)
class Requested:
    """An analysis asked for: the claim that carries it and what the caller is told."""

    claim_id: int
    cluster: str
    app_id: str  # as recorded for the cluster (a MapReduce job id becomes its YARN application id)
    attempt_id: str
    source: str  # <cluster>/<backend> of the source that fetches it
    rearmed: bool  # recorded before (by polling, a backfill or an earlier request)
    requested_at: dt.datetime
    to_send: bool  # False when a live worker already holds the claim: its outcome answers


@dataclass(frozen=True, slots=True)
class Progress:
    """Where the claim of a request stands."""

    state: str
    tries: int
    last_error: str
    analyzed_pk: int | None

    @property
    def done(self) -> bool:
        return self.state == ClaimState.DONE and self.analyzed_pk is not None

    @property
    def failed(self) -> bool:
        return self.state == ClaimState.FAILED


def _core(app_id: str) -> tuple[str, str]:
    """(prefix, rest) of an id with an ``application_``/``job_`` prefix (any case); ("", id) otherwise."""
    lowered = app_id.lower()
    for prefix in ("application_", "job_"):
        if lowered.startswith(prefix) and len(app_id) > len(prefix):
            return prefix, app_id[len(prefix) :]
    return "", app_id


def _is_mapreduce(cluster: Cluster, app_id: str) -> bool:
    prefix, core = _core(app_id)
    if prefix == "job_":
        return True
    if prefix != "application_":
        return False
    view = YarnAppView.objects.filter(cluster=cluster, app_id=f"application_{core}").values_list("view", flat=True)
    found = view.first()
    return isinstance(found, dict) and str(found.get("application_type") or "").upper() == MAPREDUCE


def _source_for(cluster: Cluster, app_id: str) -> tuple[Source, str]:
    """(the source that fetches the app, the app id to record); NoSourceForApp when none can."""
    enabled = list(Source.objects.filter(cluster=cluster, enabled=True).order_by("pk"))
    rm = [s for s in enabled if s.backend == SourceBackend.YARN_RM]
    prefix, core = _core(app_id)
    if _is_mapreduce(cluster, app_id):
        if cluster.jobhistory_url and rm:
            return rm[0], f"application_{core}"  # as the ResourceManager lists it, so polling finds it recorded
        raise NoSourceForApp(
            f"{app_id[:300]!r} is a MapReduce job: cluster {cluster.name!r} needs a JobHistory Server and a yarn-rm "
            "source to fetch it.",
            "app_id",
        )
    for backend in _BY_ID:
        for source in enabled:
            if source.backend == backend:
                return source, app_id
    if prefix and cluster.jobhistory_url and rm:
        return rm[0], f"application_{core}"  # no Spark source: the JobHistory Server is the only way to fetch it
    raise NoSourceForApp(
        f"Cluster {cluster.name!r} has no enabled source that can fetch an app by id: add a Spark History Server or "
        "an event-log directory (a ResourceManager only lists apps; with a JobHistory Server it fetches MapReduce "
        "jobs).",
        "cluster",
    )


def _recorded(cluster: Cluster, app_id: str, attempt_id: str) -> AppClaim | None:
    """The claim already recording the app: that attempt's, or the latest recorded attempt's when none is given."""
    claims = AppClaim.objects.filter(app_id_exact(app_id), cluster=cluster).select_related("source")
    if attempt_id:
        claims = claims.filter(attempt_id=attempt_id)
    return claims.order_by(F("finished_ms").desc(nulls_last=True), "-attempt_id", "-pk").first()


def _on_demand_ref(requested_by: str, now: dt.datetime, ref: Any = None) -> dict[str, Any]:
    base = dict(ref) if isinstance(ref, dict) else {"name": "", "user": "", "extra": {}}
    base["on_demand"] = {"at": now.isoformat(), "by": requested_by[:255]}
    return base


def request_analysis(*, cluster: str, app_id: str, attempt_id: str = "", requested_by: str = "") -> Requested:
    """Records (or re-arms) the app's claim as due now; raises ``UnknownCluster`` or ``NoSourceForApp``.

    The caller sends the task (``send_analysis``) once this returns: the claim is committed by then.
    """
    app_id, attempt_id = app_id.strip()[:255], attempt_id.strip()[:64]
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        raise UnknownCluster(f"No cluster named {cluster[:300]!r}; GET /api/v1/clusters lists them.", "cluster")
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.HINDSIGHT_CLAIM_LEASE_S)
    with transaction.atomic():
        claim = _recorded(found, app_id, attempt_id)
        source = claim.source if claim is not None else None
        if source is None or not source.enabled:
            source, recorded_id = _source_for(found, app_id)
            ref = _on_demand_ref(requested_by, now)  # the old ref (if any) was another source's
        else:
            recorded_id = claim.app_id if claim is not None else app_id
            ref = _on_demand_ref(requested_by, now, claim.ref if claim is not None else None)
        rearmed = claim is not None
        if claim is None:
            claim, created = AppClaim.objects.get_or_create(
                cluster=found, app_id=recorded_id, attempt_id=attempt_id, defaults={"source": source, "ref": ref}
            )
            rearmed = not created
        live = Q(state=ClaimState.CLAIMED, claimed_at__gte=now - lease)
        armed = (
            AppClaim.objects.filter(pk=claim.pk)
            .exclude(live)
            .update(state=ClaimState.RETRY, tries=0, next_try_at=None, last_error="", source=source, ref=ref)
        )
    log.info("analysis of %s on %s requested by %s (claim %s)", claim.app_id, found.name, requested_by, claim.pk)
    return Requested(
        claim_id=claim.pk,
        cluster=found.name,
        app_id=claim.app_id,
        attempt_id=claim.attempt_id,
        source=f"{found.name}/{source.backend}",
        rearmed=rearmed,
        requested_at=now,
        to_send=armed == 1,
    )


def send_analysis(requested: Requested) -> bool:
    """Sends the analysis task of the request to the broker; False when it could not (the claim stays due, so the
    beat sweep or a ``poll`` pass takes it)."""
    if not requested.to_send:
        return False
    from celery import current_app as celery_app  # the app config/celery.py made current; tests replace its send_task

    try:
        celery_app.send_task(ANALYZE_TASK, args=[requested.claim_id])
    except Exception:  # the broker down: the due claim is swept up later, the caller still gets its answer
        log.exception("sending the analysis of claim %s failed; the beat sweep will send it", requested.claim_id)
        return False
    return True


def progress(claim_id: int) -> Progress:
    row = AppClaim.objects.filter(pk=claim_id).values("state", "tries", "last_error", "analyzed_app_id").first()
    if row is None:  # removed with its cluster meanwhile
        return Progress(state=ClaimState.FAILED, tries=0, last_error="the app's cluster was removed", analyzed_pk=None)
    return Progress(
        state=row["state"], tries=row["tries"], last_error=row["last_error"], analyzed_pk=row["analyzed_app_id"]
    )


def wait_for_analysis(
    requested: Requested,
    wait_s: float,
    *,
    sleep: Callable[[float], object] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Progress:
    """The claim's progress once it is done or failed for good, or when ``wait_s`` (at most ``MAX_WAIT_S``) ran out.

    Reads the claim every ``POLL_EVERY_S``; the caller's thread (a web server worker) is held meanwhile.
    """
    deadline = clock() + max(0.0, min(float(wait_s), MAX_WAIT_S))
    while True:
        now = progress(requested.claim_id)
        if now.done or now.failed:
            return now
        left = deadline - clock()
        if left <= 0:
            return now
        sleep(min(POLL_EVERY_S, left))
