"""Polling the clusters' sources: list what finished, record each app once, then fetch, analyze and store it once.

Two steps, each safe to repeat:

1. **Listing** (``poll_source``): the source's next window is listed and each app attempt in it is recorded as
   an ``AppClaim`` row, unique per (cluster, app id, attempt), with what the listing said (enough to fetch it).
   Once the rows exist the checkpoint moves to the window's end: a recorded app cannot be lost, so the next
   listing starts there. A poller restarted mid-window lists the same window again and records nothing twice.
   A yarn-rm source records the ResourceManager's view of each app instead (``analyzer.ingestion.yarn_join``); the
   cluster's History Server or event-log directory fetches the app. MapReduce is the exception: when the cluster
   has a JobHistory Server (``Cluster.jobhistory_url``), its yarn-rm source also lists the MAPREDUCE apps and
   records a claim for each, which ``analyze_claim`` fetches from the JobHistory Server (``fetchers.jobhistory``,
   with the cluster's HTTP settings, those of its yarn-rm source) and stores as ``<cluster>/mapreduce-jobhistory``.
2. **Analysis** (``analyze_claim``): a worker takes the claim by a conditional UPDATE that changes the row only
   while it is waiting (state ``retry``), or held by a worker that died (its lease ran out), or held by this very
   task (a redelivered message: the broker gave it back because its worker died). Two workers, two sources of
   one cluster, or a redelivered message never analyze an app twice; the outcome is written only while the
   claim is still held. A failed fetch waits an exponential backoff with jitter and is tried again, up to the
   budget; the app is then stored as failed with its error, shown on the Sources page, and can be retried
   (``claims_retry``: the admin action, ``manage.py sources retry``).

Run modes share both steps: ``poll --once`` and the ``poll`` loop list and then analyze the due apps in-process;
Celery runs one task per source listing and one per app (``analyzer.tasks``), and beat sweeps the claims whose
(re)try is due or whose message was lost (``claims_sweep``).

An analyzed app is stored with ``AnalyzedApp.source`` = ``<cluster>/<backend>`` of the source that listed it
(e.g. ``prod/spark-history``) and ``AnalyzedApp.cluster``: its identity in the database is per cluster.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import os
import random
import socket
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import orjson
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q
from django.utils import timezone

import heuristics
from analysis import jobinfo
from analysis.pipeline import AnalysisReport, HeuristicSuite, analyze
from analyzer.ingestion import yarn_join
from analyzer.ingestion.claims import claims_retry  # noqa: F401  (re-exported: the admin and the CLI call it here)
from analyzer.ingestion.sources import (
    HTTP_PARAMETER_NAMES,
    MAX_ERROR_CHARS,
    SourceConfigError,
    checkpoint_advance,
    mask_secrets,
    poll_failed,
    poll_window,
    source_backend,
)
from analyzer.models import AppClaim, ClaimState, Cluster, Source, SourceBackend
from analyzer.services import report_store
from appmodel import SparkApp
from appmodel.mapreduce import MapReduceApp
from fetchers.backends import AppRef, Backend, BackendError, ParameterError
from fetchers.eventlog import EventLogError, find_event_logs
from fetchers.eventlog.layout import MAX_ATTEMPTS_LOOKED_UP as MAX_ATTEMPTS_LOOKED_UP  # the on-demand lookup's bound
from fetchers.eventlog.layout import ROLLING_DIR_PREFIX, spark_log_names
from fetchers.eventlog_dir import EventLogDirectoryBackend, completion_ms
from fetchers.http import get_json
from fetchers.jobhistory import JobHistoryBackend
from fetchers.spark_history import SparkHistoryBackend
from fetchers.yarn_rm import ResourceManagerBackend

log = logging.getLogger(__name__)

SWEEP_BATCH: Final = 1000  # claims enqueued per sweep at most: a backlog drains without flooding the broker
_CREATE_BATCH: Final = 500
MAPREDUCE: Final = "MAPREDUCE"  # the ResourceManager's applicationType of MapReduce jobs
JOBHISTORY_LABEL: Final = "mapreduce-jobhistory"  # MapReduce apps are stored as <cluster>/mapreduce-jobhistory
_ALL_TIME_MS: Final = 2**62  # the end of a listing window that holds every log, however late
Enqueue = Callable[[int], object]
OnAnalyzed = Callable[["PollResult", "AnalyzedAppResult"], object]


class AppNotFound(BackendError):
    """The source has no such app: for a claim only an on-demand request named (``listed=False``), it ends
    ``not_found`` rather than ``failed`` (analyzer.ingestion.ondemand)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True, status=404)


@dataclass(frozen=True)
class AnalyzedAppResult:
    """One app analyzed and stored."""

    report: AnalysisReport
    stored_id: int


