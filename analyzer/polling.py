"""Polling the clusters' sources: list what finished, claim each app, fetch, analyze and store it once.

Each (cluster, app id, attempt) has one ``AppClaim`` row. A poller takes it by a conditional UPDATE that changes
exactly one row only when the app is still to do (state ``retry``) or its claim is stale (the poller holding it
died: its lease ran out), so two pollers, two sources of one cluster, or a pass repeated after a crash never
analyze an app twice. A fetch that fails is retried at the next pass until the budget is spent; the app is then
stored as failed, with its error. A source's checkpoint moves to the end of a window only once every app listed
in it is done or failed, so a restarted poller asks for the same window again and the claims skip what is done:
no gap, no repeat.

An analyzed app is stored with ``AnalyzedApp.source`` = ``<cluster>/<backend>`` of the source that claimed it
(e.g. ``prod/spark-history``): its identity in the database is then per cluster, like the claim's.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import heuristics
from analyzer.models import AppClaim, ClaimState, Cluster, Source
from analyzer.pipeline import AnalysisReport, HeuristicSuite, analyze
from analyzer.services import report_store
from analyzer.sources import (
    MAX_ERROR_CHARS,
    SourceConfigError,
    checkpoint_advance,
    mask_secrets,
    poll_failed,
    poll_window,
    source_backend,
)
from fetchers.backends import AppRef, Backend, BackendError

log = logging.getLogger(__name__)

DEFAULT_FETCH_BUDGET: Final = 3  # fetches of one app before it is stored as failed
DEFAULT_LEASE_S: Final = 3600  # a claim older than this belongs to a poller that died: another may take it


@dataclass(frozen=True)
class AnalyzedAppResult:
    """One app analyzed and stored by a pass."""

    report: AnalysisReport
    stored_id: int


@dataclass
class PollResult:
    """What one pass over one source did."""

    cluster: str
    backend: str
    analyzed: list[AnalyzedAppResult] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # apps stored as failed to fetch in this pass
    to_retry: list[str] = field(default_factory=list)  # apps whose fetch failed and will be tried again
    busy: list[str] = field(default_factory=list)  # apps another poller is working on
    window: tuple[int, int] | None = None
    checkpoint_advanced: bool = False
    error: str | None = None  # the listing failed (secrets masked); the checkpoint stayed

    @property
    def label(self) -> str:
        return f"{self.cluster}/{self.backend}"


def default_poller_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _key(ref: AppRef) -> str:
    return f"{ref.app_id}/{ref.attempt_id}" if ref.attempt_id else ref.app_id


def claim_app(cluster: Cluster, ref: AppRef, *, poller_id: str, lease_s: int = DEFAULT_LEASE_S) -> AppClaim | None:
    """The app's claim, now held by ``poller_id``, or None when it is done, failed or held by a live poller."""
    now = timezone.now()
    with transaction.atomic():
        claim, _created = AppClaim.objects.get_or_create(  # the unique constraint settles races
            cluster=cluster, app_id=ref.app_id[:255], attempt_id=(ref.attempt_id or "")[:64]
        )
        won = (
            AppClaim.objects.filter(pk=claim.pk)
            .filter(
                Q(state=ClaimState.RETRY)
                | Q(state=ClaimState.CLAIMED, claimed_at__lt=now - dt.timedelta(seconds=lease_s))
            )
            .update(state=ClaimState.CLAIMED, claimed_at=now, claimed_by=poller_id[:255])
        )
    if won != 1:
        return None
    claim.refresh_from_db()
    return claim


def _finish(claim: AppClaim, **values: object) -> None:
    """Records the outcome, unless another poller took the claim over meanwhile (ours was stale)."""
    AppClaim.objects.filter(pk=claim.pk, state=ClaimState.CLAIMED, claimed_by=claim.claimed_by).update(
        finished_at=timezone.now(), **values
    )


def _settled(cluster: Cluster, ref: AppRef) -> bool:
    state = (
        AppClaim.objects.filter(cluster=cluster, app_id=ref.app_id[:255], attempt_id=(ref.attempt_id or "")[:64])
        .values_list("state", flat=True)
        .first()
    )
    return state in {ClaimState.DONE, ClaimState.FAILED}


