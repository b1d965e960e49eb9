"""Shared fixtures for all tests."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def refdata() -> Path:
    """The read-only reference data (real Spark event logs, REST goldens): the repo's sibling ``../shared/refdata``."""
    path = Path(__file__).resolve().parents[2] / "shared" / "refdata"
    if not path.is_dir():
        pytest.skip(f"reference data not found at {path}")
    return path
