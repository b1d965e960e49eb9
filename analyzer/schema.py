"""What the per-app analysis stores in JSON columns, typed: an app's metrics, parse statistics and warnings, a
finding's observed values, an executor's peak metrics, and a stage's task-duration histogram and task times per host.

Where a stored result's schema lives (one rule for every analysis): beside the storage that writes it, because
that storage decides what is stored. The research analyses store their library's result *plus* what their service
adds, so their schemas are in ``analyzer/<analysis>/schema.py`` beside ``analyzer/<analysis>/services.py``. The
per-app report is stored by ``analyzer/services.py`` exactly as the pure analysis produced it, nothing added, so
its schemas are here, beside that module. The pure analysis keeps its plain dicts and dataclasses
(``analysis.summaries``, ``analysis.pipeline``, ``analysis.metrics``): it neither knows nor imports what the
database keeps.

* ``AnalyzedApp.metrics``: :data:`SparkMetrics` or :data:`MapReduceMetrics` (``AppMetrics.to_dict()`` of
  ``analysis.metrics``, ``MapReduceMetrics.to_dict()`` of ``analysis.metrics_mapreduce``), or :class:`NoMetrics`
  (``{}``: computing them failed, and a warning on the app says why). Both Structs are *derived* from the
  dataclasses (:func:`stored_metrics_struct`), so a metric added there is in the schema, with its definition as
  its description, and a field of a type with no stored form fails at import;
* ``AnalyzedApp.failure``: :class:`Failure` (``analysis.failure.Failure.to_dict()``), or null when nothing failed;
  its ``stack`` is capped at 64 KiB (``analysis.failure.STACK_LIMIT_BYTES``, a cut stack ends with a line saying
  so);
* ``AnalyzedApp.headline``: :data:`Headline` (``HeadlineItem.to_dict()`` of ``analysis.impact.headline``, ``[]``
  when nothing is worth changing and in rows stored before it existed); ``AnalyzedApp.what_if``: :class:`WhatIf`
  (``analysis.impact.whatif.WhatIf.to_dict()``), or null when the replay could not run;
  ``HeuristicResult.changes``: :data:`Changes` (``heuristics.Change.to_dict()`` each). A finding's impact is three
  columns, not JSON (``impact_wall_ms``, ``impact_share``, ``impact_gb_hours``), so lists can sort and sum them;
  :class:`Impact` describes them as the API serves them;
* ``AnalyzedApp.parse_stats``: :class:`ParseStats` (``appmodel.spark.ParseStats`` as ``analysis.pipeline.analyze``
  makes it JSON); ``AnalyzedApp.warnings``: :data:`Warnings`;
* ``HeuristicResult.observed``: :data:`Observed`, a flat mapping of names to numbers, strings, booleans or null
  (``analysis.pipeline`` enforces the rule on every heuristic's result, custom ones included: see
  ``analysis.pipeline.observed_values``);
* ``ExecutorSummary.peak_metrics``: :data:`PeakMetrics` (the largest value of each Spark executor metric);
* ``StageSummary.task_duration_histogram``: :class:`TaskDurationHistogram`
  (``analysis.summaries.duration_histogram`` of a stage attempt's successful tasks);
* ``StageSummary.host_task_times``: :class:`HostTaskTimes` (``analysis.summaries.host_task_times``).

Not typed: ``HeuristicResult.thresholds``, each heuristic's own configuration as it applied it (its ``Config``
Struct as plain values: four threshold levels, sizes, flags, lists), custom heuristics' included. Its shape is the
heuristic's, not the report's, so no schema here could describe it; the pages ask ``heuristics.severity
.is_four_levels`` of each value, and show the rest as text.

Written through ``analyzer.stored_results.validated`` by ``analyzer.services.report_store`` (a shape error fails
the store, as any store error does, so a pipeline change that breaks a shape fails the tests that store apps;
untrusted input never reaches the check unconverted: the fetchers and the pipeline make every value one of these
types first). Decoded with ``analyzer.stored_results.decode`` where a reader needs the typed value:
``webui.presenters.charts`` (the flagged stages' histograms), ``analyzer.stages.services`` (task times per host)
and the API's stage rows (``webui.api.serializers``, whose OpenAPI fields are generated from these Structs, as are
the app detail's metrics, warnings, observed values and peak metrics, served as stored). The report page reads the
metrics as stored (``analyzer.selectors.report.metric_values``: a key of an older or newer version is shown too),
and ``analyzer.attribution.selectors`` reads metric keys in SQL, each checked against the Structs
(:func:`metric_keys`).

Which fields have a default: every field of the histogram, host times and parse stats. A stage with no successful
task (or none with a known host) stores ``{}``, as do the rows stored before a column existed (the columns'
default), so ``{}`` is a legitimate stored value and reads as the empty histogram or no host information;
``ParseStats``' fields all default in the app model and ``unknown_keys`` was added after the first apps were
stored. A metric is required, because every stored row has it, except the two Spark metrics added after the first
apps were stored (:data:`METRICS_ADDED_LATER`), which are absent (``UNSET``) from older rows.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Collection, Mapping
from typing import Annotated, Any, Final, Literal

import msgspec

from analysis import metrics as spark_metrics
from analysis import metrics_mapreduce as mapreduce_metrics
from analysis.pipeline import ObservedValue


class TaskDurationHistogram(msgspec.Struct, frozen=True):
    """Successful task durations in log-spaced bins: ``counts[i]`` tasks took ``edges_ms[i]`` to
    ``edges_ms[i + 1]`` ms (each bin includes its lower edge, the last its upper edge too, so the counts add up to
    the successful tasks). All durations equal: one bin whose two edges are that duration. Empty (``{}``) when no
    task succeeded."""

    edges_ms: Annotated[
        list[float], msgspec.Meta(description="len(counts) + 1 edges: the shortest duration first, the longest last.")
    ] = []
    counts: list[int] = []


HostTime = Annotated[
    tuple[str, int, int],
    msgspec.Meta(description="[host, tasks, task_ms]: one host's successful tasks and their summed time in ms."),
]


class HostTaskTimes(msgspec.Struct, frozen=True):
    """Where a stage attempt's successful tasks with a known host ran and how long they took: totals over every
    host, and ``hosts`` for at most 16 hosts, those with the highest mean task time, slowest first. Empty (``{}``)
    when no task had a host."""

    n_hosts: int = 0  # every host that ran a successful task, listed or not
    n_tasks: int = 0
    task_ms: int = 0
    hosts: list[HostTime] = []


class ParseStats(msgspec.Struct, frozen=True):
    """What the event-log or job-history reader saw and skipped (``appmodel.spark.ParseStats``): nothing is
    silently dropped."""

    lines: int = 0
    events: int = 0
    bytes_read: int = 0  # uncompressed bytes
    malformed_lines: int = 0
    unknown_events: dict[str, int] = {}  # event name -> count
    skipped_events: int = 0  # known events ignored on purpose (e.g. BlockUpdated)
    unknown_keys: dict[str, int] = {}  # "<Event>[.<Object>...].<Key>" -> lines seen with it (TaskEnd: sampled)


EMPTY_HOST_TASK_TIMES = HostTaskTimes()

# One stored value per stage row, validated in one conversion when a report is stored.
STAGE_HISTOGRAMS = list[TaskDurationHistogram]
STAGE_HOST_TASK_TIMES = list[HostTaskTimes]


# ---- metrics -------------------------------------------------------------------------------------------------

# The stored JSON form of each type a metrics dataclass field may have. A float is stored by appmodel.jsonsafe:
# NaN as null (so even a float that is never None may be stored as null), an infinity as the string "inf" or
# "-inf" (a metric the analysis could not bound is a finding, not a missing value); nothing else changes.
_INFINITY = Literal["inf", "-inf"]
_STORED_FORMS: Final[dict[Any, Any]] = {
    int: int,
    int | None: int | None,
    float: float | _INFINITY | None,
    float | None: float | _INFINITY | None,
    str: str,
    str | None: str | None,
    bool: bool,
}


def stored_metrics_struct(
    source: type[Any],
    name: str,
    doc: str,
    *,
    choices: Mapping[str, Collection[str]],
    added_later: Collection[str] = (),
    not_stored: Collection[str] = ("notes",),
) -> type[msgspec.Struct]:
    """The Struct of what ``source.to_dict()`` stores: one field per dataclass field but ``not_stored``, in order,
    of that field's stored form, described by its definition and unit (the ``doc`` and ``unit`` metadata the help
    page shows).

    ``choices``: the values a text field takes (a ``Literal``, so the schema lists them). ``added_later``: fields
    older rows lack, absent (``UNSET``) rather than required. A field of a type with no stored form
    (``_STORED_FORMS``) raises TypeError: say how it is stored before storing it.
    """
    hints = typing.get_type_hints(source)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for field in dataclasses.fields(source):
        if field.name in not_stored:
            continue
        hint = hints[field.name]
        if hint not in _STORED_FORMS:
            raise TypeError(f"{source.__name__}.{field.name}: no stored form for {hint} (analyzer.schema)")
        kind: Any = _STORED_FORMS[hint]  # types built at run time: nothing for mypy to check
        if field.name in choices:
            if hint not in (str, str | None):
                raise TypeError(f"{source.__name__}.{field.name}: choices for a field that is not text")
            kind = Literal.__getitem__(tuple(choices[field.name]))
            if hint == str | None:
                kind = kind | None
        if field.name in added_later:
            kind = kind | msgspec.UnsetType
        unit = field.metadata.get("unit", "")
        meta = msgspec.Meta(description=field.metadata.get("doc", "") + (f" Unit: {unit}." if unit else ""))
        described = Annotated[kind, meta]
        fields.append((field.name, described, msgspec.UNSET) if field.name in added_later else (field.name, described))
    return msgspec.defstruct(name, fields, kw_only=True, frozen=True, module=__name__, namespace={"__doc__": doc})


# Spark metrics stored only from issue 7 on (commit 134a5c5): the apps analysed before lack them.
METRICS_ADDED_LATER: Final = frozenset(
    {
        "num_speculative_tasks",
        "shuffle_fetch_wait_ms",
        # issue 16: the attribution's separate failures, host and driver evidence
        "num_succeeded_tasks",
        "num_killed_tasks",
        "slow_host_task_share",
        "host_cpu_ratio_spread",
        "task_byte_skew",
        "duration_skew_excess",
        "driver_idle_ms",
    }
)

SparkMetrics = stored_metrics_struct(
    spark_metrics.AppMetrics,
    "SparkMetrics",
    """A Spark app's metrics (analysis.metrics.AppMetrics): null where the log does not tell (the app's warnings
    say why). A metric the analysis could not bound is stored as the string "inf". Apps analysed before a metric
    existed (num_speculative_tasks, shuffle_fetch_wait_ms; the seven added in issue 16) lack it.""",
    choices={
        "end_basis": [basis.value for basis in spark_metrics.EndBasis],
        "waste_basis": [basis.value for basis in spark_metrics.WasteBasis],
    },
    added_later=METRICS_ADDED_LATER,
)
MapReduceMetrics = stored_metrics_struct(
    mapreduce_metrics.MapReduceMetrics,
    "MapReduceMetrics",
    """A MapReduce job's metrics (analysis.metrics_mapreduce.MapReduceMetrics): null where the history does not
    tell (the app's warnings say why). A metric the analysis could not bound is stored as the string "inf".""",
    choices={
        "end_basis": [mapreduce_metrics.JOB_END, mapreduce_metrics.LAST_EVENT],
        "waste_basis": [mapreduce_metrics.PEAK_TASK_MEMORY],
    },
)


