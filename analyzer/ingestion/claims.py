"""Operator actions on recorded apps (``AppClaim``), with no fetching: usable from the admin, the API and the CLI."""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.models import AppClaim, ClaimState


def claims_retry(claim_ids: Iterable[int]) -> int:
    """Makes failed (or waiting) apps due again with a fresh budget; the number reset. Done ones stay done.

    The next poll pass (``poll``) or beat sweep (Celery) takes them: nothing here needs the broker.
    """
    return AppClaim.objects.filter(pk__in=list(claim_ids), state__in=[ClaimState.FAILED, ClaimState.RETRY]).update(
        state=ClaimState.RETRY, tries=0, next_try_at=None
    )


def cluster_failed_claims(cluster_name: str, app_ids: Iterable[str] = ()) -> list[int]:
    """The ids of the cluster's apps that failed to fetch (only those of ``app_ids`` when given)."""
    claims = AppClaim.objects.filter(cluster__name=cluster_name, state=ClaimState.FAILED)
    wanted = [app_id[:255] for app_id in app_ids]
    if wanted:
        claims = claims.filter(app_id__in=wanted)
    return list(claims.values_list("pk", flat=True))
