"""The settings' budgets for job confs and History Server zips reach the fetchers (analyzer.fetch_budgets)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from analyzer.fetch_budgets import apply_fetch_budgets
from fetchers import hadoop_conf
from fetchers.spark_history import SparkHistoryBackend


@pytest.fixture
def restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetchers' defaults as they were, after the test."""
    monkeypatch.setattr(hadoop_conf, "_default_budget", hadoop_conf.default_budget())
    for name in ("zip_max_ratio", "zip_min_bytes", "max_log_bytes"):
        monkeypatch.setattr(SparkHistoryBackend, name, getattr(SparkHistoryBackend, name))


@pytest.mark.usefixtures("restored")
def test_budgets_set_in_the_settings_replace_the_fetchers_defaults_and_unset_ones_keep_them() -> None:
    settings = SimpleNamespace(
        HINDSIGHT_CONF_MAX_VALUE_CHARS=100,
        HINDSIGHT_CONF_MAX_FILE_BYTES=None,
        HINDSIGHT_HS_ZIP_MAX_RATIO=20.0,
        HINDSIGHT_HS_MAX_LOG_BYTES=None,
    )

    apply_fetch_budgets(settings)

    assert hadoop_conf.default_budget() == hadoop_conf.ConfBudget(max_value_chars=100)
    conf = hadoop_conf.resolve_and_redact([("a", "x" * 60), ("b", "${a}${a}")], name="c.xml")
    assert conf.properties["b"] == "${a}${a}"
    assert SparkHistoryBackend.zip_max_ratio == 20.0
    assert SparkHistoryBackend.max_log_bytes == 64 * 2**30


@pytest.mark.usefixtures("restored")
def test_no_budget_setting_changes_nothing() -> None:
    before = hadoop_conf.default_budget()

    apply_fetch_budgets(SimpleNamespace())

    assert hadoop_conf.default_budget() is before
    assert SparkHistoryBackend.zip_max_ratio == 100.0
