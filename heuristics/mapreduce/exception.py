from __future__ import annotations

import math

from appmodel.mapreduce import MapReduceApp, MRJobStatus, MRPhase, MRPhaseKind, MRTaskStatus
from heuristics.base import Change, Count, Heuristic, HeuristicConfig, HeuristicResult, Observed, PositiveCount
from heuristics.changes import failure_kind
from heuristics.mapreduce.common import MAPREDUCE, PHASE_STAGE
from heuristics.registry import register
from heuristics.severity import Severity


def bounded(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def task_id(app: MapReduceApp, phase: MRPhase, index: int) -> str:
    """Hadoop's task id (task_<cluster>_<job>_m_000042) when the job id has the usual shape."""
    letter = "m" if phase.kind == MRPhaseKind.MAP else "r"
    if app.job_id.startswith("job_"):
        return f"task_{app.job_id[4:]}_{letter}_{index:06d}"
    return f"{phase.kind.value} task {index}"


@register
class MrException(Heuristic["MrException.Config"]):
    """The job failed: why, as Hadoop reported it and as its first failed tasks said.

    What it measures:
        Whether the job failed or was killed. For a failed job it shows the job's diagnostics (Hadoop's own
        summary, such as "Task failed task_..._m_000000 / Job failed as tasks failed") and the error of the
        first tasks that failed (the failed attempt's stack trace or message), each cut to max_text_chars;
        up to max_task_reasons tasks are shown, failed ones before killed ones, earliest first.

    Why it matters:
        A failed job produced nothing, and its other findings describe an unfinished run. The first task error
        is almost always the cause; later failures are often the job being torn down.

    What to change:
        Fix the error the first failed task reports (a bug in the map or reduce code, bad input records,
        OutOfMemoryError: more memory or less per task; a timeout: report progress or raise
        mapreduce.task.timeout), then rerun.
        The change is not a setting: it names the exception class of the first failed task's error (or the
        diagnostics when no task logged one).

    Differences from Dr. Elephant:
        Dr. Elephant showed only the job's diagnostics, which some Hadoop versions leave empty (0.23 writes
        none); Hindsight adds the first failed tasks' own errors, so a failed job always says why. A killed job
        (never analyzed by Dr. Elephant) is LOW with its diagnostics. A failed job is MODERATE with a score of
        0, as in Dr. Elephant.
    """

    code = "mapreduce.exception"
    name = "Exception"
    app_types = MAPREDUCE

    class Config(HeuristicConfig, frozen=True):
        max_text_chars: PositiveCount  # each diagnostic or task error is cut to this length (0 would hide them all)
        max_task_reasons: Count  # failed tasks shown; 0: the job's diagnostics only

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        cfg = self.config
        status = app.status
        if status not in (MRJobStatus.FAILED, MRJobStatus.KILLED):
            note = "the job succeeded" if status == MRJobStatus.SUCCEEDED else f"the job did not end ({status.value})"
            return self.no_finding(("Status", note), job_status=status.value)
        reasons = self.task_reasons(app)
        details: list[tuple[str, str]] = [("Status", status.value)]
        if app.diagnostics.strip():
            details.append(("Diagnostics", bounded(app.diagnostics, cfg.max_text_chars)))
        for name, reason in reasons[: max(cfg.max_task_reasons, 0)]:
            details.append((name, bounded(reason, cfg.max_text_chars)))
        if len(details) == 1:
            details.append(("Diagnostics", "Hadoop recorded no reason for this job's end"))
        first = next((r for _, r in reasons), "") or app.diagnostics
        first_line = first.strip().splitlines()[0] if first.strip() else ""
        observed: Observed = {"job_status": status.value, "failed_tasks_with_reason": len(reasons)}
        # The phases whose tasks failed, as the stages (maps 0, reduces 1) the finding involves.
        stages = [PHASE_STAGE[p.kind] for p in app.phases if p.tasks.failure_reasons or p.num_failed]
        if status == MRJobStatus.KILLED:
            advice = "The job was killed (by a user, the scheduler or a timeout); see the diagnostics."
            return self.result(
                Severity.LOW, counted=0, details=details, advice=advice, observed=observed, stages=stages
            )
        advice = (
            f"Fix what the first failed task reports: {bounded(first_line, 200)}"
            if first_line
            else ("See the diagnostics and the failed tasks' logs.")
        )
        changes = [Change("fix the failure", failure_kind(first), bounded(first_line, 200))] if first.strip() else []
        return self.result(
            Severity.MODERATE,
            counted=0,
            details=details,
            advice=advice,
            observed=observed,
            stages=stages,
            changes=changes,
        )

    @staticmethod
    def task_reasons(app: MapReduceApp) -> list[tuple[str, str]]:
        """(label, error) of tasks that did not succeed: failed before killed, then earliest end first."""
        found: list[tuple[tuple[int, float, int, int], str, str]] = []
        for order, phase in enumerate(app.phases):
            tasks = phase.tasks
            for row, reason in tasks.failure_reasons.items():
                if not (0 <= row < len(tasks)) or not reason.strip():
                    continue
                state = int(tasks.status[row])
                end = int(tasks.task_finish_ms[row]) or int(tasks.finish_ms[row])
                rank = (0 if state == MRTaskStatus.FAILED else 1, float(end) if end > 0 else math.inf, order, row)
                label = "Failed task" if state == MRTaskStatus.FAILED else "Unsuccessful task"
                found.append((rank, f"{label} {task_id(app, phase, int(tasks.index[row]))}", reason))
        found.sort(key=lambda item: item[0])
        return [(label, reason) for _, label, reason in found]
