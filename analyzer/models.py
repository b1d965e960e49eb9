"""Storage of analysis results (Django ORM).

Not to be confused with ``appmodel``, the in-memory model of an application that heuristics read.
Raw per-task arrays are never stored as rows: a report keeps heuristic findings and per-stage and
per-executor summaries. Re-analyzing the same (source, app id, attempt) updates one ``AnalyzedApp``.
"""

from __future__ import annotations

from typing import Final

from django.db import models
from django.db.models.functions import Upper
from django.utils import timezone

from heuristics.severity import Severity

# Dr. Elephant's five levels are heuristics.Severity, the one definition (re-exported here for the read side);
# the tables store its values. Colours live in the web UI, the label is always shown with them.
SEVERITY_CHOICES: Final = [(int(level), level.label) for level in Severity]


class AppType(models.TextChoices):
    SPARK = "SPARK", "Spark"
    MAPREDUCE = "MAPREDUCE", "MapReduce"


class AnalyzedApp(models.Model):
    """One analyzed application attempt."""

    # Where it was read from: an absolute file or directory path for logs, later a cluster source name.
    source = models.CharField(max_length=1024)
    app_id = models.CharField(max_length=255)
    attempt_id = models.CharField(max_length=64, blank=True, default="")  # "" when the app has no attempts
    app_type = models.CharField(max_length=16, choices=AppType.choices, default=AppType.SPARK)
    name = models.TextField(blank=True, default="")
    user = models.CharField(max_length=255, blank=True, default="")
    queue = models.CharField(max_length=255, blank=True, default="")
    job_type = models.CharField(max_length=64, blank=True, default="")
    # Scheduler linkage and the recurring job's key (analysis.jobinfo); "" / no scheduler for ad hoc apps.
    scheduler = models.CharField(max_length=32, blank=True, default="")
    flow_def_id = models.CharField(max_length=255, blank=True, default="")
    flow_def_url = models.CharField(max_length=800, blank=True, default="")
    flow_exec_id = models.CharField(max_length=255, blank=True, default="")
    flow_exec_url = models.CharField(max_length=800, blank=True, default="")
    job_def_id = models.CharField(max_length=255, blank=True, default="")
    job_def_url = models.CharField(max_length=800, blank=True, default="")
    job_exec_id = models.CharField(max_length=255, blank=True, default="")
    job_exec_url = models.CharField(max_length=800, blank=True, default="")
    job_name = models.CharField(max_length=255, blank=True, default="")
    template = models.CharField(max_length=255, blank=True, default="")
    # The shape of the app's stage DAG (analysis.stages.signature): runs of one template with one signature form a
    # category of the stage anomaly localization (issue 7). "" when the app has no stages.
    stage_signature = models.CharField(max_length=64, blank=True, default="")
    # Share of the app's task time on hosts the first straggler ranking after its end flagged (issue 7), set by
    # that ranking; a slowdown-attribution feature. None: no ranking has covered the app (or it ran no tasks).
    straggler_task_share = models.FloatField(null=True, blank=True)
    spark_version = models.CharField(max_length=64, blank=True, default="")
    start_time = models.DateTimeField(null=True, blank=True)
    end_time = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, default="")  # SUCCEEDED / FAILED / INCOMPLETE
    partial = models.BooleanField(default=False)
    severity = models.PositiveSmallIntegerField(choices=SEVERITY_CHOICES, default=Severity.NONE)
    # The app's cost in GB-seconds (docs/IMPACT.md, "Score"): 64-bit, as a large app's exceeds 2^31.
    score = models.BigIntegerField(default=0)
    runtime_ms = models.BigIntegerField(null=True, blank=True)
    # GiB-hours, see analysis.metrics; null when the log does not tell (no start time, unknown lifetimes).
    used_gb_hours = models.FloatField(null=True, blank=True)
    wasted_gb_hours = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(default=dict)
    warnings = models.JSONField(default=list)
    parse_stats = models.JSONField(default=dict)
    # Why the app (or a job of it) failed: analyzer.schema.Failure; null when nothing failed (and in rows stored
    # before the column existed).
    failure = models.JSONField(null=True, blank=True, default=None)
    # The findings that cost the most with their changes: analyzer.schema.Headline ([] when nothing is worth
    # changing, and in rows stored before the column existed).
    headline = models.JSONField(default=list, blank=True)
    # Runtime at other executor counts, critical path, ideal count: analyzer.schema.WhatIf; null when unknown.
    what_if = models.JSONField(null=True, blank=True, default=None)
    # The severity profile the findings were judged under (analysis.impact.profile); "" before profiles existed.
    severity_profile = models.CharField(max_length=32, blank=True, default="")
    spark_properties = models.JSONField(default=dict)  # redacted before it gets here
    # The cluster a polled app came from; null for logs analyzed from files.
    cluster = models.ForeignKey("Cluster", on_delete=models.SET_NULL, null=True, blank=True, related_name="apps")
    # The ResourceManager's view of the app (queue, allocated resources, memory and vcore seconds, final status),
    # joined from the cluster's yarn-rm source; {} when there is none. See analyzer.ingestion.yarn_join.
    yarn = models.JSONField(default=dict, blank=True)
    analysis_ms = models.IntegerField(null=True, blank=True)  # fetch + analysis time of the last run (not storage)
    analyzed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "app_id", "attempt_id"], name="uniq_app_attempt_per_source"),
        ]
        indexes = [
            # The app list orders newest end first with apps that never ended last; the PostgreSQL index for that
            # order (NULLS LAST, which SQLite cannot index) is created in migration 0002.
            models.Index(fields=["-end_time"], name="app_end_idx"),
            models.Index(fields=["user", "-end_time"], name="app_user_end_idx"),
            models.Index(fields=["severity", "-end_time"], name="app_severity_end_idx"),
            models.Index(fields=["app_id"], name="app_id_idx"),
            models.Index(fields=["-start_time"], name="app_start_idx"),
            models.Index(fields=["-score"], name="app_score_idx"),
            models.Index(fields=["analysis_ms"], name="app_analysis_ms_idx"),  # the /metrics histogram
            models.Index(fields=["template", "-end_time"], name="app_template_end_idx"),
            models.Index(fields=["flow_def_id", "-end_time"], name="app_flow_def_end_idx"),
            models.Index(fields=["flow_exec_id"], name="app_flow_exec_idx"),
            models.Index(fields=["job_def_id"], name="app_job_def_idx"),
            # An app id matched case-insensitively under either prefix (API detail, gate): 0010. On PostgreSQL
            # 0010 also adds (key, end_time DESC NULLS LAST, id DESC) indexes for the list's filters and sort
            # keys and trigram indexes for name and id fragments, which SQLite cannot create.
            models.Index(Upper("app_id"), name="app_id_upper_idx"),
        ]
        ordering = ["-end_time", "-id"]

    def __str__(self) -> str:
        return f"{self.app_id}/{self.attempt_id}" if self.attempt_id else self.app_id


