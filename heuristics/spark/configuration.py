from __future__ import annotations

import math
from typing import Literal

from appmodel.formatting import format_bytes, setting_size
from appmodel.spark import SparkApp
from appmodel.units import GIB, MIB
from heuristics.base import Change, Count, Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import (
    SPARK,
    conf_bool,
    conf_bytes,
    conf_int,
    executors_counted,
    local_mode,
    spark_version_at_least,
)

KRYO = "org.apache.spark.serializer.KryoSerializer"


def overhead_bytes(app: SparkApp, role: str, warnings: list[tuple[str, str]]) -> tuple[str, int | None]:
    """spark.{role}.memoryOverhead, else the pre-3.0 spark.yarn.{role}.memoryOverhead (a bare number is MiB)."""
    for key in (f"spark.{role}.memoryOverhead", f"spark.yarn.{role}.memoryOverhead"):
        value = conf_bytes(app, key, warnings)
        if value is not None:
            return key, value
    return f"spark.{role}.memoryOverhead", None


@register
class Configuration(Heuristic["Configuration.Config"]):
    """Spark properties that are known to waste the cluster or break dynamic allocation.

    What it measures:
        The properties the app ran with: the serializer; dynamic allocation and the external shuffle
        service (or shuffle tracking); executor and driver memory, executor cores, the memory overheads
        (spark.{executor,driver}.memoryOverhead and the older spark.yarn.*.memoryOverhead, a bare number
        meaning MiB); dynamic allocation's min and max executors; and wildcards in spark.yarn.secondary.jars.

    Why it matters:
        Java serialization is slow and bulky for RDD shuffles and cached RDDs; DataFrame and SQL rows use
        Tungsten's own binary format, so on a DataFrame app the serializer changes little (LOW by default,
        java_serializer_severity). Dynamic allocation without a shuffle service or shuffle
        tracking loses shuffle files when executors go away. Very large executors and drivers are hard to
        schedule and waste memory they do not use; very many cores per executor contend for one heap. A high
        minimum or maximum executor count holds or grabs a large share of the cluster.

    What to change:
        Set spark.serializer=org.apache.spark.serializer.KryoSerializer; enable spark.shuffle.service.enabled
        (or spark.dynamicAllocation.shuffleTracking.enabled) with dynamic allocation; keep executors under
        10 GiB and 4 cores unless the job needs more; lower minExecutors/maxExecutors; list secondary jars
        explicitly.
        The changes, one per check that fired: spark.serializer=org.apache.spark.serializer.KryoSerializer;
        spark.dynamicAllocation.shuffleTracking.enabled=true with dynamic allocation and no shuffle service
        (Spark 3.0 and later, which need no cluster service; spark.shuffle.service.enabled=true before);
        spark.shuffle.service.enabled=true without dynamic allocation; minExecutors / maxExecutors = the limit;
        memory, overhead and cores = the largest whole number of GiB (cores) below the check's low threshold
        (9g below 10 GiB); secondary jars: list them explicitly (not a setting).

    Differences from Dr. Elephant:
        Reads both the current and the spark.yarn.* overhead keys (Dr. Elephant read only the YARN ones);
        treats shuffle tracking (on by default from Spark 4.0) as a valid alternative to the shuffle service;
        skips the cluster sizing and allocation checks in local mode and the shuffle-service check on
        Kubernetes, where no external shuffle service exists; a malformed size is reported as a warning instead
        of failing the heuristic. A non-Kryo serializer is LOW, not MODERATE (java_serializer_severity; it
        fired on every DataFrame app, where rows never go through it); static allocation without the shuffle
        service is no finding, not MODERATE (static_allocation_needs_shuffle_service; without dynamic allocation
        executors are not removed, so the service changes nothing: it fired Moderate on every realistic app).
        The drelephant profile restores both (MODERATE, true).
    """

    code = "spark.configuration"
    name = "Spark configuration"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        require_kryo: bool  # false: the serializer is not checked
        java_serializer_severity: Literal[
            "low", "moderate"
        ]  # a non-Kryo serializer's severity (Dr. Elephant: moderate)
        # dynamic allocation off and no shuffle service -> MODERATE (Dr. Elephant); false: no finding
        static_allocation_needs_shuffle_service: bool
        executor_memory_gib: Ascending
        driver_memory_gib: Ascending
        executor_cores: Ascending
        memory_overhead_gib: Ascending  # executor and driver overheads
        max_min_executors: Count  # spark.dynamicAllocation.minExecutors above this -> CRITICAL; 0: any above 0
        max_max_executors: Count  # spark.dynamicAllocation.maxExecutors above this -> CRITICAL; 0: any above 0

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        warnings: list[tuple[str, str]] = []
        checks: list[tuple[str, str, Severity, str]] = []  # (property, shown value, severity, advice)
        observed: Observed = {}

        serializer = app.environment.spark("spark.serializer") or ""
        observed["spark.serializer"] = serializer
        if cfg.require_kryo:
            flagged = Severity[cfg.java_serializer_severity.upper()]
            severity = Severity.NONE if serializer.strip() == KRYO else flagged
            checks.append(
                ("spark.serializer", serializer or "(default: Java)", severity, f"set spark.serializer={KRYO}")
            )

        if local_mode(app):
            warnings.append(("Note", "local mode: cluster sizing and allocation checks skipped"))
        else:
            self._allocation_checks(app, checks, observed, warnings)
            self._sizing_checks(app, checks, observed, warnings)

        severity = max((c[2] for c in checks), default=Severity.NONE)
        details = [(prop, f"{shown} ({sev.label})" if sev else shown) for prop, shown, sev, _ in checks]
        advice = "; ".join(dict.fromkeys(a for _, _, sev, a in sorted(checks, key=lambda c: -c[2]) if sev))
        counted = 1 if local_mode(app) else executors_counted(app) + 1  # executors and the driver
        changes = [
            change
            for prop, shown, sev, _ in sorted(checks, key=lambda c: -c[2])
            if sev and (change := self._change(app, prop, shown)) is not None
        ]
        return self.result(
            severity,
            counted=counted,
            details=details + warnings,
            advice=advice[:1].upper() + advice[1:],
            changes=changes,
            observed=observed,
        )

    def _allocation_checks(
        self,
        app: SparkApp,
        checks: list[tuple[str, str, Severity, str]],
        observed: Observed,
        warnings: list[tuple[str, str]],
    ) -> None:
        cfg = self.config
        dynamic = bool(conf_bool(app, "spark.dynamicAllocation.enabled"))
        shuffle_service = bool(conf_bool(app, "spark.shuffle.service.enabled"))
        tracking = conf_bool(app, "spark.dynamicAllocation.shuffleTracking.enabled")
        if tracking is None:
            tracking = spark_version_at_least(app, 4, 0)
        observed.update(dynamic_allocation=str(dynamic), shuffle_service=str(shuffle_service))
        if app.master.startswith("k8s://"):
            pass  # no external shuffle service on Kubernetes
        elif dynamic and not shuffle_service and not tracking:
            checks.append(
                (
                    "spark.shuffle.service.enabled",
                    "false with dynamic allocation",
                    Severity.SEVERE,
                    "enable spark.shuffle.service.enabled or shuffle tracking with dynamic allocation",
                )
            )
        elif not dynamic and not shuffle_service and cfg.static_allocation_needs_shuffle_service:
            checks.append(
                (
                    "spark.shuffle.service.enabled",
                    "false",
                    Severity.MODERATE,
                    "enable the external shuffle service so lost executors keep their shuffle output",
                )
            )
        jars = app.environment.spark("spark.yarn.secondary.jars")
        if jars and "*" in jars:
            checks.append(
                ("spark.yarn.secondary.jars", jars[:200], Severity.CRITICAL, "list secondary jars explicitly")
            )
        if not dynamic:
            return
        for key, limit in (
            ("spark.dynamicAllocation.minExecutors", cfg.max_min_executors),
            ("spark.dynamicAllocation.maxExecutors", cfg.max_max_executors),
        ):
            value = conf_int(app, key, warnings)
            if value is not None:
                observed[key] = value
                severity = Severity.CRITICAL if value > limit else Severity.NONE
                checks.append((key, str(value), severity, f"set {key} to at most {limit}"))

    def _sizing_checks(
        self,
        app: SparkApp,
        checks: list[tuple[str, str, Severity, str]],
        observed: Observed,
        warnings: list[tuple[str, str]],
    ) -> None:
        cfg = self.config
        sizes: list[tuple[str, int | None, str]] = [  # (property, bytes, threshold key)
            ("spark.executor.memory", conf_bytes(app, "spark.executor.memory", warnings), "executor_memory_gib"),
            ("spark.driver.memory", conf_bytes(app, "spark.driver.memory", warnings), "driver_memory_gib"),
            (*overhead_bytes(app, "executor", warnings), "memory_overhead_gib"),
            (*overhead_bytes(app, "driver", warnings), "memory_overhead_gib"),
        ]
        for key, value, threshold_key in sizes:
            if value is None:
                continue
            observed[key] = value
            severity = self.judge(observed, threshold_key, value / GIB)
            low = getattr(cfg, threshold_key).low
            checks.append((key, format_bytes(value), severity, f"lower {key} below {low:g} GiB"))
        cores = conf_int(app, "spark.executor.cores", warnings)
        if cores is not None:
            observed["spark.executor.cores"] = cores
            severity = self.judge(observed, "executor_cores", cores)
            limit = f"{cfg.executor_cores.low:g}"
            checks.append(("spark.executor.cores", str(cores), severity, f"use fewer than {limit} executor cores"))

    def _change(self, app: SparkApp, prop: str, shown: str) -> Change | None:
        """The value the check on ``prop`` wants (see the help page's "What to change")."""
        cfg = self.config
        if prop == "spark.serializer":
            return Change(prop, KRYO, "Kryo is faster and more compact than Java serialization")
        if prop == "spark.shuffle.service.enabled":
            if shown.startswith("false with") and spark_version_at_least(app, 3, 0):
                why = "dynamic allocation keeps executors that hold shuffle data, with no cluster service needed"
                return Change("spark.dynamicAllocation.shuffleTracking.enabled", "true", why)
            return Change(prop, "true", "shuffle files outlive the executors that wrote them")
        if prop == "spark.yarn.secondary.jars":
            return Change("list secondary jars explicitly", shown[:80], "a wildcard ships every matching jar")
        limits = {
            "spark.dynamicAllocation.minExecutors": cfg.max_min_executors,
            "spark.dynamicAllocation.maxExecutors": cfg.max_max_executors,
        }
        if prop in limits:
            return Change(prop, str(limits[prop]), "the most this check allows")
        if prop == "spark.executor.cores":
            low = float(cfg.executor_cores.low)
            return Change(prop, str(max(1, math.ceil(low) - 1)), f"below the {low:g} cores this check flags")
        threshold = {"spark.executor.memory": cfg.executor_memory_gib, "spark.driver.memory": cfg.driver_memory_gib}
        low = float(threshold.get(prop, cfg.memory_overhead_gib).low)
        whole = math.ceil(low) - 1
        value = f"{whole}g" if whole >= 1 else setting_size(max(low * GIB - MIB, MIB))
        return Change(prop, value, f"below the {low:g} GiB this check flags")
