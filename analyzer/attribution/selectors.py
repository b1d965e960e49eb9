"""Read side of slowdown attribution (issue 6): the runs frame from stored apps, the serving model, one app's answer.

``analysis.attribution`` is a Django-free library over a pandas frame of runs; this module builds that frame from
the database and explains one stored app with the serving model. ``analyzer.attribution.services`` trains and
stores model versions (writes).

The frame: one row per ``AnalyzedApp`` with a template and a positive runtime; ``run_id`` is the app's pk,
``template`` its stored template key, ``runtime`` its runtime in seconds. Spark and MapReduce alike (a MapReduce
job's map and reduce phases are stored as stage rows). Every feature below is NaN (categorical: "") when the
stored data does not tell, which the model reads as "as usual for the template", so it is never blamed.

========================  ========================================================================================
feature                   from
========================  ========================================================================================
input_bytes               sum of the app's stage rows' ``input_bytes``
output_bytes              sum of ``output_bytes`` over stage rows
shuffle_read_bytes        sum of ``shuffle_read_bytes`` over stage rows
shuffle_write_bytes       sum of ``shuffle_write_bytes`` over stage rows
spill_bytes               sum of ``memory_bytes_spilled + disk_bytes_spilled`` over stage rows
num_tasks                 successful tasks: ``metrics.num_succeeded_tasks`` (Spark); MapReduce: ``metrics.num_tasks``
                          (declared tasks); older Spark rows: ``metrics.num_tasks`` (attempts) minus the stage rows'
                          failed and killed ones. Failed and killed attempts are the failures cause's, never data
                          volume's
num_stages                ``metrics.num_stages`` (Spark), else the number of stage rows (MapReduce: its phases)
job_type                  ``AnalyzedApp.job_type``
user                      ``AnalyzedApp.user``
num_executors             ``metrics.num_executors`` (Spark; MapReduce has containers per task: absent)
executor_cores            ``spark.executor.cores`` (Spark), ``mapreduce.map.cpu.vcores`` (MapReduce), else the
                          largest ``cores`` of a non-driver executor row
executor_memory_mb        ``metrics.executor_memory_bytes`` (Spark, heap + overhead), ``metrics.map_container_bytes``
                          (MapReduce), in MiB
driver_memory_mb          ``metrics.driver_memory_bytes`` (Spark), ``yarn.app.mapreduce.am.resource.mb`` (MapReduce)
task_input_skew           Spark: ``max_read_skew`` (max / median task read of the worst judged stage) observed by the
                          ``spark.task_skew`` heuristic, else (no stage judged: small data) ``metrics.task_byte_skew``
                          (the heaviest stage's, from issue 16 on); MapReduce: the larger ``data_deviation`` of the
                          mapper and reducer skew heuristics (another scale: the model only compares a run with its
                          template)
duration_skew_excess      ``metrics.duration_skew_excess`` (Spark, from issue 16 on: duration skew over byte skew of
                          the same tasks, in the heaviest stage); for older analyses (max / median successful task
                          duration, stored quantiles, of the stage with the most task time) / max(1,
                          task_input_skew), absent when the input skew is; MapReduce: absent. Host evidence
failed_tasks              ``metrics.num_failed_attempts`` (MapReduce), else the stage rows' ``num_failed_tasks``
killed_tasks              ``metrics.num_killed_attempts`` (MapReduce), else the stage rows' ``num_killed_tasks``
speculative_tasks         ``metrics.num_speculative_tasks`` (Spark, analyses stored from issue 7 on); MapReduce:
                          absent (its killed attempts include speculative losers)
gc_time_share             stage rows' ``jvm_gc_time_ms`` / ``executor_run_time_ms`` (both summed)
fetch_wait_share          ``metrics.shuffle_fetch_wait_ms`` / the stage rows' ``executor_run_time_ms`` (Spark, analyses
                          stored from issue 7 on); MapReduce: absent
straggler_task_share      ``AnalyzedApp.straggler_task_share``: the share of the app's task time on hosts that the
                          first straggler ranking covering the app flagged (``analyzer.hosts.services``); absent until
                          a ranking covers the app, and for local-mode apps
slow_host_task_share      ``metrics.slow_host_task_share`` (Spark, analyses stored from issue 16 on): computed at
                          analysis time from the run's own tasks (``analysis.metrics``)
host_cpu_ratio_spread     ``metrics.host_cpu_ratio_spread`` (Spark, from issue 16 on)
driver_idle_s             ``metrics.driver_idle_ms`` / 1000 (Spark, from issue 16 on): no stage running after the
                          first one started
host_count                distinct non-empty ``host`` of the executor rows
queue_wait_s              ``metrics.first_task_delay_ms`` / 1000 (submission or app start to the first task)
concurrent_apps           other apps of the same cluster whose [start, end] overlaps the run's (apps analyzed from
                          files have no cluster: absent; apps running over 7 days are not counted); counted from one
                          query of the window's intervals
queue                     ``AnalyzedApp.queue``
executors_lost            executor rows removed for a reason other than the driver releasing them
framework_version         ``AnalyzedApp.spark_version``; MapReduce: absent
========================  ========================================================================================

Every source is read with one aggregated query per table over the whole selection (never one query per app), so
a 30-day window of ~100k runs is a handful of queries.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db.models import Count, F, Max, Min, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from analyzer import schema as app_schema
from analyzer.attribution import schema
from analyzer.models import AnalyzedApp, AppType, ExecutorSummary, HeuristicResult, StageSummary
from analyzer.stored_results import typed

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

    from analysis.attribution import AttributionModel
    from analyzer.models import AttributionModelVersion

log = logging.getLogger(__name__)

MIB = 1024**2

# metrics JSON keys and spark_properties / job configuration keys read with one JSON extraction each. The metric
# keys are checked against the stored metrics' Structs (analyzer.schema): SQL reads a misspelt key as absent.
_METRIC_KEYS = app_schema.metric_keys(
    "num_tasks",
    "num_stages",
    "num_executors",
    "executor_memory_bytes",
    "driver_memory_bytes",
    "map_container_bytes",
    "num_failed_attempts",
    "num_killed_attempts",
    "first_task_delay_ms",
    "num_speculative_tasks",
    "shuffle_fetch_wait_ms",
    "num_succeeded_tasks",
    "slow_host_task_share",
    "host_cpu_ratio_spread",
    "task_byte_skew",
    "duration_skew_excess",
    "driver_idle_ms",
)
_PROPERTY_KEYS = {
    "p_spark_cores": "spark.executor.cores",
    "p_mr_vcores": "mapreduce.map.cpu.vcores",
    "p_am_mb": "yarn.app.mapreduce.am.resource.mb",
}
LONGEST_APP = dt.timedelta(days=7)
# Spark's reason when dynamic allocation or the app's end releases an executor: not lost.
_RELEASED = "killed by driver"


def training_apps(*, days: int | None, now: dt.datetime | None = None) -> QuerySet[AnalyzedApp]:
    """Apps a model learns from: successful, complete runs of a template with a runtime, ended in the window.

    ``days`` None or 0: no window (every stored run). Failed and partial runs are explained, not learned: their
    runtime says when they stopped, not how long the job takes.
    """
    qs = AnalyzedApp.objects.filter(status="SUCCEEDED", partial=False, runtime_ms__gt=0).exclude(template="")
    if days:
        qs = qs.filter(end_time__gte=(now or timezone.now()) - dt.timedelta(days=days))
    return qs


def window_bounds(apps: QuerySet[AnalyzedApp]) -> tuple[str, str] | None:
    """(first end, last end) of the selection, ISO 8601, for the version's record; None when empty."""
    agg = apps.order_by().aggregate(first=Min("end_time"), last=Max("end_time"))
    if agg["last"] is None:
        return None
    return (agg["first"].isoformat(), agg["last"].isoformat())