class HeuristicResult(models.Model):
    """One heuristic's verdict on one app."""

    app = models.ForeignKey(AnalyzedApp, on_delete=models.CASCADE, related_name="heuristic_results")
    position = models.PositiveSmallIntegerField(default=0)  # display order
    code = models.CharField(max_length=128)
    name = models.CharField(max_length=255)
    severity = models.PositiveSmallIntegerField(choices=SEVERITY_CHOICES, default=Severity.NONE)
    # The heuristic's own severity before the severity profile bounded it by cost; null in rows stored before the
    # column existed (their severity was the rule's).
    rule_severity = models.PositiveSmallIntegerField(choices=SEVERITY_CHOICES, null=True, blank=True)
    score = models.BigIntegerField(default=0)  # the finding's cost in GB-seconds (docs/IMPACT.md)
    # What fixing it would save (analysis.impact.Impact): wall-clock ms, that over the runtime, GB-hours; all null
    # when its cost was not estimated (gb_hours alone is null when the executors' memory is unknown).
    impact_wall_ms = models.BigIntegerField(null=True, blank=True)
    impact_share = models.FloatField(null=True, blank=True)
    impact_gb_hours = models.FloatField(null=True, blank=True)
    changes = models.JSONField(default=list, blank=True)  # analyzer.schema.Changes: what to change, with values
    advice = models.TextField(blank=True, default="")
    observed = models.JSONField(default=dict)
    thresholds = models.JSONField(default=dict)
    stages = models.JSONField(default=list)  # [[stage_id, attempt_id], ...] involved
    executors = models.JSONField(default=list)  # executor ids involved

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app", "code"], name="uniq_heuristic_per_app")]
        # The list's heuristic= / severity_min= filter, answered from this index alone (0010: it replaced the
        # (code, severity) index, its prefix).
        indexes = [models.Index(fields=["code", "severity", "app"], name="heuristic_code_sev_app_idx")]
        ordering = ["app", "position"]

    def __str__(self) -> str:
        return f"{self.code}={self.get_severity_display()}"


