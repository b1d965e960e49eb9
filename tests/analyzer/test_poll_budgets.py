"""Polling under the read budgets (fetchers.budgets, issue 15 item 4): a log over its wall-clock budget fails its
claim at once with the budget's reason; retrying it would only take as long again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from factories import copy_log

from analyzer.ingestion.polling import poll_once
from analyzer.ingestion.sources import cluster_add
from analyzer.models import AppClaim, ClaimState

pytestmark = pytest.mark.django_db

PLAIN = "local-1795326055348"
NOW_MS = 1_900_000_000_000
MINUTE_MS = 60_000


def test_a_log_over_its_time_budget_fails_its_claim_at_once_with_the_reason(
    refdata: Path, tmp_path: Path, read_budgets: Callable[..., None]
) -> None:
    directory = tmp_path / "spark-events"
    directory.mkdir()
    copy_log(refdata, PLAIN, directory, NOW_MS - 30 * MINUTE_MS)
    cluster_add("prod", eventlog_dirs=[str(directory)])
    read_budgets(time_s=0.000000001)

    assert poll_once(now_ms=NOW_MS) == []

    claim = AppClaim.objects.get(app_id=PLAIN)
    assert (claim.state, claim.tries) == (ClaimState.FAILED, 1)
    assert "HINDSIGHT_INPUT_TIME_BUDGET_S" in claim.last_error
    assert claim.next_try_at is None