def _num(series: pd.Series) -> pd.Series:
    import pandas as pd  # late: the report and API read this module without pandas

    return pd.to_numeric(series, errors="coerce").astype(np.float64)


def runs_frame(apps: QuerySet[AnalyzedApp]) -> pd.DataFrame:
    """The attribution frame of the apps selected (see the module docstring for the mapping)."""
    import pandas as pd  # late: the report and API read this module without pandas

    apps = apps.order_by()
    ids = apps.values("pk")
    base = list(
        apps.annotate(
            **{f"m_{k}": KeyTextTransform(k, "metrics") for k in _METRIC_KEYS},
            **{alias: KeyTextTransform(key, "spark_properties") for alias, key in _PROPERTY_KEYS.items()},
            heavy_q=Subquery(
                StageSummary.objects.filter(app=OuterRef("pk"))
                .order_by("-executor_run_time_ms", "stage_id")
                .values("task_duration_quantiles")[:1]
            ),
        ).values(
            "pk",
            "app_type",
            "template",
            "runtime_ms",
            "job_type",
            "user",
            "queue",
            "spark_version",
            "cluster_id",
            "start_time",
            "end_time",
            "heavy_q",
            "straggler_task_share",
            *[f"m_{k}" for k in _METRIC_KEYS],
            *_PROPERTY_KEYS,
        )
    )
    columns = ["template", "runtime", "run_id"]
    if not base:
        return pd.DataFrame(columns=columns)
    a = pd.DataFrame.from_records(base).set_index("pk", drop=False)
    stages = pd.DataFrame.from_records(
        list(
            StageSummary.objects.filter(app__in=ids)
            .order_by()
            .values("app_id")
            .annotate(
                n=Count("id"),
                input=Sum("input_bytes"),
                output=Sum("output_bytes"),
                sr=Sum("shuffle_read_bytes"),
                sw=Sum("shuffle_write_bytes"),
                spill=Sum(F("memory_bytes_spilled") + F("disk_bytes_spilled")),
                tasks=Sum("num_tasks"),
                failed=Sum("num_failed_tasks"),
                killed=Sum("num_killed_tasks"),
                gc=Sum("jvm_gc_time_ms"),
                run=Sum("executor_run_time_ms"),
            )
        ),
        columns=["app_id", "n", "input", "output", "sr", "sw", "spill", "tasks", "failed", "killed", "gc", "run"],
    ).set_index("app_id")
    execs = pd.DataFrame.from_records(
        list(
            ExecutorSummary.objects.filter(app__in=ids)
            .order_by()
            .values("app_id")
            .annotate(
                hosts=Count("host", distinct=True, filter=~Q(host="")),
                cores=Max("cores", filter=~Q(executor_id="driver")),
                lost=Count("id", filter=~Q(removed_reason="") & ~Q(removed_reason__icontains=_RELEASED)),
            )
        ),
        columns=["app_id", "hosts", "cores", "lost"],
    ).set_index("app_id")
    skew_rows = (
        HeuristicResult.objects.filter(
            app__in=ids, code__in=("spark.task_skew", "mapreduce.mapper_skew", "mapreduce.reducer_skew")
        )
        .order_by()
        .annotate(
            read=KeyTextTransform("max_read_skew", "observed"), dev=KeyTextTransform("data_deviation", "observed")
        )
        .values_list("app_id", "read", "dev")
    )
    skew = pd.DataFrame.from_records(list(skew_rows), columns=["app_id", "read", "dev"])
    skew["v"] = _num(skew["read"]).fillna(_num(skew["dev"]))
    input_skew = skew.groupby("app_id")["v"].max()

    def col(frame: pd.DataFrame, name: str) -> pd.Series:
        return _num(frame[name].reindex(a.index)) if name in frame.columns else pd.Series(np.nan, index=a.index)

    def metric(key: str) -> pd.Series:
        return _num(a[f"m_{key}"])

    is_mr = a["app_type"] == AppType.MAPREDUCE
    out = pd.DataFrame(index=a.index)
    out["template"] = a["template"].astype(str)
    out["runtime"] = _num(a["runtime_ms"]) / 1000.0
    out["run_id"] = a["pk"].astype(np.int64)
    out["input_bytes"] = col(stages, "input")
    out["output_bytes"] = col(stages, "output")
    out["shuffle_read_bytes"] = col(stages, "sr")
    out["shuffle_write_bytes"] = col(stages, "sw")
    out["spill_bytes"] = col(stages, "spill")
    failed = metric("num_failed_attempts").where(is_mr).fillna(col(stages, "failed"))
    killed = metric("num_killed_attempts").where(is_mr).fillna(col(stages, "killed"))
    attempts = metric("num_tasks").fillna(col(stages, "tasks"))
    # Spark rows stored before num_succeeded_tasks: attempts minus the failed and killed ones (MapReduce's
    # num_tasks already counts declared tasks, not attempts).
    older = (attempts - failed.fillna(0) - killed.fillna(0)).clip(lower=0)
    out["num_tasks"] = attempts.where(is_mr, metric("num_succeeded_tasks").fillna(older))
    out["num_stages"] = metric("num_stages").where(~is_mr).fillna(col(stages, "n"))
    out["job_type"] = a["job_type"].fillna("").astype(str)
    out["user"] = a["user"].fillna("").astype(str)
    out["num_executors"] = metric("num_executors").where(~is_mr)
    cores = _num(a["p_spark_cores"]).where(~is_mr, _num(a["p_mr_vcores"]))
    out["executor_cores"] = cores.fillna(col(execs, "cores").where(lambda s: s > 0))
    exec_mem = metric("executor_memory_bytes").where(~is_mr, metric("map_container_bytes"))
    out["executor_memory_mb"] = exec_mem / MIB
    out["driver_memory_mb"] = (metric("driver_memory_bytes") / MIB).where(~is_mr, _num(a["p_am_mb"]))
    # 0 is the heuristic's "no stage judged" (too few tasks or too little data): no measure, not "no skew".
    out["task_input_skew"] = (
        _num(input_skew.reindex(a.index)).where(lambda v: v > 0).fillna(metric("task_byte_skew").where(~is_mr))
    )
    duration_skew = pd.Series([_max_to_median(q) for q in a["heavy_q"]], index=a.index, dtype=np.float64)
    older_excess = duration_skew / out["task_input_skew"].clip(lower=1.0)
    out["duration_skew_excess"] = metric("duration_skew_excess").fillna(older_excess).where(~is_mr)
    out["failed_tasks"] = failed
    out["killed_tasks"] = killed
    out["speculative_tasks"] = metric("num_speculative_tasks").where(~is_mr)
    run = col(stages, "run")
    out["gc_time_share"] = (col(stages, "gc") / run.where(run > 0)).clip(0.0, 1.0)
    out["fetch_wait_share"] = (metric("shuffle_fetch_wait_ms").where(~is_mr) / run.where(run > 0)).clip(0.0, 1.0)
    out["straggler_task_share"] = _num(a["straggler_task_share"]).clip(0.0, 1.0)
    out["slow_host_task_share"] = metric("slow_host_task_share").where(~is_mr).clip(0.0, 1.0)
    out["host_cpu_ratio_spread"] = metric("host_cpu_ratio_spread").where(~is_mr).clip(0.0, 1.0)
    out["driver_idle_s"] = metric("driver_idle_ms").where(~is_mr).clip(lower=0) / 1000.0
    out["host_count"] = col(execs, "hosts").where(lambda s: s > 0)
    out["queue_wait_s"] = metric("first_task_delay_ms").clip(lower=0) / 1000.0
    out["concurrent_apps"] = _concurrent(a)
    out["queue"] = a["queue"].fillna("").astype(str)
    out["executors_lost"] = col(execs, "lost")
    out["framework_version"] = a["spark_version"].fillna("").astype(str).where(~is_mr, "")
    # Values the library rejects (negative, infinite) become absent rather than failing the whole frame.
    numeric = out.columns.difference(["template", "run_id", "job_type", "user", "queue", "framework_version"])
    vals = out[numeric].to_numpy(dtype=np.float64, na_value=np.nan)
    vals[~np.isfinite(vals) | (vals < 0)] = np.nan
    out[numeric] = vals
    return out.reset_index(drop=True)


