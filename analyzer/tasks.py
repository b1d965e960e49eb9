"""Celery tasks: thin. Each loads what it needs by id and calls ``analyzer.polling``; retries live here only.

Beat runs ``poll_due_sources`` every few seconds; it enqueues one ``poll_source_task`` per source whose interval
has passed. One task per source pass, not per app: ``poll_source`` already claims each app of the window by a
conditional update (exactly once per cluster), keeps per-app fetch retries in ``AppClaim`` and only moves the
checkpoint when every app of the window is recorded, so per-app tasks would add a second retry policy and a
second place to track the window without making any app analyzed more than once less likely. Two passes of one
source running at once (beat firing while a slow pass runs) are harmless for the same reason: the second finds
the apps claimed and leaves the checkpoint alone.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Task, shared_task
from django.db import OperationalError
from django.utils import timezone

from analyzer.models import Source
from analyzer.polling import poll_source, sources_due

log = logging.getLogger(__name__)

MAX_RETRIES = 5


@shared_task
def poll_due_sources() -> list[int]:
    """Enqueues one pass of every enabled source that is due; the ids enqueued."""
    due = [source.pk for source in sources_due(timezone.now())]
    for source_id in due:
        poll_source_task.delay(source_id)
    return due


@shared_task(
    bind=True,
    autoretry_for=(OperationalError,),  # the database restarting or failing over: try the pass again later
    retry_backoff=True,
    retry_jitter=True,
    max_retries=MAX_RETRIES,
)
def poll_source_task(self: Task, source_id: int) -> dict[str, Any] | None:
    """One pass over the source ``source_id``; a summary of what it did, or None when it is gone or disabled."""
    source = Source.objects.select_related("cluster").filter(pk=source_id, enabled=True).first()
    if source is None:
        log.info("source %s is gone or disabled: not polled", source_id)
        return None
    poller_id = f"{self.request.hostname or 'celery'}:{os.getpid()}"
    result = poll_source(source, now_ms=int(timezone.now().timestamp() * 1000), poller_id=poller_id)
    return {
        "source": result.label,
        "analyzed": [done.stored_id for done in result.analyzed],
        "failed": result.failed,
        "to_retry": result.to_retry,
        "busy": result.busy,
        "error": result.error,
    }