@dataclass
class ClaimOutcome:
    """What one ``analyze_claim`` did: analyzed, failed for good, to retry, or skipped (``busy``)."""

    key: str
    analyzed: AnalyzedAppResult | None = None
    failed: bool = False
    to_retry: bool = False
    busy: bool = False  # done already, or held by a live worker: nothing was done
    not_found: bool = False  # only a request named it and the source has no such app (no failure of the source)
    error: str = ""


@dataclass
class PollResult:
    """What one pass over one source did."""

    cluster: str
    backend: str
    listed: int = 0  # apps the window's listing returned
    recorded: int = 0  # of which newly recorded
    enqueued: int = 0
    analyzed: list[AnalyzedAppResult] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # apps stored as failed to fetch in this pass
    to_retry: list[str] = field(default_factory=list)  # apps whose fetch failed and will be tried again
    busy: list[str] = field(default_factory=list)  # apps another worker is on
    window: tuple[int, int] | None = None
    late: int = 0  # apps found by re-listing windows already passed (listed late by their server)
    checkpoint_advanced: bool = False
    error: str | None = None  # the listing failed (secrets masked); the checkpoint stayed

    @property
    def label(self) -> str:
        return f"{self.cluster}/{self.backend}"

    def add(self, outcome: ClaimOutcome) -> None:
        if outcome.analyzed is not None:
            self.analyzed.append(outcome.analyzed)
        elif outcome.failed:
            self.failed.append(outcome.key)
        elif outcome.to_retry:
            self.to_retry.append(outcome.key)
        elif outcome.busy:
            self.busy.append(outcome.key)


def default_poller_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@functools.cache
def _host_identity() -> str:
    """This machine as a claim records it: the host name, plus (on Linux) the boot and the PID namespace.

    A process id means something only within one PID namespace of one boot: two containers that share a host
    name (host networking) but not their PID namespace, or a machine rebooted since, are different hosts here,
    so a live process elsewhere is never mistaken for a dead one on this host.
    """
    parts = [socket.gethostname()[:160]]
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            parts.append("boot:" + boot.read().strip()[:36])
        parts.append(os.readlink("/proc/self/ns/pid"))  # e.g. "pid:[4026531836]"
    except (OSError, UnicodeDecodeError):
        pass
    return " ".join(parts)[:255]


def claim_holder() -> tuple[str, int]:
    """(host, process id) of the current process, as ``AppClaim.claimed_host`` / ``claimed_pid`` record them."""
    return _host_identity(), os.getpid()


def _process_gone(pid: int) -> bool:
    """True only when no process ``pid`` exists on this host (signal 0 checks without sending anything).

    A process of another user (PermissionError) is alive; a reused pid looks alive too, so the claim then waits
    out its lease as before: the check can only make a take-over sooner, never wrong.
    """
    if pid <= 0 or pid == os.getpid() or os.name != "posix":
        return False  # kill(0) would signal our own process group; elsewhere signal 0 is not a probe
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _orphaned_claims() -> Q | None:
    """Claims held by a process of this host that has exited (killed, crashed): takeable now, lease or not.

    A claim of another host cannot be checked from here and keeps its lease.
    """
    host, _ = claim_holder()
    pids = (
        AppClaim.objects.filter(state=ClaimState.CLAIMED, claimed_host=host, claimed_pid__isnull=False)
        .values_list("claimed_pid", flat=True)
        .distinct()
    )
    dead = [pid for pid in pids if pid is not None and _process_gone(pid)]
    if not dead:
        return None
    return Q(state=ClaimState.CLAIMED, claimed_host=host, claimed_pid__in=dead)


def retry_delay_s(tries: int, *, base_s: float | None = None, max_s: float | None = None) -> float:
    """Seconds to wait before try ``tries + 1``: doubling from the base up to the cap, times a jitter in [0.5, 1)."""
    base = settings.HINDSIGHT_RETRY_BASE_S if base_s is None else base_s
    cap = settings.HINDSIGHT_RETRY_MAX_S if max_s is None else max_s
    return float(min(cap, base * 2 ** max(0, tries - 1)) * random.uniform(0.5, 1.0))  # noqa: S311 (jitter, not a secret)


def _key(app_id: str, attempt_id: str | None) -> str:
    return f"{app_id}/{attempt_id}" if attempt_id else app_id


def _ref_json(ref: AppRef) -> dict[str, Any]:
    """What a listing said of an app, as JSON the claim keeps (values JSON cannot hold become text)."""
    extra = orjson.loads(orjson.dumps(dict(ref.extra), default=str, option=orjson.OPT_NON_STR_KEYS))
    return {"name": ref.name[:1000], "user": ref.user[:255], "extra": extra}


def claim_ref(claim: AppClaim) -> AppRef:
    """The listing's ref of a recorded app, as its source's backend fetches it."""
    data = claim.ref if isinstance(claim.ref, dict) else {}
    extra = data.get("extra")
    return AppRef(
        app_id=claim.app_id,
        attempt_id=claim.attempt_id or None,
        finished_ms=claim.finished_ms,
        name=str(data.get("name") or ""),
        user=str(data.get("user") or ""),
        extra=extra if isinstance(extra, dict) else {},
    )