class HeuristicDetail(models.Model):
    """A named value a heuristic reports (the details table of the report)."""

    result = models.ForeignKey(HeuristicResult, on_delete=models.CASCADE, related_name="details")
    position = models.PositiveSmallIntegerField(default=0)
    name = models.CharField(max_length=255)
    value = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["result", "position"]


class StageSummary(models.Model):
    """Per stage attempt totals, as the History Server's stage list shows them."""

    app = models.ForeignKey(AnalyzedApp, on_delete=models.CASCADE, related_name="stage_summaries")
    stage_id = models.IntegerField()
    attempt_id = models.IntegerField(default=0)
    name = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, default="")
    num_tasks = models.IntegerField(default=0)
    num_complete_tasks = models.IntegerField(default=0)
    num_failed_tasks = models.IntegerField(default=0)
    num_killed_tasks = models.IntegerField(default=0)
    submission_time = models.DateTimeField(null=True, blank=True)
    completion_time = models.DateTimeField(null=True, blank=True)
    duration_ms = models.BigIntegerField(null=True, blank=True)
    executor_run_time_ms = models.BigIntegerField(default=0)
    executor_cpu_time_ms = models.FloatField(default=0.0)
    jvm_gc_time_ms = models.BigIntegerField(default=0)
    input_bytes = models.BigIntegerField(default=0)
    input_records = models.BigIntegerField(default=0)
    output_bytes = models.BigIntegerField(default=0)
    output_records = models.BigIntegerField(default=0)
    shuffle_read_bytes = models.BigIntegerField(default=0)
    shuffle_read_records = models.BigIntegerField(default=0)
    shuffle_write_bytes = models.BigIntegerField(default=0)
    shuffle_write_records = models.BigIntegerField(default=0)
    memory_bytes_spilled = models.BigIntegerField(default=0)
    disk_bytes_spilled = models.BigIntegerField(default=0)
    peak_execution_memory = models.BigIntegerField(default=0)  # max over tasks
    # Quantiles (0, .25, .5, .75, 1) of successful task durations, ms, for the report's charts.
    task_duration_quantiles = models.JSONField(default=list)
    # Log-spaced histogram of successful task durations: {"edges_ms": [...], "counts": [...]}, {} if none.
    task_duration_histogram = models.JSONField(default=dict)
    # Successful tasks with a known host: {"n_hosts", "n_tasks", "task_ms", "hosts": [[host, tasks, task_ms], ...]},
    # at most 16 hosts, the highest mean task time first (stage localization names slow hosts); {} if none.
    host_task_times = models.JSONField(default=dict)
    failure_reason = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["app", "stage_id", "attempt_id"], name="uniq_stage_attempt_per_app"),
        ]
        ordering = ["app", "stage_id", "attempt_id"]