def _max_to_median(quantiles: Any) -> float:
    if isinstance(quantiles, str):  # SQLite hands a JSON subquery back as text
        import json

        try:
            quantiles = json.loads(quantiles)
        except ValueError:
            return float("nan")
    if not isinstance(quantiles, list) or len(quantiles) != 5:
        return float("nan")
    try:
        median, top = float(quantiles[2]), float(quantiles[4])
    except (TypeError, ValueError):
        return float("nan")
    return top / median if median > 0 else float("nan")


def _concurrent(a: pd.DataFrame) -> pd.Series:
    """Other apps of the run's cluster overlapping it in time: one query of the intervals, then sorted searches.

    Apps overlapping [start, end] = apps started before ``end`` - apps ended at or before ``start`` (itself
    excluded), per cluster, so the count is two binary searches per run. Apps that started more than
    ``LONGEST_APP`` (7 days) before the earliest run are not read: so long an app is a service, not a neighbour.
    """
    import pandas as pd  # late: the report and API read this module without pandas

    result = pd.Series(np.nan, index=a.index)
    has = a["cluster_id"].notna() & a["start_time"].notna() & a["end_time"].notna()
    if not has.any():
        return result
    sel = a[has]
    intervals = pd.DataFrame.from_records(
        list(
            AnalyzedApp.objects.filter(
                cluster_id__in=sel["cluster_id"].unique().tolist(),
                start_time__lt=sel["end_time"].max(),
                # A lower bound on start keeps this an index range scan, not a scan of all older apps.
                start_time__gt=sel["start_time"].min() - LONGEST_APP,
                end_time__gt=sel["start_time"].min(),
            )
            .order_by()
            .values_list("cluster_id", "start_time", "end_time")
        ),
        columns=["cluster_id", "start", "end"],
    )
    for cluster, runs in sel.groupby("cluster_id"):
        iv = intervals[intervals["cluster_id"] == cluster]
        starts = np.sort(_epoch(iv["start"]))
        ends = np.sort(_epoch(iv["end"]))
        rs, re_ = _epoch(runs["start_time"]), _epoch(runs["end_time"])
        count = np.searchsorted(starts, re_, side="left") - np.searchsorted(ends, rs, side="right")
        self_overlaps = (rs < re_).astype(np.int64)  # the run counts itself when it has a positive length
        result[runs.index] = np.maximum(count - self_overlaps, 0).astype(np.float64)
    return result