# Step 1: listing


def claims_record(source: Source, refs: Sequence[AppRef], *, not_before: dt.datetime | None = None) -> list[int]:
    """Records each listed app attempt once per cluster; the ids of this source's listed claims never tried yet.

    Those are the ones this call created and any an earlier listing of the same window created but nobody took
    yet (a pass that failed after recording them, say): enqueuing one twice is harmless, missing one would leave
    it to the sweep. ``not_before`` delays their first try (set while their messages are being enqueued, so the
    sweeper leaves them alone); None makes them due at once.
    """
    created: list[int] = []
    for start in range(0, len(refs), _CREATE_BATCH):
        batch = {(ref.app_id[:255], (ref.attempt_id or "")[:64]): ref for ref in refs[start : start + _CREATE_BATCH]}
        existing = set(
            AppClaim.objects.filter(cluster=source.cluster_id, app_id__in={app for app, _ in batch}).values_list(
                "app_id", "attempt_id"
            )
        )
        new = [
            AppClaim(
                cluster_id=source.cluster_id,
                app_id=app_id,
                attempt_id=attempt_id,
                source=source,
                finished_ms=ref.finished_ms,
                ref=_ref_json(ref),
                next_try_at=not_before,
            )
            for (app_id, attempt_id), ref in batch.items()
            if (app_id, attempt_id) not in existing
        ]
        # Another poller may record the same app meanwhile: the unique constraint keeps one, this one is skipped.
        AppClaim.objects.bulk_create(new, ignore_conflicts=True)
        _now_listed(source, batch, not_before)
        untried = AppClaim.objects.filter(
            cluster=source.cluster_id, source=source, app_id__in={app for app, _ in batch}, state=ClaimState.RETRY
        ).filter(tries=0, claimed_at__isnull=True)
        if not_before is not None:
            untried.update(next_try_at=not_before)
        rows = untried.values_list("pk", "app_id", "attempt_id")
        created.extend(pk for pk, app_id, attempt_id in rows if (app_id, attempt_id) in batch)
    return created


def _now_listed(source: Source, batch: dict[tuple[str, str], AppRef], not_before: dt.datetime | None) -> None:
    """Claims of ``batch`` an on-demand request recorded before any listing are listed now: one found ``not_found``
    (asked for before its log was there) is due again, with what the listing says."""
    unlisted = AppClaim.objects.filter(
        cluster=source.cluster_id, app_id__in={app for app, _ in batch}, listed=False
    ).values_list("pk", "app_id", "attempt_id", "state")
    for pk, app_id, attempt_id, state in unlisted:
        ref = batch.get((app_id, attempt_id))
        if ref is None:
            continue
        if state == ClaimState.NOT_FOUND:
            AppClaim.objects.filter(pk=pk, state=ClaimState.NOT_FOUND).update(
                listed=True,
                state=ClaimState.RETRY,
                tries=0,
                next_try_at=not_before,
                last_error="",
                claimed_at=None,
                source=source,
                finished_ms=ref.finished_ms,
                ref=_ref_json(ref),
            )
        AppClaim.objects.filter(pk=pk).update(listed=True)


def _list(source: Source, window: tuple[int, int], result: PollResult) -> list[AppRef] | None:
    """The window's apps, with the backend's state kept; None (and the error recorded) when listing failed."""
    try:
        backend = source_backend(source)
        if isinstance(backend, ResourceManagerBackend) and mapreduce_enabled(source):
            backend.application_types.add(MAPREDUCE)  # the cluster's JobHistory Server fetches them
        backend.state = dict(source.backend_state or {})
        refs = backend.list_finished(*window)
    except (BackendError, SourceConfigError, OSError) as error:
        result.error = poll_failed(source, error)
        return None
    except Exception as error:  # a backend bug must not stop the other sources
        log.exception("%s: listing failed", result.label)
        result.error = poll_failed(source, f"{type(error).__name__}: {error}")
        return None
    if backend.state != (source.backend_state or {}):
        Source.objects.filter(pk=source.pk).update(backend_state=backend.state)
        source.backend_state = backend.state
    return refs