class ExecutorSummary(models.Model):
    """Per executor totals, as the History Server's allexecutors list shows them."""

    app = models.ForeignKey(AnalyzedApp, on_delete=models.CASCADE, related_name="executor_summaries")
    executor_id = models.CharField(max_length=64)
    host = models.CharField(max_length=255, blank=True, default="")
    cores = models.IntegerField(default=0)
    added_time = models.DateTimeField(null=True, blank=True)
    removed_time = models.DateTimeField(null=True, blank=True)
    removed_reason = models.TextField(blank=True, default="")
    max_memory = models.BigIntegerField(default=0)
    total_tasks = models.IntegerField(default=0)
    failed_tasks = models.IntegerField(default=0)
    total_duration_ms = models.BigIntegerField(default=0)
    total_gc_time_ms = models.BigIntegerField(default=0)
    total_input_bytes = models.BigIntegerField(default=0)
    total_shuffle_read = models.BigIntegerField(default=0)
    total_shuffle_write = models.BigIntegerField(default=0)
    peak_metrics = models.JSONField(default=dict)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["app", "executor_id"], name="uniq_executor_per_app")]
        ordering = ["app", "id"]


class Cluster(models.Model):
    """A named cluster whose finished applications are watched through its sources."""

    name = models.SlugField(max_length=64, unique=True)
    # MapReduce JobHistory Server address; read by the MapReduce fetcher, not by any Spark source.
    jobhistory_url = models.CharField(max_length=1024, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SourceBackend(models.TextChoices):
    """The fetcher backends a source can use, by their ``fetchers.backends`` name."""

    SPARK_HISTORY = "spark-history", "Spark History Server"
    YARN_RM = "yarn-rm", "YARN ResourceManager"
    EVENTLOG_DIR = "eventlog-dir", "Spark event-log directory"


class Source(models.Model):
    """One place a cluster's finished applications are listed from, with its polling checkpoint.

    ``params`` holds the backend's non-sensitive parameters and ``secrets`` the sensitive ones (passwords,
    tokens), which are never rendered. ``params_key`` identifies the source (a hash of its addresses or paths)
    so that the same source is not added twice to a cluster.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="sources")
    backend = models.CharField(max_length=32, choices=SourceBackend.choices)
    params = models.JSONField(default=dict, blank=True)
    secrets = models.JSONField(default=dict, blank=True)
    params_key = models.CharField(max_length=64, editable=False)
    enabled = models.BooleanField(default=True)
    poll_interval_s = models.PositiveIntegerField(default=10)
    # Apps finishing in the last seconds may not be listed yet everywhere: windows end this long before now.
    safety_margin_s = models.PositiveIntegerField(default=60)
    # End (epoch ms, exclusive) of the last window whose apps were all recorded; null before the first one.
    checkpoint_ms = models.BigIntegerField(null=True, blank=True)
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")  # secrets masked before it is stored
    # Apps a server lists late (a History Server still parsing a big log when the window passed) are caught by
    # listing the last ``relist_lookback_s`` again every few minutes; 0 turns it off. See analyzer.ingestion.polling.
    relist_lookback_s = models.PositiveIntegerField(default=3600)
    relisted_at = models.DateTimeField(null=True, blank=True)
    # What the backend remembers between listings (e.g. logs seen in progress), so a restart forgets nothing.
    backend_state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "backend", "params_key"], name="uniq_source_per_cluster"),
        ]
        ordering = ["cluster", "backend", "id"]

    def __str__(self) -> str:
        return f"{self.cluster.name}: {self.get_backend_display()}"


class ClaimState(models.TextChoices):
    CLAIMED = "claimed", "Claimed"
    DONE = "done", "Done"
    FAILED = "failed", "Failed to fetch"
    RETRY = "retry", "Waiting"  # listed and not yet analyzed, or to be tried again
    # Requested on demand, never listed, and the source has no such app: not a failure of the source (counted
    # nowhere), kept a while so the gate can say so (analyzer.ingestion.ondemand).
    NOT_FOUND = "not_found", "Not in the source"


class AppClaim(models.Model):
    """One finished app attempt of a cluster, claimed by a poller before it is fetched and analyzed.

    Unique per (cluster, app id, attempt): every poller and every source of the cluster race for the same row,
    and a conditional update decides which one analyzes it, so an app is analyzed once whoever lists it.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="app_claims")
    app_id = models.CharField(max_length=255)
    attempt_id = models.CharField(max_length=64, blank=True, default="")  # "" when the app has no attempts
    state = models.CharField(max_length=16, choices=ClaimState.choices, default=ClaimState.RETRY)
    # The source that listed it first, and what its listing said (name, user, backend extras): enough to fetch it.
    source = models.ForeignKey(Source, on_delete=models.SET_NULL, null=True, blank=True, related_name="claims")
    finished_ms = models.BigIntegerField(null=True, blank=True)  # the app's end, as listed
    ref = models.JSONField(default=dict, blank=True)
    tries = models.PositiveIntegerField(default=0)  # fetches that failed
    next_try_at = models.DateTimeField(null=True, blank=True)  # a retried app waits until then (backoff)
    created_at = models.DateTimeField(default=timezone.now)  # when it was first listed
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=255, blank=True, default="")  # the poller holding the claim
    # The machine and process that took it (``analyzer.ingestion.polling.claim_holder``): a claim whose process is
    # gone on the same machine is taken over at once instead of after the lease.
    claimed_host = models.CharField(max_length=255, blank=True, default="")
    claimed_pid = models.PositiveIntegerField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")  # secrets masked before it is stored
    analyzed_app = models.ForeignKey(
        AnalyzedApp, on_delete=models.SET_NULL, null=True, blank=True, related_name="claims"
    )
    # False while only an on-demand request names the app: no listing recorded it and no fetch found it yet. A
    # worker that cannot find such an app marks it NOT_FOUND instead of FAILED (a made-up id is no source failure).
    listed = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "app_id", "attempt_id"], name="uniq_claim_per_cluster_app"),
        ]
        indexes = [
            models.Index(fields=["state", "next_try_at"], name="claim_state_next_try_idx"),
            models.Index(fields=["cluster", "source", "state"], name="claim_cluster_source_state_idx"),  # /metrics
            # A user's unlisted requests still being looked up (ondemand's bound), and the not-found ones to prune.
            models.Index(fields=["state"], condition=models.Q(listed=False), name="claim_unlisted_state_idx"),
        ]
        ordering = ["cluster", "app_id", "attempt_id"]

    def __str__(self) -> str:
        attempt = f"/{self.attempt_id}" if self.attempt_id else ""
        return f"{self.app_id}{attempt}: {self.state}"