def _epoch(values: pd.Series) -> npt.NDArray[np.float64]:
    import pandas as pd  # late: the report and API read this module without pandas

    stamps = pd.to_datetime(values, utc=True).dt.tz_localize(None).to_numpy(dtype="datetime64[us]")
    return stamps.astype(np.int64).astype(np.float64) / 1e6


# --- The serving model ------------------------------------------------------------------------------------


def max_mare() -> float:
    return float(settings.HINDSIGHT_ATTRIBUTION_MAX_MARE)


def production_mare() -> float:
    return float(settings.HINDSIGHT_ATTRIBUTION_PRODUCTION_MARE)


def serving_version() -> AttributionModelVersion | None:
    """The newest stored version of the current format whose held-out MARE passes the bar
    (``HINDSIGHT_ATTRIBUTION_MAX_MARE``). An older format's model reads features that are no longer computed."""
    from analysis.attribution.features import FORMAT_VERSION
    from analyzer.models import AttributionModelVersion

    return (
        AttributionModelVersion.objects.filter(mare__lte=max_mare(), format_version=FORMAT_VERSION)
        .defer("blob")
        .order_by("-created_at", "-pk")
        .first()
    )


_cache_lock = threading.Lock()
# Keyed by (id, created_at): a test database may hand out an id again after a rollback.
_cache: dict[tuple[int, str], AttributionModel] = {}