def poll_source(
    source: Source,
    *,
    now_ms: int,
    poller_id: str,
    suite: HeuristicSuite | None = None,
    enqueue: Enqueue | None = None,
    on_analyzed: OnAnalyzed | None = None,
) -> PollResult:
    """One pass over one source: its next window listed and recorded, then the apps due analyzed.

    Without ``enqueue`` the due apps of this source (new ones and earlier ones whose retry is due) are analyzed
    here, one after another, each reported to ``on_analyzed`` as soon as it is stored. With it, each newly
    recorded app is handed to ``enqueue(claim_id)`` (a Celery task) and the sweeper takes care of retries.
    """
    result = PollResult(cluster=source.cluster.name, backend=source.backend)
    window = poll_window(source, now_ms)
    if window is not None:
        result.window = window
        refs = _list(source, window, result)
        if refs is None:
            return result
        result.listed = len(refs)
        new = _record(source, refs, enqueue)
        result.recorded = len(new)
        new.extend(_relist_late(source, now_ms, window[0], enqueue, result))
        if enqueue is not None:  # before the checkpoint: a pass retried after a failure there enqueues them again
            for claim_id in new:
                enqueue(claim_id)
            result.enqueued = len(new)
        result.checkpoint_advanced = checkpoint_advance(source, window[1])
    if enqueue is None and (source.backend != SourceBackend.YARN_RM or mapreduce_enabled(source)):
        if suite is None:
            suite = heuristics.load_suite(
                user_file=settings.HINDSIGHT_HEURISTICS_FILE, profile=settings.HINDSIGHT_SEVERITY_PROFILE
            )
        # A claim this poller still holds was abandoned by its own earlier pass (the database failed while the
        # outcome was written): passes run one at a time, so it is taken back now rather than after the lease.
        for claim_id in claims_due(source=source, poller_id=poller_id):
            outcome = analyze_claim(claim_id, poller_id=poller_id, suite=suite)
            result.add(outcome)
            if on_analyzed is not None and outcome.analyzed is not None:
                on_analyzed(result, outcome.analyzed)
    return result


def _record(source: Source, refs: Sequence[AppRef], enqueue: Enqueue | None) -> list[int]:
    if source.backend == SourceBackend.YARN_RM:
        yarn_join.views_record(source.cluster, refs)
        refs = mapreduce_refs(source, refs)  # the only apps a yarn-rm source claims
        if not refs:
            return []
    grace = dt.timedelta(seconds=settings.HINDSIGHT_ENQUEUE_GRACE_S)
    return claims_record(source, refs, not_before=timezone.now() + grace if enqueue else None)


def _relist_late(source: Source, now_ms: int, passed_ms: int, enqueue: Enqueue | None, result: PollResult) -> list[int]:
    """Every few minutes, the source's last ``relist_lookback_s`` before ``passed_ms`` listed again.

    A server may list an app only after its window has passed (a History Server lists a log once it has parsed
    it, which for a big log can outlast the safety margin); recording is idempotent, so what was already recorded
    costs nothing and what was missed is recorded now. A failure here is logged and left for the next time.
    """
    if source.relist_lookback_s <= 0:
        return []
    now = timezone.now()
    if source.relisted_at is not None and now - source.relisted_at < dt.timedelta(
        seconds=settings.HINDSIGHT_RELIST_EVERY_S
    ):
        return []
    start_ms = now_ms - source.relist_lookback_s * 1000
    Source.objects.filter(pk=source.pk).update(relisted_at=now)
    source.relisted_at = now
    if start_ms >= passed_ms:
        return []
    late = PollResult(cluster=result.cluster, backend=result.backend)
    refs = _list(source, (start_ms, passed_ms), late)
    if refs is None:
        log.warning("%s: re-listing the last %s s failed: %s", result.label, source.relist_lookback_s, late.error)
        return []
    found = _record(source, refs, enqueue)
    result.late = len(found)
    if found:
        log.info("%s: %d app(s) listed late by the server recorded now", result.label, len(found))
    return found


# Step 2: analysis


def claims_due(
    *,
    source: Source | None = None,
    now: dt.datetime | None = None,
    limit: int | None = None,
    poller_id: str | None = None,
) -> list[int]:
    """Claims to analyze now, oldest first: waiting with their try due, held past the lease by a dead worker or
    at once by a process of this host that is gone, or held by ``poller_id`` itself (left over from its own pass
    that failed)."""
    now = now or timezone.now()
    lease = dt.timedelta(seconds=settings.HINDSIGHT_CLAIM_LEASE_S)
    condition = (
        Q(state=ClaimState.RETRY, next_try_at__isnull=True)
        | Q(state=ClaimState.RETRY, next_try_at__lte=now)
        | Q(state=ClaimState.CLAIMED, claimed_at__lt=now - lease)
    )
    orphaned = _orphaned_claims()
    if orphaned is not None:
        condition |= orphaned
    if poller_id is not None:
        condition |= Q(state=ClaimState.CLAIMED, claimed_by=poller_id[:255])
    due = AppClaim.objects.filter(condition)
    if source is not None:
        due = due.filter(source=source)
    ids = due.order_by("finished_ms", "pk").values_list("pk", flat=True)
    return list(ids[:limit] if limit is not None else ids)


