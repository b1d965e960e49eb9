"""What the per-app analysis stores in JSON columns, typed: a stage's task-duration histogram and task times per
host, and an app's parse statistics.

Where a stored result's schema lives (one rule for every analysis): beside the storage that writes it, because
that storage decides what is stored. The research analyses store their library's result *plus* what their service
adds, so their schemas are in ``analyzer/<analysis>/schema.py`` beside ``analyzer/<analysis>/services.py``. The
per-app report is stored by ``analyzer/services.py`` exactly as the pure analysis produced it, nothing added, so
its schemas are here, beside that module. The pure analysis keeps its plain dicts and dataclasses
(``analysis.summaries``, ``analysis.pipeline``): it neither knows nor imports what the database keeps.

* ``StageSummary.task_duration_histogram``: :class:`TaskDurationHistogram`
  (``analysis.summaries.duration_histogram`` of a stage attempt's successful tasks);
* ``StageSummary.host_task_times``: :class:`HostTaskTimes` (``analysis.summaries.host_task_times``);
* ``AnalyzedApp.parse_stats``: :class:`ParseStats` (``appmodel.spark.ParseStats`` as
  ``analysis.pipeline.analyze`` makes it JSON).

Written through ``analyzer.stored_results.validated`` by ``analyzer.services.report_store`` (a shape error fails
the store, as any store error does, so a pipeline change that breaks a shape fails the tests that store apps) and
decoded with ``analyzer.stored_results.decode`` where they are read: ``webui.presenters.charts`` (the flagged
stages' histograms), ``analyzer.stages.services`` (task times per host) and the API's stage rows
(``webui.api.serializers``, whose OpenAPI fields are generated from these Structs).

Which fields have a default: every field. A stage with no successful task (or none with a known host) stores
``{}``, as do the rows stored before a column existed (the columns' default), so ``{}`` is a legitimate stored
value and reads as the empty histogram or no host information; ``ParseStats``' fields all default in the app model
and ``unknown_keys`` was added after the first apps were stored.
"""

from __future__ import annotations

from typing import Annotated

import msgspec


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