class WaitSlot(models.Model):
    """One on-demand request waiting for its verdict, holding a web worker (``analyzer.ingestion.ondemand.waiting``).

    A request takes a free slot number of its user's scope and one of the global scope; the unique constraint makes
    the take atomic across processes and machines. The rows are deleted when the wait ends; a process killed
    meanwhile leaves rows that stop counting at ``expires_at``.
    """

    scope = models.CharField(max_length=300)  # "user:<pk>" or "all"
    slot = models.PositiveIntegerField()
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "slot"], name="uniq_wait_slot")]

    def __str__(self) -> str:
        return f"{self.scope}#{self.slot} until {self.expires_at:%H:%M:%S}"


class YarnAppView(models.Model):
    """What a cluster's ResourceManager said of one finished app, kept to join into its analysis.

    Recorded by the cluster's yarn-rm source whether or not the app was analyzed yet; the join runs both ways
    (view first or analysis first). ``view`` is ``fetchers.yarn_rm.rm_app_summary`` of the RM's app entry.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="yarn_views")
    app_id = models.CharField(max_length=255)
    view = models.JSONField(default=dict)
    finished_ms = models.BigIntegerField(null=True, blank=True)
    recorded_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "app_id"], name="uniq_yarn_view_per_cluster_app")]
        ordering = ["cluster", "app_id"]

    def __str__(self) -> str:
        return f"{self.cluster_id}: {self.app_id}"


class AttributionModelVersion(models.Model):
    """One trained slowdown-attribution model (issue 6): its facts and the model itself, joblib-serialized.

    The model lives in the database (``blob``) rather than a file so it survives fresh clones, backups and several
    web hosts without a shared directory; it is about 10 MB at 100k runs and only the last
    ``HINDSIGHT_ATTRIBUTION_KEEP_VERSIONS`` are kept. The newest version whose held-out ``mare`` passes
    ``HINDSIGHT_ATTRIBUTION_MAX_MARE`` serves (``analyzer.attribution.selectors.serving_version``).
    """

    created_at = models.DateTimeField(default=timezone.now)
    format_version = models.PositiveIntegerField(default=1)
    params = models.JSONField(default=dict)  # the random forest's parameters
    features = models.JSONField(default=list)  # registry feature names the model uses, in order
    window_days = models.PositiveIntegerField(null=True, blank=True)  # None: every stored run
    window_start = models.DateTimeField(null=True, blank=True)  # the first and last training run's end
    window_end = models.DateTimeField(null=True, blank=True)
    mare = models.FloatField()  # template-normalized MARE (Griffin Eq. 11) on the held-out runs
    n_runs = models.PositiveIntegerField(default=0)  # runs in the frame (training + held out)
    n_train = models.PositiveIntegerField(default=0)
    n_holdout = models.PositiveIntegerField(default=0)
    n_templates = models.PositiveIntegerField(default=0)
    n_borrowed = models.PositiveIntegerField(default=0)  # templates with too few runs, borrowing a baseline
    train_seconds = models.FloatField(default=0.0)
    size_bytes = models.BigIntegerField(default=0)  # of the serialized model
    confidence = models.JSONField(default=dict)  # thresholds tuned on the held-out runs
    blob = models.BinaryField()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"attribution model {self.pk} (MARE {self.mare:.3f})"


# --- Where is it slow? (issue 7): straggler hosts, executor anomalies, stage anomalies ------------------------


class AppHostTasks(models.Model):
    """One app's tasks on one host as the straggler ranking reads them: z-scores among sibling tasks.

    Sibling groups (a stage attempt, a MapReduce phase) never span apps, so z-scores are computed once, when the app
    is analyzed, and the hourly ranking only concatenates the rows of its window. ``z`` holds at most
    ``HOST_SAMPLE_MAX`` float32 values (little-endian), a seeded sample when the host ran more tasks in the app;
    ``n_tasks`` and ``task_ms`` count every task with a z-score.
    """

    app = models.ForeignKey(AnalyzedApp, on_delete=models.CASCADE, related_name="host_tasks")
    cluster = models.ForeignKey("Cluster", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    host = models.CharField(max_length=255)
    end_time = models.DateTimeField(null=True, blank=True)  # the app's end: windows select on it without a join
    n_tasks = models.IntegerField(default=0)
    task_ms = models.BigIntegerField(default=0)  # summed durations of those tasks
    z = models.BinaryField()
    # Sum over those tasks of ln(duration / sibling median) (analysis.hosts.sibling_log_ratios): the host's speed.
    # Null for rows stored before issue 16; such hosts are not called stragglers until their apps are re-analyzed.
    log_ratio_sum = models.FloatField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["end_time"], name="host_tasks_end_idx"),
            models.Index(fields=["host", "end_time"], name="host_tasks_host_end_idx"),
        ]


class HostRankingSnapshot(models.Model):
    """One straggler ranking of one cluster's hosts over one window (``analysis.hosts.rank_hosts``).

    ``snapshot`` is the library's ``StragglerSnapshot.to_dict()`` (every host's indicators, level and straggler
    flag, the level-0 histograms); the per-host rows are also kept as ``HostRank`` for trends and lookups.
    """

    cluster = models.ForeignKey("Cluster", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    window = models.CharField(max_length=16)  # "24h", "7d"
    window_start = models.DateTimeField(null=True, blank=True)
    window_end = models.DateTimeField(null=True, blank=True)
    computed_at = models.DateTimeField(default=timezone.now)
    compute_ms = models.IntegerField(default=0)
    n_apps = models.IntegerField(default=0)
    n_tasks = models.BigIntegerField(default=0)
    n_hosts = models.IntegerField(default=0)
    n_ranked = models.IntegerField(default=0)
    n_levels = models.IntegerField(default=0)
    n_stragglers = models.IntegerField(default=0)
    config = models.JSONField(default=dict)
    snapshot = models.JSONField(default=dict)

    class Meta:
        indexes = [models.Index(fields=["cluster", "window", "-computed_at"], name="host_snapshot_latest_idx")]
        ordering = ["-computed_at", "-id"]


class HostRank(models.Model):
    """One host's place in one snapshot: what the trend across windows and the host lookups read."""

    snapshot = models.ForeignKey(HostRankingSnapshot, on_delete=models.CASCADE, related_name="ranks")
    host = models.CharField(max_length=255)
    level = models.IntegerField(default=-1)  # 0 = slowest tier, -1 = too few tasks to rank
    straggler = models.BooleanField(default=False)
    n_tasks = models.IntegerField(default=0)
    mean = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    p_extreme = models.FloatField(null=True, blank=True)  # empirical share of tasks with z above extreme_z

    class Meta:
        indexes = [
            models.Index(fields=["host", "snapshot"], name="host_rank_host_idx"),
            models.Index(fields=["snapshot", "level"], name="host_rank_level_idx"),
        ]