def claim_take(claim_id: int, poller_id: str) -> AppClaim | None:
    """The claim, now held by ``poller_id`` (and this host and process); None when it is done, failed or held by
    another live worker (one of this host whose process is gone is not live, whatever its lease says)."""
    now = timezone.now()
    lease = dt.timedelta(seconds=settings.HINDSIGHT_CLAIM_LEASE_S)
    host, pid = claim_holder()
    condition = (
        Q(state=ClaimState.RETRY)
        | Q(state=ClaimState.CLAIMED, claimed_at__lt=now - lease)
        | Q(state=ClaimState.CLAIMED, claimed_by=poller_id[:255])  # this task again: its first run died
    )
    held = AppClaim.objects.filter(pk=claim_id, state=ClaimState.CLAIMED, claimed_host=host).values_list(
        "claimed_pid", "claimed_at"
    )
    for holder_pid, claimed_at in held:
        if holder_pid is not None and _process_gone(holder_pid):
            # Taken over only as it was read: a claim another process took meanwhile is theirs.
            condition |= Q(state=ClaimState.CLAIMED, claimed_host=host, claimed_pid=holder_pid, claimed_at=claimed_at)
    won = (
        AppClaim.objects.filter(pk=claim_id)
        .filter(condition)
        .update(
            state=ClaimState.CLAIMED, claimed_at=now, claimed_by=poller_id[:255], claimed_host=host, claimed_pid=pid
        )
    )
    if won != 1:
        return None
    return AppClaim.objects.select_related("cluster", "source", "source__cluster").get(pk=claim_id)


def _finish(claim: AppClaim, **values: object) -> bool:
    """Records the outcome, unless another worker took the claim over meanwhile (ours was stale)."""
    return bool(
        AppClaim.objects.filter(pk=claim.pk, state=ClaimState.CLAIMED, claimed_by=claim.claimed_by).update(
            finished_at=timezone.now(), **values
        )
    )


def analyze_claim(
    claim_id: int,
    *,
    poller_id: str,
    suite: HeuristicSuite | None = None,
    budget: int | None = None,
) -> ClaimOutcome:
    """Takes the claim, fetches, analyzes and stores its app; a failure costs it one try (or all, if permanent).

    A database failure while storing is recorded once the connection is back, or raised when it stays down
    (the caller retries the whole call: the claim is still held by ``poller_id``, which may take it again).
    """
    claim = claim_take(claim_id, poller_id)
    if claim is None:
        return ClaimOutcome(key=str(claim_id), busy=True)
    key = _key(claim.app_id, claim.attempt_id)
    outcome = ClaimOutcome(key=key)
    budget = settings.HINDSIGHT_FETCH_BUDGET if budget is None else budget
    source = claim.source
    started = time.perf_counter()
    try:
        if source is None:
            raise BackendError(f"{key}: the source that listed it was removed", permanent=True)
        label, app = _fetch(claim, source)
        report = analyze(
            app,
            suite
            or heuristics.configured_suite(settings.HINDSIGHT_HEURISTICS_FILE, settings.HINDSIGHT_SEVERITY_PROFILE),
            jobinfo.configured(settings.HINDSIGHT_JOBINFO_FILE),
        )
        extra = {
            "cluster": claim.cluster,
            "analysis_ms": int((time.perf_counter() - started) * 1000),
            **yarn_join.joined_fields(yarn_join.view_for(claim.cluster, claim.app_id)),
        }
        with transaction.atomic():
            stored = report_store(report=report, source=label, extra=extra)
            done = {"state": ClaimState.DONE, "last_error": "", "analyzed_app": stored, "next_try_at": None}
            if not _finish(claim, listed=True, **done):
                # Taken over meanwhile (our lease ran out): the other worker stores it; ours is rolled back.
                transaction.set_rollback(True)
                outcome.busy = True
                return outcome
    except Exception as error:  # a fetch, reader or database failure costs this app one try, never the pass
        _failure(claim, error, budget, outcome, secrets=source.secrets.values() if source else ())
        return outcome
    outcome.analyzed = AnalyzedAppResult(report=report, stored_id=stored.pk)
    return outcome


def _fetch(claim: AppClaim, source: Source) -> tuple[str, SparkApp | MapReduceApp]:
    """(stored source label, app model) of a claim: its source's backend fetches it, except a MapReduce app a
    yarn-rm source recorded, which the cluster's JobHistory Server gives."""
    if source.backend == SourceBackend.YARN_RM:
        job = jobhistory_backend(claim.cluster, source).fetch(claim_ref(claim))
        return f"{claim.cluster.name}/{JOBHISTORY_LABEL}", job
    backend: Backend = source_backend(source)
    ref = claim_ref(claim)
    if source.backend == SourceBackend.EVENTLOG_DIR and not ref.extra.get("path"):
        ref = located_log(backend, ref)  # an on-demand request (analyzer.ingestion.ondemand) names the app, not its log
    elif not claim.listed and isinstance(backend, SparkHistoryBackend):
        history_has(backend, ref)
    return f"{claim.cluster.name}/{source.backend}", backend.fetch(ref)