def _process(
    source: Source,
    backend: Backend,
    ref: AppRef,
    claim: AppClaim,
    suite: HeuristicSuite,
    budget: int,
    result: PollResult,
) -> None:
    key = _key(ref)
    try:
        app = backend.fetch(ref)
        report = analyze(app, suite)
        stored = report_store(report=report, source=result.label)
    except Exception as error:  # a fetch, reader or database failure costs this app one try, never the pass
        permanent = isinstance(error, BackendError) and error.permanent
        reason = str(error) if isinstance(error, BackendError) else f"{type(error).__name__}: {error}"
        text = mask_secrets(reason or type(error).__name__, source.secrets.values())[:MAX_ERROR_CHARS]
        tries = claim.tries + 1
        if permanent or tries >= budget:
            _finish(claim, state=ClaimState.FAILED, tries=tries, last_error=text)
            result.failed.append(key)
        else:
            _finish(claim, state=ClaimState.RETRY, tries=tries, last_error=text)
            result.to_retry.append(key)
        if isinstance(error, BackendError):
            log.warning("%s: %s: %s", result.label, key, text)
        else:  # not a fetch error: a bug or a database failure, worth its traceback
            log.exception("%s: %s: %s", result.label, key, text)
        return
    _finish(claim, state=ClaimState.DONE, last_error="", analyzed_app=stored)
    result.analyzed.append(AnalyzedAppResult(report=report, stored_id=stored.pk))


def poll_source(
    source: Source,
    *,
    now_ms: int,
    poller_id: str,
    suite: HeuristicSuite | None = None,
    budget: int = DEFAULT_FETCH_BUDGET,
    lease_s: int = DEFAULT_LEASE_S,
) -> PollResult:
    """One pass over one source: its next window listed, each app claimed, analyzed and stored at most once."""
    cluster = source.cluster
    result = PollResult(cluster=cluster.name, backend=source.backend)
    window = poll_window(source, now_ms)
    if window is None:
        return result
    result.window = window
    try:
        backend = source_backend(source)
        refs = backend.list_finished(*window)
    except (BackendError, SourceConfigError, OSError) as error:
        result.error = poll_failed(source, error)
        return result
    except Exception as error:  # a backend bug must not stop the other sources
        log.exception("%s: listing failed", result.label)
        result.error = poll_failed(source, f"{type(error).__name__}: {error}")
        return result
    if suite is None:
        suite = heuristics.load_suite(user_file=settings.HINDSIGHT_HEURISTICS_FILE)
    recorded = True
    for ref in refs:
        claim = claim_app(cluster, ref, poller_id=poller_id, lease_s=lease_s)
        if claim is None:
            if not _settled(cluster, ref):
                result.busy.append(_key(ref))
                recorded = False
            continue
        _process(source, backend, ref, claim, suite, budget, result)
        recorded = recorded and not result.to_retry
    if recorded:
        result.checkpoint_advanced = checkpoint_advance(source, window[1])
    else:
        now = timezone.now()
        Source.objects.filter(pk=source.pk).update(last_poll_at=now, last_success_at=now, last_error="")
    return result


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


def poll_sources(*, now_ms: int | None = None, poller_id: str | None = None) -> Iterator[PollResult]:
    """One pass over every enabled source of every cluster, one result per source as it is done."""
    suite = heuristics.load_suite(user_file=settings.HINDSIGHT_HEURISTICS_FILE)
    poller = poller_id or default_poller_id()
    sources = Source.objects.filter(enabled=True).select_related("cluster").order_by("cluster__name", "backend", "id")
    for source in sources:
        now = now_ms if now_ms is not None else int(timezone.now().timestamp() * 1000)
        yield poll_source(source, now_ms=now, poller_id=poller, suite=suite)


def poll_once(*, now_ms: int | None = None, poller_id: str | None = None) -> list[AnalysisReport]:
    """The reports of the apps analyzed in one pass over all sources (none for apps already analyzed)."""
    return [done.report for result in poll_sources(now_ms=now_ms, poller_id=poller_id) for done in result.analyzed]
