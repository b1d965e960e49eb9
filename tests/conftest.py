"""Shared fixtures for all tests, and the skip of the ``postgres``-marked tests on another database."""

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skips the tests marked ``postgres`` when the test database is not PostgreSQL (the embedded SQLite).

    They use PostgreSQL's own SQL (COPY, pg_terminate_backend, pg_indexes) or share the test database with a
    second process, which an in-memory SQLite test database cannot; on SQLite they would fail or wait out a timeout.
    ``pytest.mark.postgres("why")`` may say why; the skip reason shows it.
    """
    engine = settings.DATABASES["default"]["ENGINE"]
    if engine == "django.db.backends.postgresql":
        return
    for item in items:
        marker = item.get_closest_marker("postgres")
        if marker is not None:
            why = f" ({marker.args[0]})" if marker.args else ""
            item.add_marker(pytest.mark.skip(reason=f"needs PostgreSQL{why}; the test database is {engine}"))


@pytest.fixture(autouse=True)
def _forget_the_attribution_model() -> Iterator[None]:
    """Forgets the in-process attribution model after each test.

    The cache is keyed by the version's (id, created_at); tests train with a fixed ``now``, and SQLite hands the
    same id out again after a test's rollback, so a later test would be served an earlier test's model.
    """
    yield
    selectors = sys.modules.get("analyzer.attribution.selectors")  # only if a test loaded it: no import here
    if selectors is not None:
        selectors._cache.clear()


@pytest.fixture(scope="session")
def refdata() -> Path:
    """The read-only reference data (real Spark event logs, REST goldens): the repo's sibling ``../shared/refdata``."""
    path = Path(__file__).resolve().parents[2] / "shared" / "refdata"
    if not path.is_dir():
        pytest.skip(f"reference data not found at {path}")
    return path


@pytest.fixture
def read_budgets(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``read_budgets(max_lines=10)``: the read budgets (fetchers.budgets) every reader uses, for this test only."""

    def replace(**values: float) -> None:
        import dataclasses

        from fetchers import budgets

        monkeypatch.setattr(budgets, "_default_budgets", dataclasses.replace(budgets.default_budgets(), **values))

    return replace