def load_model(version: AttributionModelVersion) -> AttributionModel:
    """The version's unpickled model, cached in-process by version id (only the serving one is kept)."""
    key = (version.pk, version.created_at.isoformat())
    with _cache_lock:
        model = _cache.get(key)
    if model is not None:
        return model
    import io

    import joblib  # type: ignore[import-untyped]

    from analyzer.models import AttributionModelVersion

    blob = AttributionModelVersion.objects.filter(pk=version.pk).values_list("blob", flat=True).first()
    if blob is None:
        raise LookupError(f"model version {version.pk} is gone")
    model = joblib.load(io.BytesIO(bytes(blob)))
    with _cache_lock:
        _cache.clear()
        _cache[key] = model
    return model


# --- One app's answer ---------------------------------------------------------------------------------------

NO_MODEL = "No attribution model is trained yet: run manage.py train_attribution"


@dataclass
class AppAttribution:
    """One app's "why slower than usual" answer, or why there is none (``reason``; ``warning`` when a failure)."""

    explanation: schema.Explanation | None = None
    reason: str = ""
    warning: bool = False
    version_id: int | None = None
    baseline_runs: list[dict[str, Any]] = field(default_factory=list)
    slower: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "available": self.explanation is not None,
            "reason": self.reason or None,
            "warning": self.warning,
            "model_version": self.version_id,
            "slower_than_usual": self.slower if self.explanation is not None else None,
            "notes": list(self.notes),
            "explanation": msgspec.to_builtins(self.explanation),
            "baseline_runs": self.baseline_runs,
        }


# A run within this share of its template's baseline runtime is "as usual".
AS_USUAL = 0.10


def app_attribution(app: AnalyzedApp) -> AppAttribution:
    """Explain ``app`` with the serving model; never raises (a failure becomes a warning reason)."""
    try:
        return _app_attribution(app)
    except Exception as error:  # a report must render whatever the model or the data hold
        log.exception("attribution of app %s failed", app.pk)
        return AppAttribution(reason=f"The slowdown attribution failed for this app: {error}", warning=True)