class ExecutorAnomalyReport(models.Model):
    """The executor anomaly ranking of one app (``analysis.executors``) and what its panel draws.

    ``features``: one object per executor (executor_id, host and each feature's value); ``series``: a sample of
    the app's tasks (time, executor, per-task feature values) for the selected feature's time series;
    ``ranking``: ``ExecutorRanking.to_dict()``; ``reference_apps``: the stored apps whose executors served as
    the reference model when this app had too few executors.
    """

    app = models.OneToOneField(AnalyzedApp, on_delete=models.CASCADE, related_name="executor_anomaly")
    model = models.CharField(max_length=16, default="none")  # peers / reference / none
    features = models.JSONField(default=list)
    series = models.JSONField(default=dict)
    ranking = models.JSONField(default=dict)
    reference_apps = models.JSONField(default=list)
    computed_at = models.DateTimeField(default=timezone.now)


class StageLocalization(models.Model):
    """Stage anomaly localization of one template's recent runs (``analysis.stages.localize.localize``).

    ``result`` is ``LocalizationResult.to_dict()`` with run ids mapped to stored apps (``runs``: run id -> app pk,
    app id, end). Recomputed when the template has runs newer than ``latest_end``.
    """

    template = models.CharField(max_length=255)
    cluster = models.ForeignKey("Cluster", on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    computed_at = models.DateTimeField(default=timezone.now)
    latest_end = models.DateTimeField(null=True, blank=True)
    n_runs = models.IntegerField(default=0)
    n_categories = models.IntegerField(default=0)
    n_anomalous = models.IntegerField(default=0)  # categories with at least one anomalous stage
    result = models.JSONField(default=dict)
    runs = models.JSONField(default=dict)

    class Meta:
        constraints = [  # one per (template, cluster); "no cluster" (apps read from files) counts as one
            models.UniqueConstraint(
                fields=["template", "cluster"], condition=models.Q(cluster__isnull=False), name="uniq_stage_loc"
            ),
            models.UniqueConstraint(
                fields=["template"], condition=models.Q(cluster__isnull=True), name="uniq_stage_loc_no_cluster"
            ),
        ]
        indexes = [models.Index(fields=["-computed_at"], name="stage_loc_computed_idx")]
