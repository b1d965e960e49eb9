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
  (``/applications/<id>[/<attempt>]/logs``), else an event-log directory (the worker looks the log up by the
  names Spark gives it, or lists WebHDFS directories, and takes the complete log of that id:
  ``analyzer.ingestion.polling.located_log``). A MapReduce job (a ``job_`` id, or an
  ``application_`` id the ResourceManager said is MAPREDUCE) is recorded under its YARN application id for the
  cluster's yarn-rm source, as its listing would be, and fetched from the cluster's JobHistory Server.
* A cluster with no such source (a yarn-rm source alone only lists) cannot serve the request: ``NoSourceForApp``.

Waiting (``wait_for_analysis``) reads the claim every half second until it is done (its stored app is the
analysis made for this request: the claim was waiting since the request) or failed for good, or the wait runs out.
A wait holds a sync web worker, so it is bounded (docs/DECISIONS.md "Waiting on-demand requests"): a caller who is
not staff waits at most ``HINDSIGHT_ANALYZE_MAX_WAIT_S`` (``wait_cap_s``), and ``waiting`` admits a wait only while
its user has fewer than ``HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER`` and everyone fewer than
``HINDSIGHT_ANALYZE_MAX_WAITING`` waiting: ``WaitSlot`` rows whose unique constraint makes the count hold across
processes and machines, deleted on every way out of the wait, expiring by themselves if the process is killed.

A request never records a claim for an app a source did not list before without saying so: its new claim is
``listed=False`` until a worker finds the app (the fetch marks it listed) or finds that the source has no such app,
which makes it ``not_found`` (not ``failed``: a made-up id is no failure of the source and is counted nowhere; the
gate answers "not found"; it is removed ``HINDSIGHT_ANALYZE_NOT_FOUND_KEEP_S`` later). One user has at most
``HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER`` such requests outstanding.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from analyzer.models import AppClaim, ClaimState, Cluster, Source, SourceBackend, WaitSlot, YarnAppView
from analyzer.selectors.apps import app_id_exact

log = logging.getLogger(__name__)

ANALYZE_TASK: Final = "analyzer.tasks.analyze_app_task"  # sent by name: see the module docstring
MAX_WAIT_S: Final = 300  # staff's bound; everyone else's is HINDSIGHT_ANALYZE_MAX_WAIT_S
POLL_EVERY_S: Final = 0.5
# A wait slot outlives its wait by this much before it stops counting on its own (its process was killed): the
# time to answer after the wait ends.
SLOT_SLACK_S: Final = 30
ALL_WAITING: Final = "all"  # the WaitSlot scope every waiting request takes a slot of
PENDING: Final = (ClaimState.RETRY, ClaimState.CLAIMED)
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


class TooMany(OnDemandError):
    """Too many requests of this user (or of everyone) at once: the API answers 429 with ``Retry-After``."""

    code = "throttled"

    def __init__(self, message: str, retry_after_s: int, field: str | None = None) -> None:
        super().__init__(message, field)
        self.retry_after_s = retry_after_s


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
    listed: bool = True  # False: only on-demand requests name the app so far

    @property
    def done(self) -> bool:
        return self.state == ClaimState.DONE and self.analyzed_pk is not None

    @property
    def failed(self) -> bool:
        return self.state in (ClaimState.FAILED, ClaimState.NOT_FOUND)

    @property
    def not_found(self) -> bool:
        return self.state == ClaimState.NOT_FOUND


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


def _unverified_outstanding(requested_by: str, claim: AppClaim | None) -> None:
    """Raises ``TooMany`` when ``requested_by`` already has as many requested apps no source listed yet, still to
    be looked up, as HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER allows (``claim``, if theirs already, not counted)."""
    limit = settings.HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER
    outstanding = AppClaim.objects.filter(listed=False, state__in=PENDING, ref__on_demand__by=requested_by[:255])
    if claim is not None:
        outstanding = outstanding.exclude(pk=claim.pk)
    if outstanding.count() >= limit:
        raise TooMany(
            f"{limit} of your requested apps are not listed by any source and still being looked up "
            "(HINDSIGHT_ANALYZE_MAX_UNVERIFIED_PER_USER); ask again once they are answered.",
            retry_after_s=max(1, int(settings.HINDSIGHT_ANALYZE_MAX_WAIT_S)),
            field="app_id",
        )