def history_has(backend: SparkHistoryBackend, wanted: AppRef) -> None:
    """Raises ``AppNotFound`` unless the History Server knows the app (and the attempt, when one is given).

    One small GET of ``applications/<id>`` before a fetch of an app no listing named: without it, a made-up id would
    cost a log download attempt and the REST fallback, and end as an ordinary fetch failure.
    """
    url = backend.api_url(f"applications/{quote(wanted.app_id, safe='')}")
    try:
        info = get_json(backend.session, url)
    except BackendError as error:
        if error.status == 404:
            raise AppNotFound(f"{wanted.app_id}: the History Server has no such app") from None
        raise
    if wanted.attempt_id and isinstance(info, dict):
        attempts = [a for a in info.get("attempts") or () if isinstance(a, dict)]
        if not any(str(a.get("attemptId") or "") == wanted.attempt_id for a in attempts):
            raise AppNotFound(f"{wanted.app_id}: the History Server has no attempt {wanted.attempt_id}")


def located_log(backend: Backend, wanted: AppRef) -> AppRef:
    """The ref of the complete event log of ``wanted``'s app (its attempt when given, else the latest).

    In local directories the log is looked up by the names Spark gives it (``spark_log_names``: a stat each, no
    listing), so a made-up id costs a few stats, not a listing of the whole source; a log found only elsewhere
    (a nested directory, a renamed file) is analyzed when polling lists it. With WebHDFS directories the backend's
    own listing finds it, over all time: one LISTSTATUS per directory, no parsing. A log of that id still in
    progress is not found; a missing one ends the request as not found (a wrong id, or asked too early: asking
    again re-arms it, and a listing that finds it later makes it due).
    """
    if isinstance(backend, EventLogDirectoryBackend) and not backend.remote:
        found = _logs_named(backend.directories, wanted)
    else:
        backend.state = {}  # a private listing: the source's in-progress memory is neither read nor changed
        found = [
            ref
            for ref in backend.list_finished(0, _ALL_TIME_MS)
            if ref.app_id == wanted.app_id and (not wanted.attempt_id or ref.attempt_id == wanted.attempt_id)
        ]
    if not found:
        attempt = f" attempt {wanted.attempt_id}" if wanted.attempt_id else ""
        raise AppNotFound(
            f"{wanted.app_id}{attempt}: no complete event log of this app in the source's directories "
            "(still running, or not this id?)"
        )
    return max(found, key=lambda ref: (ref.finished_ms or 0, ref.attempt_id or ""))


def _logs_named(directories: Sequence[Path], wanted: AppRef) -> list[AppRef]:
    """Refs of the complete logs of ``wanted`` found under their Spark names at the top of ``directories``."""
    refs: list[AppRef] = []
    for directory in directories:
        for name in spark_log_names(wanted.app_id, wanted.attempt_id):
            path = directory / name
            try:
                mode = path.stat().st_mode
            except OSError:  # no such log (the usual case), or unreadable
                continue
            rolling = name.startswith(ROLLING_DIR_PREFIX)
            if not (stat.S_ISDIR(mode) if rolling else stat.S_ISREG(mode)):  # a FIFO is never opened
                continue
            try:
                logs, _ = find_event_logs(path)
                refs.extend(
                    AppRef(wanted.app_id, found.attempt_hint, completion_ms(found), extra={"path": str(found.path)})
                    for found in logs
                    if not found.in_progress
                )
            except (EventLogError, OSError) as error:
                log.warning("%s: not usable as the log of %s: %s", path, wanted.app_id, error)
    return refs


def mapreduce_enabled(source: Source) -> bool:
    """Whether a yarn-rm source lists and claims its cluster's MapReduce apps: when the cluster has a JobHistory."""
    return source.backend == SourceBackend.YARN_RM and bool(source.cluster.jobhistory_url)


def mapreduce_refs(source: Source, refs: Sequence[AppRef]) -> list[AppRef]:
    """The MapReduce apps of a yarn-rm listing, to claim; none when the cluster has no JobHistory Server."""
    if not mapreduce_enabled(source):
        return []
    return [ref for ref in refs if str(ref.extra.get("applicationType") or "").upper() == MAPREDUCE]


def jobhistory_backend(cluster: Cluster, source: Source) -> JobHistoryBackend:
    """The cluster's JobHistory Server, under the HTTP settings (timeouts, TLS, auth) of its yarn-rm ``source``.

    The task sample and the concurrency bound come from the settings ``HINDSIGHT_JOBHISTORY_TASK_SAMPLE`` and
    ``HINDSIGHT_JOBHISTORY_MAX_CONCURRENCY`` when set, else the backend's defaults (1000 tasks a phase, 4). A
    configuration that no longer validates fails the app for good: retrying cannot mend it.
    """
    if not cluster.jobhistory_url:
        raise BackendError(f"{cluster.name}: no JobHistory Server configured for MapReduce apps", permanent=True)
    given = {**source.params, **source.secrets}
    params: dict[str, Any] = {name: value for name, value in given.items() if name in HTTP_PARAMETER_NAMES}
    for name, setting in (
        ("task_sample", "HINDSIGHT_JOBHISTORY_TASK_SAMPLE"),
        ("max_concurrency", "HINDSIGHT_JOBHISTORY_MAX_CONCURRENCY"),
    ):
        value = getattr(settings, setting)  # None: the backend's own default
        if value is not None:
            params[name] = value
    try:
        return JobHistoryBackend(
            url=cluster.jobhistory_url, redaction_patterns=list(settings.HINDSIGHT_REDACTION_PATTERNS), **params
        )
    except ParameterError as error:
        raise BackendError(mask_secrets(str(error), source.secrets.values()), permanent=True) from None


