"""The Sources page's read model: every cluster with each source's polling state (checkpoint, apps behind, apps
given up on and their errors) and its parameters, secrets masked. How they read (the state in a word, a
parameter as text) is decided in ``webui.presenters.sources``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from django.db.models import Count, F, Min, Q, Window
from django.db.models.functions import RowNumber

from analyzer.models import AppClaim, ClaimState, Cluster, Source
from appmodel.redaction import MASK, mask_secrets

PENDING_STATES: Final = (ClaimState.RETRY, ClaimState.CLAIMED)


def _masked(text: str, secrets: Any) -> str:
    """``text`` with the source's secret values and any ``user:pass@`` of a URL replaced by the mask."""
    return mask_secrets(text, secrets.values() if isinstance(secrets, dict) else ())


def mask_source_secrets(text: str, source: Source) -> str:
    """``text`` (a parameter as written for a page) with ``source``'s secret values and any ``user:pass@`` of a URL
    replaced by the mask: what may be shown of a text that could hold them."""
    return _masked(text, source.secrets)


@dataclass(frozen=True, slots=True)
class SourceParam:
    """One parameter of a source, as ``source_describe`` lists it: a secret's value is never here, only that it is
    one (its ``value`` is the mask)."""

    name: str
    value: Any  # the stored JSON value; the mask for a secret
    secret: bool


def source_params(source: Source) -> list[SourceParam]:
    """A source's parameters by name, its secrets included by name only (as ``source_describe`` does). Their text
    is the page's (``webui.presenters.sources``), masked again by :func:`mask_source_secrets`."""
    params = source.params if isinstance(source.params, dict) else {}
    secrets = source.secrets if isinstance(source.secrets, dict) else {}
    return [
        SourceParam(str(name), value, name in secrets)
        for name, value in sorted({**params, **dict.fromkeys(secrets, MASK)}.items())
    ]


@dataclass(frozen=True, slots=True)
class FailedApp:
    """An app a source gave up fetching, with its error (secrets masked)."""

    claim_id: int
    app_id: str
    attempt_id: str
    finished_at: datetime | None
    tries: int
    error: str


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """A source's polling state as facts (whether it is enabled, its last poll and last success are ``source``'s own
    fields); the word that sums them up ("ok", "error", ...) is the presenter's (``webui.presenters.sources``)."""

    source: Source
    backend_label: str
    params: list[SourceParam]  # secrets by name only
    checkpoint: datetime | None
    checkpoint_lag_s: float | None
    behind: int  # apps listed and not analyzed yet (waiting or being analyzed)
    oldest_behind: datetime | None  # the listed end time of the oldest of them
    failed: int  # apps given up on
    last_error: str  # secrets masked
    recent_failures: list[FailedApp]


@dataclass(frozen=True, slots=True)
class ClusterSources:
    name: str
    cluster_id: int
    sources: list[SourceStatus]


def _epoch_ms_time(ms: int | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def sources_overview(*, now: datetime, failures_per_source: int = 5) -> list[ClusterSources]:
    """Every cluster with the polling state of each of its sources, in four queries whatever the number of apps.

    Claim counts come from one grouped query over the claims not done (the state index serves it); the latest
    failures from one ranked query.
    """
    clusters = list(Cluster.objects.order_by("name").prefetch_related("sources"))
    counts = (
        AppClaim.objects.filter(state__in=[*PENDING_STATES, ClaimState.FAILED])
        .order_by()
        .values("source_id")
        .annotate(
            behind=Count("id", filter=Q(state__in=PENDING_STATES)),
            oldest_ms=Min("finished_ms", filter=Q(state__in=PENDING_STATES)),
            failed=Count("id", filter=Q(state=ClaimState.FAILED)),
        )
    )
    by_source: dict[int | None, dict[str, Any]] = {row["source_id"]: dict(row) for row in counts}
    failures: dict[int, list[AppClaim]] = {}
    if failures_per_source > 0:
        ranked = (
            AppClaim.objects.filter(state=ClaimState.FAILED, source__isnull=False)
            .annotate(
                rank=Window(
                    RowNumber(),
                    partition_by=F("source_id"),
                    order_by=[F("finished_at").desc(nulls_last=True), F("id").desc()],
                )
            )
            .filter(rank__lte=failures_per_source)
            .only("app_id", "attempt_id", "source_id", "finished_at", "tries", "last_error")
            .order_by("source_id", "rank")
        )
        for claim in ranked:
            failures.setdefault(claim.source_id or 0, []).append(claim)
    overview: list[ClusterSources] = []
    for cluster in clusters:
        statuses: list[SourceStatus] = []
        for source in sorted(cluster.sources.all(), key=lambda s: (s.backend, s.pk)):
            row: dict[str, Any] = by_source.get(source.pk, {})
            checkpoint = _epoch_ms_time(source.checkpoint_ms)
            statuses.append(
                SourceStatus(
                    source=source,
                    backend_label=source.get_backend_display(),
                    params=source_params(source),
                    checkpoint=checkpoint,
                    checkpoint_lag_s=max(0.0, (now - checkpoint).total_seconds()) if checkpoint else None,
                    behind=row.get("behind", 0),
                    oldest_behind=_epoch_ms_time(row.get("oldest_ms")),
                    failed=row.get("failed", 0),
                    last_error=_masked(source.last_error, source.secrets),
                    recent_failures=[
                        FailedApp(
                            claim_id=claim.pk,
                            app_id=claim.app_id,
                            attempt_id=claim.attempt_id,
                            finished_at=claim.finished_at,
                            tries=claim.tries,
                            error=_masked(claim.last_error, source.secrets),
                        )
                        for claim in failures.get(source.pk, [])
                    ],
                )
            )
        overview.append(ClusterSources(name=cluster.name, cluster_id=cluster.pk, sources=statuses))
    return overview