class NoMetrics(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """No metrics ({}): computing them failed, and a warning on the app says why."""


# What AnalyzedApp.metrics holds, by app_type: SPARK, MAPREDUCE, or {} for either. Documentation only (msgspec
# converts no union of several Structs without a tag, and the stored JSON has none): the API describes it as
# exactly one of the three, which it is, as each metrics Struct requires a field the other lacks and NoMetrics
# admits no field. The write check uses the app type's Struct (analyzer.services).
APP_METRICS = SparkMetrics | MapReduceMetrics | NoMetrics

METRIC_KEYS: Final = frozenset(
    field.encode_name for struct in (SparkMetrics, MapReduceMetrics) for field in msgspec.structs.fields(struct)
)


def metric_keys(*names: str) -> tuple[str, ...]:
    """``names``, once each is a stored metric (a field of :data:`SparkMetrics` or :data:`MapReduceMetrics`), for
    readers that name metric keys themselves, as SQL over the metrics JSON does: a renamed or misspelt key fails at
    import instead of reading as absent in every row."""
    unknown = [name for name in names if name not in METRIC_KEYS]
    if unknown:
        raise KeyError(f"not stored metrics (analyzer.schema): {', '.join(unknown)}")
    return names


# ---- findings, executors, warnings ---------------------------------------------------------------------------
# Plain types, without Annotated descriptions: the API describes them in its fields' help texts (a field's
# arguments are deep-copied, and msgspec.Meta does not copy).

# A finding's observed values by name: numbers, strings (an infinite ratio as "inf"), booleans, or null when not
# measured (the rule: analysis.pipeline.observed_values).
Observed = dict[str, ObservedValue]
FINDINGS_OBSERVED = list[Observed]  # one value per finding, validated in one conversion when a report is stored

# An executor's largest value of each executor metric Spark logged (JVMHeapMemory, TotalGCTime, ...), a 64-bit
# integer each (fetchers.spark_events.handlers counts any other value as a malformed line).
PeakMetrics = dict[str, int]
EXECUTOR_PEAK_METRICS = list[PeakMetrics]

# An app's warnings: what the analysis could not read or compute, one sentence each.
Warnings = list[str]


# ---- failure -------------------------------------------------------------------------------------------------


class FailedAttempt(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One attempt of the failing task: where it ran and how it ended (``analysis.failure.FailedAttempt``)."""

    attempt: Annotated[int, msgspec.Meta(description="The attempt number, 0 first.")]
    task_id: Annotated[int | None, msgspec.Meta(description="Spark's task id (TID); null for MapReduce.")]
    executor: Annotated[str | None, msgspec.Meta(description="The executor it ran on; null when unknown.")]
    host: Annotated[str | None, msgspec.Meta(description="The host it ran on; null when unknown.")]
    status: Annotated[str, msgspec.Meta(description="How the attempt ended: FAILED, KILLED, SUCCESS, ...")]
    exception_class: Annotated[
        str | None, msgspec.Meta(description="The attempt's exception class; null when its reason names none.")
    ]
    message: Annotated[str, msgspec.Meta(description="The attempt's exception message (at most 2,000 characters).")]


class FailedTask(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The failing task of the failing stage (``analysis.failure.FailedTask``): the task with the most failed
    attempts, the one that exhausted its retries."""

    index: Annotated[int, msgspec.Meta(description="The task's index (partition) in its stage, or in its phase.")]
    stage_attempt_id: Annotated[int | None, msgspec.Meta(description="The stage attempt; null for MapReduce.")]
    failed_attempts: Annotated[int, msgspec.Meta(description="How many attempts of this task failed.")]
    attempts: Annotated[
        list[FailedAttempt],
        msgspec.Meta(description="Its attempts, oldest first (at most 16); empty when the log does not list them."),
    ]


class Failure(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Why the app, or a job of it, failed (``analysis.failure``): the real exception (for a Python error the
    last ``SomeError: message`` of its traceback, not ``PythonException: Traceback``), where it happened, and the
    full stack."""

    exception_class: Annotated[
        str | None, msgspec.Meta(description="The exception's class, e.g. ValueError; null when no text names one.")
    ]
    message: Annotated[str, msgspec.Meta(description="The exception's message (at most 2,000 characters).")]
    stack: Annotated[
        str,
        msgspec.Meta(
            description="The failure's full text (the task's stack trace, else the stage's or job's reason), at "
            "most 64 KiB: a cut stack ends with a line saying how many bytes were left out."
        ),
    ]
    stage_id: Annotated[
        int | None, msgspec.Meta(description="The failing stage (MapReduce: 0 the maps, 1 the reduces); null if none.")
    ]
    job_id: Annotated[int | None, msgspec.Meta(description="The failing Spark job; null for MapReduce or if none.")]
    task: Annotated[FailedTask | None, msgspec.Meta(description="The failing task; null when no task failed.")]
    failed_jobs: Annotated[int, msgspec.Meta(description="How many jobs of the app failed (Spark).")] = 0
    failed_tasks: Annotated[
        int, msgspec.Meta(description="Failed task attempts in the failing stage attempt (or phase).")
    ] = 0


# ---- impact (issue 14, docs/IMPACT.md) -----------------------------------------------------------------------


class Change(msgspec.Struct, frozen=True):
    """One concrete change to make, with its value computed from this app (``heuristics.Change``)."""

    property: Annotated[
        str, msgspec.Meta(description="A configuration key (spark.sql.shuffle.partitions), or a short action name.")
    ]
    value: Annotated[str, msgspec.Meta(description="The value to set, as the user would type it.")]
    reason: Annotated[str, msgspec.Meta(description="Where the value comes from, one sentence.")]


# A finding's changes (HeuristicResult.changes); [] when it has none or nothing to fix.
Changes = list[Change]
FINDINGS_CHANGES = list[Changes]  # one value per finding, validated in one conversion when a report is stored


class Impact(msgspec.Struct, frozen=True):
    """What fixing a finding would save (``analysis.impact.Impact.to_dict()``)."""

    wall_ms: Annotated[
        int | None, msgspec.Meta(description="Wall-clock ms the run would save; 0 for a finding that costs memory.")
    ]
    share_of_runtime: Annotated[float | None, msgspec.Meta(description="wall_ms over the app's runtime (0..1).")]
    gb_hours: Annotated[
        float | None,
        msgspec.Meta(
            description="Executor memory held for that time, or wasted (idle executors, oversized memory), in "
            "GB-hours; null when the executors' memory is unknown."
        ),
    ]


class HeadlineItem(msgspec.Struct, frozen=True):
    """One of the findings that cost the most (``analysis.impact.headline.HeadlineItem.to_dict()``)."""

    code: Annotated[str, msgspec.Meta(description="The finding's heuristic code.")]
    severity: Annotated[
        Literal["NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL"], msgspec.Meta(description="Its final severity.")
    ]
    impact: Annotated[Impact | None, msgspec.Meta(description="Its cost; null when not estimated.")]
    summary: Annotated[str, msgspec.Meta(description="Its cost in one sentence (the analyze command prints it).")]
    changes: Annotated[list[Change], msgspec.Meta(description="What to change, with values from this app.")]


# AnalyzedApp.headline: at most three items, the costliest first; [] when nothing is worth changing.
Headline = list[HeadlineItem]


class WhatIf(msgspec.Struct, frozen=True):
    """The run replayed at other executor counts (``analysis.impact.whatif.WhatIf.to_dict()``, docs/IMPACT.md)."""

    own_executors: Annotated[int, msgspec.Meta(description="The most executors the run had alive at once.")]
    cores_per_executor: Annotated[int, msgspec.Meta(description="Task slots per executor.")]
    critical_path_ms: Annotated[
        int, msgspec.Meta(description="The runtime with unlimited executors: no count does better.")
    ]
    ideal_executors: Annotated[
        int, msgspec.Meta(description="The fewest executors within 10% of the best runtime the replay finds.")
    ]
    runtime_ms_at: Annotated[
        dict[str, int],
        msgspec.Meta(description='Estimated runtime (ms) by executor count (keys are counts as text: "8").'),
    ]
    replay_error: Annotated[
        float | None,
        msgspec.Meta(
            description="(replayed - actual) / actual runtime at the run's own count: how far the model alone was "
            "from the real run; null when the actual runtime is unknown."
        ),
    ]