def _app_attribution(app: AnalyzedApp) -> AppAttribution:
    from analysis.attribution import explain

    if not app.template:
        return AppAttribution(reason="This app has no job template (it is not a recurring job), so it has no usual.")
    if not app.runtime_ms or app.runtime_ms <= 0:
        return AppAttribution(reason="This app has no runtime recorded, so it cannot be compared with usual.")
    if app.app_type not in (AppType.SPARK, AppType.MAPREDUCE):
        return AppAttribution(reason=f"Slowdown attribution does not support {app.app_type} apps.")
    version = serving_version()
    if version is None:
        from analysis.attribution.features import FORMAT_VERSION
        from analyzer.models import AttributionModelVersion

        if (
            AttributionModelVersion.objects.exists()
            and not AttributionModelVersion.objects.filter(format_version=FORMAT_VERSION).exists()
        ):
            return AppAttribution(
                reason=(
                    "The stored attribution models predate the features this version computes: "
                    "run manage.py train_attribution (the scheduler also trains one daily)."
                )
            )
        if AttributionModelVersion.objects.exists():
            return AppAttribution(
                reason=(
                    f"No trained attribution model passes the accuracy bar (held-out MARE <= {max_mare():.2f}): "
                    "more or steadier history is needed."
                )
            )
        return AppAttribution(reason=NO_MODEL)
    model = load_model(version)
    b = model.baselines
    idx = b.index.get(app.template)
    if idx is None or bool(b.borrowed[idx]):
        # A usual borrowed from "similar" templates is another job's usual: no answer rather than a guess.
        own = training_apps(days=None).filter(template=app.template).count()
        trained = 0 if idx is None else int(b.n_runs[idx])
        later = " The next training will include them." if own >= b.min_runs else ""
        return AppAttribution(
            reason=(
                f"No slowdown attribution: this job has {own} successful run(s) stored "
                f"({trained} in the serving model's training window), and {b.min_runs} of its own are needed "
                f"to know its usual runtime.{later}"
            ),
            version_id=version.pk,
        )
    frame = runs_frame(AnalyzedApp.objects.filter(pk=app.pk))
    features = [c for c in frame.columns if c in model.features or c in ("template", "runtime", "run_id")]
    [exp] = explain(model, frame[features])
    # Strictly through the schema: a library change that breaks the answer's shape fails here (and in tests).
    typed_exp = typed(exp.to_dict(), schema.Explanation)
    notes: list[str] = []
    if version.mare > production_mare():
        notes.append(
            f"The serving model's held-out error (MARE {version.mare:.2f}) is above the production bar "
            f"({production_mare():.2f}): this installation serves it because HINDSIGHT_ATTRIBUTION_MAX_MARE is "
            f"{max_mare():.2f}. Treat the causes as rough; High confidence is not given."
        )
        if typed_exp.confidence.level == "high":
            capped = msgspec.structs.replace(
                typed_exp.confidence,
                level="medium",
                message="Medium: the model fits this run, but High is withheld: the model is above the production "
                "error bar.",
            )
            typed_exp = msgspec.structs.replace(typed_exp, confidence=capped)
    result = AppAttribution(explanation=typed_exp, version_id=version.pk, notes=notes)
    result.slower = exp.actual_s > exp.baseline_s * (1 + AS_USUAL)
    band = list(b.band_runs.get(app.template, []))
    if band:
        rows = AnalyzedApp.objects.filter(pk__in=[int(str(x)) for x in band]).order_by("-end_time", "-pk")
        result.baseline_runs = [
            {"id": r.pk, "app_id": r.app_id, "end_time": r.end_time, "runtime_ms": r.runtime_ms}
            for r in rows.only("pk", "app_id", "end_time", "runtime_ms")
        ]
    return result


@dataclass
class AttributionVersions:
    """Stored model versions, newest first, which one serves, the MARE bar and the production bar (the model
    versions page)."""

    versions: list[AttributionModelVersion]
    serving_id: int | None
    max_mare: float
    production_mare: float


def attribution_versions() -> AttributionVersions:
    """Stored attribution model versions, newest first (blobs deferred), with which one serves and the MARE bar."""
    from analyzer.models import AttributionModelVersion

    serving = serving_version()
    versions = list(AttributionModelVersion.objects.defer("blob").order_by("-created_at", "-pk"))
    return AttributionVersions(
        versions=versions,
        serving_id=serving.pk if serving else None,
        max_mare=max_mare(),
        production_mare=production_mare(),
    )