def _failure(claim: AppClaim, error: Exception, budget: int, outcome: ClaimOutcome, *, secrets: Iterable[str]) -> None:
    if isinstance(error, DatabaseError):
        connection.close()  # a dropped connection: the next query opens a new one (or raises if the server is down)
    permanent = isinstance(error, BackendError) and error.permanent
    reason = str(error) if isinstance(error, BackendError) else f"{type(error).__name__}: {error}"
    text = mask_secrets(reason or type(error).__name__, secrets)[:MAX_ERROR_CHARS]
    tries = claim.tries + 1
    outcome.error = text
    if not claim.listed and isinstance(error, BackendError) and error.status == 404:
        # Only a request named the app and the source has none: no failure of the source (counted nowhere).
        _finish(claim, state=ClaimState.NOT_FOUND, tries=tries, last_error=text, next_try_at=None)
        outcome.not_found = True
        _prune_not_found()
    elif permanent or tries >= budget:
        _finish(claim, state=ClaimState.FAILED, tries=tries, last_error=text, next_try_at=None)
        outcome.failed = True
    else:
        wait = dt.timedelta(seconds=retry_delay_s(tries))
        _finish(claim, state=ClaimState.RETRY, tries=tries, last_error=text, next_try_at=timezone.now() + wait)
        outcome.to_retry = True
    where = f"{claim.cluster.name}: {outcome.key}"
    if isinstance(error, BackendError):
        log.warning("%s: %s", where, text)
    else:  # not a fetch error: a bug or a database failure, worth its traceback
        log.error("%s: %s", where, text, exc_info=error)


def _prune_not_found() -> None:
    """Removes the ``not_found`` claims older than HINDSIGHT_ANALYZE_NOT_FOUND_KEEP_S: made-up ids do not pile up."""
    cutoff = timezone.now() - dt.timedelta(seconds=settings.HINDSIGHT_ANALYZE_NOT_FOUND_KEEP_S)
    AppClaim.objects.filter(state=ClaimState.NOT_FOUND, finished_at__lt=cutoff).delete()


def claims_sweep(enqueue: Enqueue, *, now: dt.datetime | None = None, limit: int = SWEEP_BATCH) -> int:
    """Enqueues the claims whose (re)try is due or whose worker died; each is pushed back by the enqueue grace.

    The grace keeps the next sweeps from enqueuing it again while its message waits in the broker; should the
    message be lost, the app is enqueued again once the grace has passed.
    """
    now = now or timezone.now()
    ids = claims_due(now=now, limit=limit)
    if not ids:
        return 0
    grace = now + dt.timedelta(seconds=settings.HINDSIGHT_ENQUEUE_GRACE_S)
    # A stale claim goes back to waiting first, so its conditional take succeeds for whichever task runs it.
    AppClaim.objects.filter(pk__in=ids, state=ClaimState.CLAIMED).update(state=ClaimState.RETRY)
    AppClaim.objects.filter(pk__in=ids, state=ClaimState.RETRY).update(next_try_at=grace)
    for claim_id in ids:
        enqueue(claim_id)
    return len(ids)


# Due sources and passes


def source_is_due(source: Source, now: dt.datetime) -> bool:
    """True when ``source`` is enabled and was never polled or last polled its interval or more before ``now``."""
    if not source.enabled:
        return False
    return source.last_poll_at is None or now - source.last_poll_at >= dt.timedelta(seconds=source.poll_interval_s)


def sources_due(now: dt.datetime) -> list[Source]:
    """The enabled sources to poll at ``now``, each on its own interval; a handful of rows, so filtered here."""
    sources = Source.objects.filter(enabled=True).order_by("cluster_id", "backend", "id")
    return [source for source in sources if source_is_due(source, now)]


def seconds_until_due(now: dt.datetime, *, idle_s: float) -> float:
    """How long until the next enabled source is due (0 when one is); ``idle_s`` when there is none."""
    waits = [
        0.0
        if s.last_poll_at is None
        else (s.last_poll_at + dt.timedelta(seconds=s.poll_interval_s) - now).total_seconds()
        for s in Source.objects.filter(enabled=True).only("last_poll_at", "poll_interval_s")
    ]
    return max(0.0, min(waits)) if waits else idle_s


