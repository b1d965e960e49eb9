"""Celery tasks: thin. Each loads what it needs by id and calls ``analyzer.ingestion.polling``; retries live here only.

Beat runs ``poll_due_sources`` every few seconds: it enqueues one ``poll_source_task`` per source whose interval
has passed, and one ``analyze_app_task`` per recorded app whose (re)try is due or whose worker died
(``claims_sweep``). A source pass lists its window, records each app once (``AppClaim``) and enqueues one
``analyze_app_task`` per new app, so apps are analyzed in parallel by every worker process. An app task is
acknowledged only once done (acks_late) and given back to the broker when its worker dies; the claim's
conditional update lets the redelivered message, and only it, take the app over, so it is analyzed once.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Task, shared_task
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

import heuristics
from analyzer.ingestion.polling import analyze_claim, claims_sweep, poll_source, sources_due
from analyzer.models import Source

log = logging.getLogger(__name__)

MAX_RETRIES = 5


def _enqueue_app(claim_id: int) -> None:
    analyze_app_task.delay(claim_id)


@shared_task
def poll_due_sources() -> dict[str, Any]:
    """Enqueues one pass of every enabled source that is due, and the apps whose (re)try is due."""
    due = [source.pk for source in sources_due(timezone.now())]
    for source_id in due:
        poll_source_task.delay(source_id)
    return {"sources": due, "apps": claims_sweep(_enqueue_app)}


@shared_task(
    bind=True,
    autoretry_for=(OperationalError,),  # the database restarting or failing over: try the pass again later
    retry_backoff=True,
    retry_jitter=True,
    max_retries=MAX_RETRIES,
)
def poll_source_task(self: Task, source_id: int) -> dict[str, Any] | None:
    """One listing of the source ``source_id``, each new app enqueued; None when the source is gone or disabled."""
    source = Source.objects.select_related("cluster").filter(pk=source_id, enabled=True).first()
    if source is None:
        log.info("source %s is gone or disabled: not polled", source_id)
        return None
    poller_id = f"{self.request.hostname or 'celery'}:{os.getpid()}"
    now_ms = int(timezone.now().timestamp() * 1000)
    result = poll_source(source, now_ms=now_ms, poller_id=poller_id, enqueue=_enqueue_app)
    return {
        "source": result.label,
        "listed": result.listed,
        "enqueued": result.enqueued,
        "checkpoint_advanced": result.checkpoint_advanced,
        "error": result.error,
    }


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,  # a worker killed mid-analysis gives the message back at once
    autoretry_for=(OperationalError,),  # the database down while recording the outcome: the claim is still ours
    retry_backoff=True,
    retry_jitter=True,
    max_retries=MAX_RETRIES,
)
def analyze_app_task(self: Task, claim_id: int) -> dict[str, Any]:
    """Fetches, analyzes and stores the app of claim ``claim_id``, unless it is done or another worker has it."""
    # The task id survives redelivery and retries, so a later run of this message may take its own claim back.
    outcome = analyze_claim(
        claim_id,
        poller_id=f"task:{self.request.id}",
        suite=heuristics.configured_suite(settings.HINDSIGHT_HEURISTICS_FILE, settings.HINDSIGHT_SEVERITY_PROFILE),
    )
    return {
        "claim": claim_id,
        "app": outcome.key,
        "stored_id": outcome.analyzed.stored_id if outcome.analyzed else None,
        "failed": outcome.failed,
        "to_retry": outcome.to_retry,
        "busy": outcome.busy,
        "not_found": outcome.not_found,
        "error": outcome.error,
    }


@shared_task
def train_attribution_task() -> dict[str, Any]:
    """Trains and stores a slowdown-attribution model (beat: daily by default); too little history is no error."""
    from analyzer.attribution.services import TooFewRuns, attribution_train

    try:
        trained = attribution_train()
    except TooFewRuns as error:
        log.info("attribution model not trained: %s", error)
        return {"version": None, "reason": str(error)}
    v = trained.version
    return {"version": v.pk, "mare": v.mare, "runs": v.n_runs, "templates": v.n_templates, "serving": trained.serving}


@shared_task
def localize_stages_task() -> dict[str, Any]:
    """Stage anomaly localization of every template with new runs (beat: hourly by default), a bounded number."""
    from analyzer.stages.services import localize_due

    stored = localize_due()
    pairs = [[s.template, s.cluster_id] for s in stored]
    return {"localized": pairs, "with_anomalous_stages": sum(s.n_anomalous > 0 for s in stored)}


@shared_task
def rank_hosts_task() -> dict[str, Any]:
    """Stores a straggler-host snapshot of every cluster and window (beat: hourly by default); no tasks is no error."""
    from analyzer.hosts.services import rank_hosts_snapshots

    outcomes = rank_hosts_snapshots()
    return {
        "snapshots": [
            {
                "cluster": o.cluster,
                "window": o.window,
                "snapshot": o.snapshot.pk if o.snapshot else None,
                "stragglers": o.snapshot.n_stragglers if o.snapshot else None,
                "reason": o.reason,
            }
            for o in outcomes
        ]
    }
