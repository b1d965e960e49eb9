from __future__ import annotations

import re

from appmodel.formatting import format_percent
from appmodel.spark import JobStatus, SparkApp
from heuristics.base import Change, Count, Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.changes import advice_with
from heuristics.registry import register
from heuristics.severity import Ascending, Severity
from heuristics.spark.common import SPARK, ratio
from heuristics.spark.failures import failure_changes, task_outcomes_by_stage

ATTEMPTS_USED = re.compile(r"failed (\d+) times")
# Failures another attempt can outlive: lost shuffle output or executors, the network.
TRANSIENT = re.compile(r"FetchFailed|ExecutorLost|TaskResultLost|java\.net\.|SocketTimeout|ConnectException")


@register
class JobFailures(Heuristic["JobFailures.Config"]):
    """Jobs failed, or many of a job's tasks failed before it finished.

    What it measures:
        The job failure rate (failed / (succeeded + failed) jobs) and, per job, the task failure rate
        (failed / (succeeded + failed) task attempts over the job's stages).

    Why it matters:
        A failed job usually means lost work and a failed or partial result. Failed task attempts are
        retried, but each retry repeats work and often signals bad records, memory pressure or flaky nodes.

    What to change:
        Read the failure reasons in the details and in the Spark UI: fix the exception, give tasks more memory,
        or exclude bad nodes (spark.excludeOnFailure.enabled).
        The change is not a setting: it names the most common failure (the exception class, or Spark's
        failure kind) over the failed task attempts of the jobs involved, and the stage where it happened most.
        spark.task.maxFailures = twice the attempts a task had is added only when a job failed because a task
        used up its attempts ("failed N times") on a transient failure (fetch failure, lost executor, network):
        more attempts do not fix an exception the code or data raises every time.

    Differences from Dr. Elephant:
        Dr. Elephant's thresholds (0.1, 0.3, 0.5, 0.5) made SEVERE unreachable; Hindsight uses
        (0.1, 0.3, 0.4, 0.5). Jobs with fewer task attempts than min_job_tasks are not judged on their task
        failure rate (one retried task in a 3-task job is not a 33% problem); killed tasks are not failures.
    """

    code = "spark.job_failures"
    name = "Job failures"
    app_types = SPARK

    class Config(HeuristicConfig, frozen=True):
        job_failure_rate: Ascending
        task_failure_rate: Ascending  # per job
        min_job_tasks: Count  # jobs with fewer task attempts are not judged on their task failure rate; 0: all

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        cfg = self.config
        finished = [j for j in app.jobs.values() if j.status in (JobStatus.SUCCEEDED, JobStatus.FAILED)]
        if not finished:
            return self.no_finding(("Note", "no finished jobs in the log"))
        failed_jobs = [j for j in finished if j.status == JobStatus.FAILED]
        job_rate = ratio(len(failed_jobs), len(finished))
        details = [("Failed jobs", f"{len(failed_jobs)} of {len(finished)} ({format_percent(job_rate)})")]
        observed: Observed = {"jobs": len(finished), "failed_jobs": len(failed_jobs)}
        severity = self.judge(observed, "job_failure_rate", job_rate)

        outcomes = task_outcomes_by_stage(app)
        flagged: list[tuple[Severity, int, float, int, int]] = []  # (severity, job id, rate, failed, tasks)
        counted = 0
        worst_task_rate = 0.0
        for job in sorted(finished, key=lambda j: j.job_id):
            succeeded = sum(outcomes.get(s, (0, 0))[0] for s in job.stage_ids)
            failed = sum(outcomes.get(s, (0, 0))[1] for s in job.stage_ids)
            tasks = succeeded + failed
            task_rate = ratio(failed, tasks)
            job_severity = Severity.NONE
            if tasks >= cfg.min_job_tasks:
                job_severity = self.judge(observed, "task_failure_rate", task_rate)
                worst_task_rate = max(worst_task_rate, task_rate)
            if job_severity >= Severity.MODERATE or job.status == JobStatus.FAILED:
                counted += tasks
            if job_severity >= Severity.LOW:
                flagged.append((job_severity, job.job_id, task_rate, failed, tasks))
            severity = max(severity, job_severity)
        observed["max_job_task_failure_rate"] = worst_task_rate
        for job_severity, job_id, task_rate, failed, tasks in sorted(flagged, key=lambda f: (-f[0], f[1]))[:5]:
            details.append(
                (
                    f"Job {job_id}",
                    f"{failed} of {tasks} tasks failed ({format_percent(task_rate)}, {job_severity.label})",
                )
            )
        for job in failed_jobs[:3]:
            reason = (job.failure_reason or "no reason logged").strip().splitlines()[0][:300]
            details.append((f"Job {job.job_id} failed", reason))
        flagged_ids = {f[1] for f in flagged if f[0] >= Severity.MODERATE} | {j.job_id for j in failed_jobs}
        stage_ids = {s for j in finished if j.job_id in flagged_ids for s in j.stage_ids}
        involved_ids = {f[1] for f in flagged} | {j.job_id for j in failed_jobs}
        involved_stages = {s for j in finished if j.job_id in involved_ids for s in j.stage_ids}
        changes = failure_changes(app, [key for key in app.stages if key[0] in involved_stages])
        for job in failed_jobs:
            attempts = ATTEMPTS_USED.search(job.failure_reason or "")
            if attempts and TRANSIENT.search((job.failure_reason or "")[attempts.end() : attempts.end() + 2000]):
                n = int(attempts.group(1))
                why = f"job {job.job_id} failed when a task used its {n} attempts on a transient failure"
                changes.append(Change("spark.task.maxFailures", str(2 * n), why))
                break
        return self.result(
            severity,
            counted=counted,
            details=details,
            advice=advice_with("Fix the failures", changes)
            if changes
            else "Fix the failure reasons shown (exceptions, memory, bad nodes) so jobs and tasks stop failing.",
            changes=changes,
            observed=observed,
            stages=[key for key in app.stages if key[0] in stage_ids],
        )
