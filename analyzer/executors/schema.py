"""What an ``ExecutorAnomalyReport`` stores, typed: ``ranking``, ``features``, ``series`` and ``reference_apps``.

``ranking`` is ``analysis.executors.ExecutorRanking.to_dict()`` (or the service's own "none" ranking when the
analysis could not compute its input); ``features`` the rows of ``analysis.executors.analysis_input`` (one per
executor); ``series`` its task series sample (``analysis.executors.task_series``), ``{}`` when none was taken;
``reference_apps`` the pks of the runs whose executors served as the reference. Written through
``analyzer.stored_results.validated`` by ``analyzer.executors.services`` and decoded by
``analyzer.executors.selectors``; the API's component schemas are generated from these Structs.

Which fields have a default: those the library's result types default (``ExecutorRanking.warnings`` and
``params``), and those the library leaves out of an empty series (no executor ran a task: only the counts and an
empty ``executors`` list are stored). Every other field is in every row ever stored, so it is required: a row
without it is unreadable, not silently empty. NaN was stored as null: ``float | None`` where a value can be missing.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from analysis.executors import DEFAULT_EXPLAIN_Z, DEFAULT_MIN_EXECUTORS, DEFAULT_MIN_FEATURES, DEFAULT_REL_FLOOR

Model = Literal["peers", "reference", "none"]


class FeatureScore(msgspec.Struct, frozen=True):
    """One feature of a ranked executor against the model (values per task for time and data features)."""

    feature: str
    value: float
    mean: float
    std: float  # after the variance floor
    z: float
    log_likelihood: float  # -h**2/2, h the harmful part of z: unit-free, 0 at the mean and for a better value
    direction: Literal["high", "low", "typical"]
    harmful: bool = False  # the deviation is the costly way (rankings stored before issue 16 lack it)


class ExecutorScore(msgspec.Struct, frozen=True):
    """A ranked executor: its mean and worst feature log-likelihood, its features most anomalous first."""

    executor_id: str
    host: str
    score: float  # mean log-likelihood over the usable features; lower = more anomalous
    worst: float
    n_features: int
    features: list[FeatureScore]


class LeftOutExecutor(msgspec.Struct, frozen=True):
    """An executor the ranking left out, and why (too few usable features, too few executors)."""

    executor_id: str
    reason: str


class RankingParams(msgspec.Struct, frozen=True):
    """The ranking's parameters (``rank_executors``' defaults). ``{}`` in a report that ranked nothing because the
    analysis could not compute its input; it reads as the defaults, which nothing then uses."""

    min_executors: int = DEFAULT_MIN_EXECUTORS
    min_features: int = DEFAULT_MIN_FEATURES
    rel_floor: float = DEFAULT_REL_FLOOR
    per_task: int = 1  # 1: time and data features divided by the executor's tasks
    explain_z: float = DEFAULT_EXPLAIN_Z


class ExecutorRanking(msgspec.Struct, frozen=True):
    """``ExecutorRanking.to_dict()``: executors most anomalous first, those left out, the features used."""

    model: Model  # peers, the template's reference runs, or none (nothing ranked)
    executors: list[ExecutorScore]
    left_out: list[LeftOutExecutor]
    features_used: list[str]
    constant_features: list[str]
    warnings: list[str] = []
    params: RankingParams = RankingParams()


class ExecutorFeatureRow(msgspec.Struct, frozen=True):
    """One executor's features (``analysis.executors.FEATURES``) as the ranking read them; null: not measured.

    Totals over the executor's tasks (the ranking divides them per task), ``peak_*`` maxima, bytes and ms.
    """

    executor_id: str
    host: str
    tasks: float | None
    failed_tasks: float | None
    task_time_ms: float | None
    run_time_ms: float | None
    cpu_time_ms: float | None
    gc_time_ms: float | None
    deserialize_ms: float | None
    input_bytes: float | None
    shuffle_read_bytes: float | None
    shuffle_write_bytes: float | None
    fetch_wait_ms: float | None
    memory_spilled_bytes: float | None
    disk_spilled_bytes: float | None
    peak_execution_memory: float | None
    jvm_heap_peak_bytes: float | None


class TaskSeries(msgspec.Struct, frozen=True):
    """A seeded, executor-stratified sample of the app's task ends, in columns (one entry per sampled task).

    ``executor`` indexes ``executors``; ``launch_ms`` and ``finish_ms`` are ms since ``origin_ms`` (the app's
    start); ``features`` maps a feature name to each task's whole-number value, and a feature that is 0 for every
    sampled task is named in ``zero_features`` instead. When no executor ran a task only the counts are stored.
    """

    n_tasks: int  # every task end but RESUBMITTED on an executor
    n_sampled: int
    max_tasks: int
    seed: int
    executors: list[str]
    origin_ms: int | None = None
    executor: list[int] = []
    launch_ms: list[int] = []
    finish_ms: list[int] = []
    stage: list[int] = []
    failed: list[int] = []  # 1: the task failed
    features: dict[str, list[int]] = {}
    zero_features: list[str] = []


FEATURE_ROWS = list[ExecutorFeatureRow]
REFERENCE_APPS = list[int]