def _listing_order(source: Source) -> tuple[bool, str, str, int]:
    # The RM's views first, so apps analyzed in the same pass get them joined at once.
    return (source.backend != SourceBackend.YARN_RM, source.cluster.name, source.backend, source.pk)


def poll_sources(
    *, now_ms: int | None = None, poller_id: str | None = None, on_analyzed: OnAnalyzed | None = None
) -> Iterator[PollResult]:
    """One pass over every enabled source of every cluster, one result per source as it is done."""
    suite = heuristics.load_suite(
        user_file=settings.HINDSIGHT_HEURISTICS_FILE, profile=settings.HINDSIGHT_SEVERITY_PROFILE
    )
    poller = poller_id or default_poller_id()
    sources = sorted(Source.objects.filter(enabled=True).select_related("cluster"), key=_listing_order)
    for source in sources:
        now = now_ms if now_ms is not None else int(timezone.now().timestamp() * 1000)
        yield poll_source(source, now_ms=now, poller_id=poller, suite=suite, on_analyzed=on_analyzed)


def poll_once(*, now_ms: int | None = None, poller_id: str | None = None) -> list[AnalysisReport]:
    """The reports of the apps analyzed in one pass over all sources (none for apps already analyzed)."""
    return [done.report for result in poll_sources(now_ms=now_ms, poller_id=poller_id) for done in result.analyzed]


# Backfill


@dataclass
class BackfillResult:
    """What a backfill of one source over a past range did."""

    label: str
    windows: int = 0
    listed: int = 0
    recorded: int = 0
    claim_ids: list[int] = field(default_factory=list)  # the range's apps still to analyze (new or waiting)
    errors: list[str] = field(default_factory=list)  # windows that could not be listed


def backfill_windows(start_ms: int, end_ms: int, window_ms: int) -> list[tuple[int, int]]:
    """[start_ms, end_ms) cut into consecutive windows of at most ``window_ms``."""
    if window_ms <= 0:
        raise ValueError("the window must be positive")
    return [(lo, min(lo + window_ms, end_ms)) for lo in range(start_ms, end_ms, window_ms)]


def _rearm(source: Source, keys: set[tuple[str, str]]) -> None:
    """The listed apps that are done or failed wait again (a fresh budget); claimed ones stay with their worker."""
    finished = AppClaim.objects.filter(
        cluster=source.cluster_id,
        app_id__in={app_id for app_id, _ in keys},
        state__in=[ClaimState.DONE, ClaimState.FAILED],
    ).values_list("pk", "app_id", "attempt_id")
    ids = [pk for pk, app_id, attempt_id in finished if (app_id, attempt_id) in keys]
    AppClaim.objects.filter(pk__in=ids, state__in=[ClaimState.DONE, ClaimState.FAILED]).update(
        state=ClaimState.RETRY, tries=0, next_try_at=None
    )


def source_backfill(
    source: Source,
    windows: Sequence[tuple[int, int]],
    *,
    on_window: Callable[[int], object] | None = None,
    reanalyze: bool = False,
) -> BackfillResult:
    """Lists a past range window by window and records its apps once; the checkpoint is left alone.

    Apps already recorded (by polling or an earlier backfill) are not recorded again; the ids returned are
    those of the range's apps still waiting, for the caller to analyze here or enqueue. With ``reanalyze`` the
    range's apps already analyzed (or given up on) wait again too, with a fresh budget: after an upgrade, their
    stored reports gain what the new version computes. A claim a live worker holds is left to it. ``on_window(n)``
    is called after each window with the apps it listed (a progress bar).
    """
    result = BackfillResult(label=f"{source.cluster.name}/{source.backend}")
    for window in windows:
        listing = PollResult(cluster=source.cluster.name, backend=source.backend)
        refs = _list(source, window, listing)
        result.windows += 1
        if refs is None:
            result.errors.append(listing.error or "listing failed")
        elif source.backend == SourceBackend.YARN_RM and not mapreduce_enabled(source):
            yarn_join.views_record(source.cluster, refs)
            result.listed += len(refs)
        else:
            if source.backend == SourceBackend.YARN_RM:
                yarn_join.views_record(source.cluster, refs)
                refs = mapreduce_refs(source, refs)  # the MapReduce apps, fetched from the JobHistory Server
            result.listed += len(refs)
            result.recorded += len(claims_record(source, refs))
            keys = {(ref.app_id[:255], (ref.attempt_id or "")[:64]) for ref in refs}
            if reanalyze:
                _rearm(source, keys)
            waiting = AppClaim.objects.filter(
                cluster=source.cluster_id, app_id__in={app_id for app_id, _ in keys}, state=ClaimState.RETRY
            ).values_list("pk", "app_id", "attempt_id")
            result.claim_ids.extend(pk for pk, app_id, attempt_id in waiting if (app_id, attempt_id) in keys)
        if on_window is not None:
            on_window(len(refs or ()))
    return result