def request_analysis(*, cluster: str, app_id: str, attempt_id: str = "", requested_by: str = "") -> Requested:
    """Records (or re-arms) the app's claim as due now; raises ``UnknownCluster``, ``NoSourceForApp`` or ``TooMany``
    (too many of the requester's apps no source listed are still being looked up).

    A new claim is ``listed=False``: only this request names the app (see the module docstring). The caller sends
    the task (``send_analysis``) once this returns: the claim is committed by then.
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
        if claim is None or not claim.listed:
            _unverified_outstanding(requested_by, claim)
        if claim is None:
            claim, created = AppClaim.objects.get_or_create(
                cluster=found,
                app_id=recorded_id,
                attempt_id=attempt_id,
                defaults={"source": source, "ref": ref, "listed": False},
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
    row = (
        AppClaim.objects.filter(pk=claim_id).values("state", "tries", "last_error", "analyzed_app_id", "listed").first()
    )
    if row is None:  # removed with its cluster meanwhile
        return Progress(state=ClaimState.FAILED, tries=0, last_error="the app's cluster was removed", analyzed_pk=None)
    return Progress(
        state=row["state"],
        tries=row["tries"],
        last_error=row["last_error"],
        analyzed_pk=row["analyzed_app_id"],
        listed=row["listed"],
    )


def not_found_reason(*, app_id: str, cluster: str = "") -> str | None:
    """Why the app is not analyzed when a worker found that its source has no such app (a request's ``not_found``
    claim, the latest of its attempts); None otherwise."""
    claims = AppClaim.objects.filter(app_id_exact(app_id.strip()[:255]))
    if cluster:
        claims = claims.filter(cluster__name=cluster)
    latest = claims.order_by("-finished_at", "-pk").values_list("state", "last_error", "cluster__name").first()
    if latest is None or latest[0] != ClaimState.NOT_FOUND:
        return None
    return f"{latest[2]}: {latest[1] or 'the source has no such app'}"


def wait_cap_s(*, staff: bool) -> int:
    """The longest wait a caller may ask for: ``MAX_WAIT_S`` for staff, HINDSIGHT_ANALYZE_MAX_WAIT_S (at most that)
    for everyone else."""
    return MAX_WAIT_S if staff else max(0, min(int(settings.HINDSIGHT_ANALYZE_MAX_WAIT_S), MAX_WAIT_S))


def _take_slot(scope: str, limit: int, expires_at: dt.datetime) -> int | None:
    """The pk of a slot of ``scope`` now taken, None when all ``limit`` are.

    The unique (scope, slot) constraint decides a race: of two requests inserting one number, one fails and tries
    the next free number.
    """
    used = set(WaitSlot.objects.filter(scope=scope).values_list("slot", flat=True))
    for number in range(limit):
        if number in used:
            continue
        try:
            with transaction.atomic():
                return WaitSlot.objects.create(scope=scope, slot=number, expires_at=expires_at).pk
        except IntegrityError:  # taken meanwhile by another request
            continue
    return None


def _retry_after_s(scope: str, now: dt.datetime) -> int:
    """Seconds until the first slot of ``scope`` is free at the latest (waits usually end sooner)."""
    first = WaitSlot.objects.filter(scope=scope).order_by("expires_at").values_list("expires_at", flat=True).first()
    if first is None:  # freed meanwhile
        return 1
    return max(1, math.ceil((first - now).total_seconds()))


@contextmanager
def waiting(user_key: str, wait_s: float) -> Iterator[None]:
    """Holds a wait slot of the user and one of everyone's while the block runs; raises ``TooMany`` (nothing
    held) when the user already has HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER requests waiting or everyone together
    HINDSIGHT_ANALYZE_MAX_WAITING.

    The slots are freed however the block ends (an exception included); the rows of a process killed meanwhile
    stop counting ``SLOT_SLACK_S`` after the wait would have ended.
    """
    now = timezone.now()
    WaitSlot.objects.filter(expires_at__lte=now).delete()  # left by killed processes
    expires_at = now + dt.timedelta(seconds=float(wait_s) + SLOT_SLACK_S)
    scopes = (
        (f"user:{user_key}"[:300], settings.HINDSIGHT_ANALYZE_MAX_WAITING_PER_USER, "you have", "_PER_USER"),
        (ALL_WAITING, settings.HINDSIGHT_ANALYZE_MAX_WAITING, "all users have", ""),
    )
    taken: list[int] = []
    try:
        for scope, limit, who, suffix in scopes:
            pk = _take_slot(scope, limit, expires_at)
            if pk is None:
                raise TooMany(
                    f"{who} {limit} analyze requests waiting already (HINDSIGHT_ANALYZE_MAX_WAITING{suffix}); ask "
                    "again without wait_s and poll the gate URL, or retry after Retry-After seconds.",
                    retry_after_s=_retry_after_s(scope, now),
                    field="wait_s",
                )
            taken.append(pk)
        yield
    finally:
        WaitSlot.objects.filter(pk__in=taken).delete()


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
