from __future__ import annotations

from appmodel.formatting import format_ratio
from appmodel.mapreduce import MapReduceApp
from heuristics.base import Heuristic, HeuristicConfig, HeuristicResult, Observed
from heuristics.mapreduce.common import (
    MAPREDUCE,
    counted,
    judge_sides,
    no_tasks,
    not_judged_unless_succeeded,
    phase_stages,
    ratio,
    select_tasks,
)
from heuristics.registry import register
from heuristics.severity import Ascending


@register
class MapperSpill(Heuristic["MapperSpill.Config"]):
    """Mappers write their output records to disk more than once.

    What it measures:
        Over the succeeded map tasks with counters: total SPILLED_RECORDS / total MAP_OUTPUT_RECORDS. A ratio of
        1 means each record went to disk once, as it must; 2 or more means the sort buffer filled up and spills
        were merged again on disk. The severity is capped by the number of map tasks (num_tasks).

    Why it matters:
        Every extra spill writes and re-reads all of a mapper's output through the local disk; for mappers with
        large output that is most of their run time and a heavy load on the nodes' disks.

    What to change:
        Give the sort buffer room for the whole output: raise mapreduce.task.io.sort.mb (and the map heap with
        it), raise mapreduce.map.sort.spill.percent, shrink the output with a Combiner or map-output compression
        (mapreduce.map.output.compress), or give each mapper less input.

    Differences from Dr. Elephant:
        Same ratio and thresholds (2.01, 2.2, 2.5, 3.0). Dr. Elephant scaled the ratio by 10,000 and truncated
        it to an integer; Hindsight compares the ratio itself, which differs only within 0.0001 below a
        threshold. Spills with no output records give an infinite ratio instead of a division error; tasks that
        logged no counters are left out with a note; failed jobs are not judged, as in Dr. Elephant.
    """

    code = "mapreduce.mapper_spill"
    name = "Mapper spill"
    app_types = MAPREDUCE

    class Config(HeuristicConfig, frozen=True):
        spill_ratio: Ascending  # total spilled records / total map output records
        num_tasks: Ascending  # map tasks in the job; caps the ratio's severity

    def evaluate(self, app: MapReduceApp) -> HeuristicResult:
        if (skipped := not_judged_unless_succeeded(self, app)) is not None:
            return skipped
        phase = app.maps
        selection = select_tasks(phase, counters=True, timed=False)
        if not selection.count:
            return no_tasks(self, phase, selection, "counters")
        rows = selection.rows
        spilled = int(phase.tasks.spilled_records[rows].sum())
        output = int(phase.tasks.map_output_records[rows].sum())
        spill_ratio = ratio(spilled, output)
        num_tasks = counted(phase)
        observed: Observed = {"tasks": num_tasks, "spilled_records": spilled, "output_records": output}
        severity, _ = judge_sides(self, observed, [{"spill_ratio": spill_ratio, "num_tasks": float(num_tasks)}])
        details = [
            ("Number of tasks", str(num_tasks)),
            ("Spilled records", f"{spilled:,}"),
            ("Output records", f"{output:,}"),
            ("Spilled / output records", format_ratio(spill_ratio, 3)),
            *selection.notes,
        ]
        return self.result(
            severity,
            counted=num_tasks,
            details=details,
            advice="Raise mapreduce.task.io.sort.mb (with the heap), add a Combiner or compress map output.",
            observed=observed,
            stages=phase_stages(phase, severity),
        )
