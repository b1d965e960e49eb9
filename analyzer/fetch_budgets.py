"""The settings' resource budgets for event logs and job histories, job confs and History Server zips, applied to
the fetchers once at start-up.

The fetchers are Django-free and hold their own defaults (``fetchers.budgets.ReadBudgets``,
``fetchers.hadoop_conf.ConfBudget``, the class attributes of ``fetchers.spark_history.SparkHistoryBackend``); a
setting left unset (None) keeps the fetcher's default. The conf and zip fetchers are imported only when one of their
settings is set (start-up time of ``analyze``); ``fetchers.budgets``, a small module every reader imports anyway,
always is.
"""

from __future__ import annotations

import dataclasses
from typing import Any

_CONF: dict[str, str] = {
    "max_file_bytes": "HINDSIGHT_CONF_MAX_FILE_BYTES",
    "max_value_chars": "HINDSIGHT_CONF_MAX_VALUE_CHARS",
    "max_total_chars": "HINDSIGHT_CONF_MAX_EXPANSION_CHARS",
}
_HISTORY_SERVER: dict[str, str] = {
    "zip_max_ratio": "HINDSIGHT_HS_ZIP_MAX_RATIO",
    "zip_min_bytes": "HINDSIGHT_HS_ZIP_MIN_BYTES",
    "max_log_bytes": "HINDSIGHT_HS_MAX_LOG_BYTES",
}


def _given(settings: Any, names: dict[str, str]) -> dict[str, Any]:
    return {field: value for field, name in names.items() if (value := getattr(settings, name, None)) is not None}


def apply_fetch_budgets(settings: Any) -> None:
    """Replace the fetchers' defaults by the budgets ``settings`` sets (a bad read budget: ValueError naming it)."""
    from fetchers import budgets  # a small module: the readers of every input import it anyway

    read = _given(settings, dict(budgets.SETTINGS))
    if read:
        budgets.set_default_budgets(dataclasses.replace(budgets.default_budgets(), **read))
    conf = _given(settings, _CONF)
    if conf:
        from fetchers import hadoop_conf

        hadoop_conf.set_default_budget(dataclasses.replace(hadoop_conf.default_budget(), **conf))
    history_server = _given(settings, _HISTORY_SERVER)
    if history_server:
        from fetchers.spark_history import SparkHistoryBackend

        for field, value in history_server.items():
            setattr(SparkHistoryBackend, field, value)
