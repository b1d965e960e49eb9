"""The real job histories under ../shared/refdata the jhist tests read, and reading one job from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from appmodel.mapreduce import MapReduceApp
from fetchers.jhist import read_jobs

REFDATA = Path(__file__).resolve().parents[3] / "shared" / "refdata"
JHIST = REFDATA / "hadoop" / "jhist"
HISTORY = JHIST / "dr-elephant" / "history"
HS = JHIST / "hadoop-hs-test-resources"
ALL_JHIST = sorted(JHIST.rglob("*.jhist")) if JHIST.is_dir() else []
needs_refdata = pytest.mark.skipif(not JHIST.is_dir(), reason=f"reference data not found at {JHIST}")
SLEEP = HS / "job_1329348432655_0001-1329348443227-user-Sleep+job-1329348468601-10-1-SUCCEEDED-default.jhist"
TERAGEN = (
    HS / "job_1416424547277_0002-1416424775281-root-TeraGen-1416424785433-2-0-SUCCEEDED-default-1416424779349.jhist"
)
PI_0001 = next(HISTORY.rglob("job_1526555215992_0001-*.jhist"), Path("missing")) if JHIST.is_dir() else Path("missing")


def read_one_job(path: Path, patterns: tuple[str, ...] = ()) -> MapReduceApp:
    """The one job under ``path``, read without error."""
    outcomes = list(read_jobs(path, patterns))
    assert len(outcomes) == 1, outcomes
    assert outcomes[0].error is None, outcomes[0].error
    assert outcomes[0].app is not None
    return outcomes[0].app
