"""An independent population of recurring, production-sized Spark apps, written as real event logs (issue 16, item 5).

The yardstick the research analyses (slowdown attribution, straggler hosts, executor anomalies, stage
localization) were *not* built with. It shares no code with the engine (it imports nothing from ``analysis``,
``heuristics``, ``fetchers``, ``appmodel`` or ``analyzer``; a test checks) nor with the other generators
(``benchmarks/attribution/generate_histories.py``, ``benchmarks/impact/generate.py``): its own templates, its own
cluster and scheduling model, its own cause model. Only the event shapes are copied, from logs real Spark 4.1.1
wrote (``samples/cluster``): the listener events, field names and nesting of ``SparkListenerTaskEnd``'s
``Task Metrics`` and ``Task Info``.

The world it simulates:

* **A fleet** of 50 hosts in three hardware generations. Every task on a generation runs uniformly slower or
  faster (x0.93, x1.00, x1.15 of the middle generation): real, permanent differences that are not straggling.
  A few hosts are truly bad (x1.5-2.0) on a few consecutive days only.
* **Concurrent apps share hosts.** Each app's executors are placed on distinct hosts; a task runs slower by 4% for
  every other executor that shares its host at that moment.
* **24 recurring templates** of six shapes (iterative ML, wide joins, many small stages, streaming-like
  micro-batches, classic scan/aggregate/write ETL, sessionizing with a big sort), scheduled by an Airflow-like
  scheduler (daily or twice daily), with data that varies by weekday and grows over the weeks.
* **Injected causes** (about one run in five, never in a template's first runs), with the truth written to
  ``manifest.json``: more data, byte skew, a slow host (longer tasks on that host's executor only, bytes even),
  task failures with retries, GC pressure, fewer executors or a config change, queue/cluster contention (late
  executors and busy neighbours: extra ad-hoc apps), driver-side idle time, and unexplained slowdowns (one stage
  does more work per row: nothing an attribution feature measures moves).
* **Distractors** that move a lot and cost nothing, on causes and on plain runs: output bytes x4-10 (written by a
  final commit that the tasks do not wait on longer), killed speculative copies, a bigger driver memory setting,
  a suffix on the app name.

    .venv/bin/python benchmarks/independent/generate.py --out var/independent/logs            # ~600 apps
    .venv/bin/python benchmarks/independent/generate.py --out /tmp/x --scale small            # a handful, seconds

Seeded: the same arguments write the same bytes (up to the compressor).
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

MB = 1024 * 1024
SPARK_VERSIONS = ("3.5.3", "4.0.1")
GENERATIONS = (0.93, 1.00, 1.15)  # task-time factor of each hardware generation (the middle one is 1.0)
HOST_CORES = 32
CONTENTION_PER_NEIGHBOUR = 0.04  # slower per other executor on the same host
DAY_MS = 86_400_000

# The injected causes, and the cause code of the product's registry each one should be attributed to.
CAUSES: dict[str, str | None] = {
    "more_data": "data_volume",
    "byte_skew": "skew",
    "slow_host": "host_health",
    "failures": "failures",
    "gc_pressure": "memory_gc",
    "fewer_executors": "config",
    "contention": "contention",
    "driver_idle": "driver",  # the API's cause code for wall time with no stage running (issue 16 added it)
    "unexplained": None,  # nothing measured moves: the honest answer is Low confidence
}
DISTRACTORS = ("output_bytes", "speculative_killed", "driver_memory", "name_suffix")


# --- The population -------------------------------------------------------------------------------------------


@dataclass
class Stage:
    name: str
    kind: str  # scan | shuffle | result
    tasks: int
    mb: float  # input (scan) or shuffle read (shuffle/result) in MiB, for the whole stage, usual day
    ms_per_mb: float  # task time per MiB on a 1.0 host
    shuffle_out: float  # shuffle written per MiB read
    gc_share: float


@dataclass
class Job:
    stages: list[Stage]
    gap_ms: int  # driver time before the job is submitted (planning, listing files)


@dataclass
class Template:
    key: str  # dag/task
    shape: str
    app_name: str
    user: str
    queue: str
    version: str
    executors: int
    cores: int
    memory_mb: int
    driver_mb: int
    jobs: list[Job]
    hours: tuple[int, ...]  # scheduled hours of day (UTC)
    weekend: float  # data factor on Saturdays and Sundays
    growth: float  # data growth per day
    size: float = 1.0  # tasks and bytes of every stage, times this (the scale's knob)


@dataclass
class Host:
    name: str
    generation: int
    bad: dict[int, float] = field(default_factory=dict)  # day -> factor


def build_fleet(rng: random.Random, n_hosts: int, days: int, n_bad: int) -> list[Host]:
    sizes = [round(n_hosts * 0.36), round(n_hosts * 0.34)]
    sizes.append(n_hosts - sum(sizes))
    hosts: list[Host] = []
    for gen, size in enumerate(sizes):
        for _ in range(size):
            hosts.append(Host("", gen))
    rng.shuffle(hosts)  # names say nothing of the generation
    for i, h in enumerate(hosts):
        h.name = f"wn{i + 1:03d}.dc2.example.net"
    for h in rng.sample(hosts, n_bad):
        length = rng.randint(2, 4)
        first = rng.randint(1, max(1, days - length - 1))
        factor = rng.uniform(1.5, 2.0)
        for d in range(first, min(days, first + length)):
            h.bad[d] = factor
    return hosts


def _stage(rng: random.Random, name: str, kind: str, tasks: int, mb: float, out: float = 0.6) -> Stage:
    return Stage(
        name=name,
        kind=kind,
        tasks=max(2, tasks),
        mb=mb,
        ms_per_mb=rng.uniform(25.0, 90.0) if kind == "scan" else rng.uniform(40.0, 140.0),
        shuffle_out=out if kind != "result" else 0.0,
        gc_share=rng.uniform(0.02, 0.06),
    )


def build_template(rng: random.Random, index: int) -> Template:
    shapes = ("iterative_ml", "wide_join", "many_small_stages", "micro_batches", "etl", "sessionize")
    shape = shapes[index % len(shapes)]
    domain = ("billing", "ads", "search", "fraud", "catalog", "geo", "payments", "growth")[index % 8]
    jobs: list[Job] = []
    gb = rng.uniform(6, 40)
    if shape == "iterative_ml":
        feat = _stage(rng, f"parquet at FeatureLoader.scala:{rng.randint(40, 90)}", "scan", int(gb * 8), gb * 1024, 0.3)
        jobs.append(Job([feat, _stage(rng, "count at Trainer.scala:58", "result", 200, gb * 300)], 4000))
        for it in range(rng.randint(8, 18)):
            agg = _stage(rng, f"treeAggregate at GradientDescent.scala:{230 + it % 3}", "scan", 200, gb * 250, 0.01)
            agg.ms_per_mb *= 0.4
            jobs.append(Job([agg], rng.randint(300, 1200)))
        jobs.append(Job([_stage(rng, "save at ModelWriter.scala:77", "result", 20, 200)], 2000))
    elif shape == "wide_join":
        scans = [
            _stage(rng, f"scan {t} at JoinJob.scala:{100 + k}", "scan", int(gb * 4 * w), gb * 512 * w)
            for k, (t, w) in enumerate([("orders", 1.0), ("items", 0.6), ("users", 0.2), ("prices", 0.3), ("fx", 0.05)])
        ]
        total = sum(s.mb * s.shuffle_out for s in scans)
        join1 = _stage(rng, "sortMergeJoin at JoinJob.scala:188", "shuffle", 400, total * 0.7, 0.5)
        join2 = _stage(rng, "sortMergeJoin at JoinJob.scala:203", "shuffle", 400, total * 0.45, 0.3)
        out = _stage(rng, "insertInto at JoinJob.scala:240", "result", 200, total * 0.2)
        jobs.append(Job([*scans, join1, join2, out], 6000))
    elif shape == "many_small_stages":
        for j in range(rng.randint(25, 45)):
            a = _stage(rng, f"collect at Reconcile.scala:{300 + j}", "scan", rng.randint(4, 16), rng.uniform(40, 200))
            b = _stage(rng, f"collect at Reconcile.scala:{300 + j}", "result", rng.randint(2, 8), a.mb * 0.3)
            jobs.append(Job([a, b], rng.randint(200, 900)))
    elif shape == "micro_batches":
        for _ in range(rng.randint(30, 60)):
            a = _stage(rng, "foreachBatch at Ingest.scala:64", "scan", rng.randint(8, 24), rng.uniform(200, 700))
            b = _stage(rng, "foreachBatch at Ingest.scala:71", "result", 8, a.mb * 0.5)
            jobs.append(Job([a, b], rng.randint(800, 2500)))
    elif shape == "etl":
        scan = _stage(rng, "parquet at DailyEtl.scala:41", "scan", int(gb * 8), gb * 1024)
        agg = _stage(rng, "hashAggregate at DailyEtl.scala:88", "shuffle", 300, scan.mb * scan.shuffle_out, 0.4)
        out = _stage(rng, "save at DailyEtl.scala:120", "result", 100, agg.mb * 0.4)
        jobs.append(Job([scan, agg, out], 5000))
        jobs.append(Job([_stage(rng, "count at DailyEtl.scala:131", "result", 50, 300)], 1500))
    else:  # sessionize
        scan = _stage(rng, "textFile at Sessionize.scala:33", "scan", int(gb * 8), gb * 1024, 0.9)
        sort = _stage(rng, "sortBy at Sessionize.scala:57", "shuffle", 600, scan.mb * 0.9, 0.5)
        sess = _stage(rng, "mapPartitions at Sessionize.scala:71", "shuffle", 600, sort.mb * 0.5, 0.3)
        out = _stage(rng, "saveAsTable at Sessionize.scala:95", "result", 100, sess.mb * 0.3)
        jobs.append(Job([scan, sort], 3000))
        jobs.append(Job([sess, out], 1500))
    twice = index % 4 == 3
    return Template(
        key=f"{domain}_{shape}_{index:02d}",
        shape=shape,
        app_name=f"{domain}.{shape}.v{rng.randint(1, 4)}",
        user=rng.choice(("svc-etl", "svc-ml", "svc-bi")),
        queue=rng.choice(("root.batch", "root.ml", "root.reporting")),
        version=rng.choice(SPARK_VERSIONS),
        executors=rng.choice((8, 10, 12, 16, 20, 24)),
        cores=rng.choice((2, 4, 4, 5)),
        memory_mb=rng.choice((4096, 8192, 12288)),
        driver_mb=rng.choice((2048, 4096)),
        jobs=jobs,
        hours=(rng.randint(0, 11), rng.randint(12, 23)) if twice else (rng.randint(0, 23),),
        weekend=rng.uniform(0.5, 0.9),
        growth=rng.uniform(0.0, 0.012),
    )


@dataclass
class Run:
    template: Template
    start_ms: int
    day: int
    number: int
    cause: str | None = None
    distractors: list[str] = field(default_factory=list)
    data: float = 1.0  # data factor of the day
    adhoc: bool = False


def schedule(rng: random.Random, templates: list[Template], days: int, t0: int, cause_rate: float) -> list[Run]:
    runs: list[Run] = []
    causes = list(CAUSES)
    for t in templates:
        n = 0
        for day in range(days):
            weekday = (day + 3) % 7  # t0 is a Thursday
            for hour in t.hours:
                start = t0 + day * DAY_MS + hour * 3_600_000 + rng.randint(0, 600_000)
                data = (t.weekend if weekday >= 5 else 1.0) * (1 + t.growth * day) * rng.lognormvariate(0, 0.06)
                r = Run(t, start, day, n, data=data)
                if n >= 5 and rng.random() < cause_rate:
                    r.cause = rng.choice(causes)
                if rng.random() < 0.15:
                    r.distractors = rng.sample(DISTRACTORS, rng.randint(1, 2))
                runs.append(r)
                n += 1
    return runs


# --- One app: its cluster resources, its tasks, its events ---------------------------------------------------


class Cluster:
    """Which hosts hold which executors when: the neighbours that slow a task."""

    def __init__(self, hosts: list[Host]) -> None:
        self.hosts = hosts
        self.busy: dict[str, list[tuple[int, int]]] = {h.name: [] for h in hosts}

    def neighbours(self, host: str, at: int) -> int:
        return sum(1 for s, e in self.busy[host] if s <= at < e)

    def place(self, rng: random.Random, n: int, day: int, avoid_bad: bool) -> list[Host]:
        pool = [h for h in self.hosts if not (avoid_bad and day in h.bad)]
        return rng.sample(pool, min(n, len(pool)))


@dataclass
class Attempt:
    task_id: int
    index: int
    attempt: int
    executor: str
    host: str
    launch: int
    finish: int
    reason: str  # Success | ExceptionFailure | TaskKilled
    speculative: bool
    in_mb: float
    shuffle_mb: float
    out_mb: float
    gc_ms: int
    cpu_share: float


class App:
    def __init__(
        self, run: Run, hosts: list[Host], cluster: Cluster, rng: random.Random, app_id: str, *, twin: bool = False
    ) -> None:
        # A twin is the same run without its cause (and on healthy hosts): its runtime is the truth's "usual".
        self.run, self.rng, self.cluster, self.app_id, self.twin = run, rng, cluster, app_id, twin
        t = run.template
        self.executors = t.executors
        self.cores = t.cores
        self.memory_mb = t.memory_mb
        if run.cause == "fewer_executors":
            if rng.random() < 0.5:
                self.executors = max(2, t.executors // rng.choice((2, 3)))
            else:
                self.executors = max(2, t.executors // 2)
                self.cores = max(1, t.cores // 2)
        self.placed = hosts[: self.executors]
        self.truth: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self.next_task = 0

    def host_factor(self, h: Host, at: int) -> float:
        f = GENERATIONS[h.generation] * (1.0 if self.twin else h.bad.get(self.run.day, 1.0))
        return f * (1 + CONTENTION_PER_NEIGHBOUR * self.cluster.neighbours(h.name, at))

    def simulate(self) -> dict[str, Any]:
        r, rng, t = self.run, self.rng, self.run.template
        start = r.start_ms
        submit_delay = rng.randint(1500, 4000)
        queue_wait = rng.randint(2_000, 15_000)
        slow_all = 1.0
        if r.cause == "contention":
            queue_wait = rng.randint(30_000, 180_000)
            slow_all = rng.uniform(1.15, 1.35)
        first_exec = start + submit_delay + queue_wait
        execs = [(str(i + 1), h, first_exec + rng.randint(0, 4000)) for i, h in enumerate(self.placed)]
        data = r.data * (rng.uniform(2.0, 3.5) if r.cause == "more_data" else 1.0)
        gc_extra = rng.uniform(0.25, 0.45) if r.cause == "gc_pressure" else 0.0
        stages = [s for j in t.jobs for s in j.stages]
        skew_stage = self._heaviest(stages, ("shuffle", "scan")) if r.cause == "byte_skew" else None
        # Unexplained: one operator does more work per row wherever it runs (every stage of that name), so
        # runtime and CPU time grow while bytes, tasks, GC share, hosts and waits stay as usual.
        slow_name = self._heaviest_name(stages) if r.cause == "unexplained" else None
        slow_factor = rng.uniform(1.8, 2.6)
        fail_rate = rng.uniform(0.1, 0.25)
        # Failures: a flaky network or disk fails a share of the attempts of every stage that reads or shuffles
        # much data (late in each attempt, so its work is lost); each is retried once and succeeds.
        fail_stages = (
            {k for k, s in enumerate(stages) if s.kind in ("scan", "shuffle")} if r.cause == "failures" else set()
        )
        idle_gaps: dict[int, int] = {}
        if r.cause == "driver_idle":
            for j in rng.sample(range(len(t.jobs)), min(len(t.jobs), rng.randint(1, 3))):
                idle_gaps[j] = rng.randint(20_000, 60_000)  # e.g. a JDBC read or a file listing on the driver
        self.truth = {
            "skewed_stage": None,
            "slowed_stages": [],
            "slow_host_executors": [e for e, h, _ in execs if r.day in h.bad],
            "driver_idle_ms": sum(idle_gaps.values()),
            "queue_wait_ms": queue_wait,
        }
        # (free at, tie-break, executor, slot): a random tie-break spreads a stage's first tasks over the
        # executors, as Spark's offers do, instead of filling executor 1 first.
        free: list[tuple[int, float, str, int]] = []
        for e, _, at in execs:
            for c in range(self.cores):
                free.append((at, rng.random(), e, c))
        heapq.heapify(free)
        host_of = {e: h for e, h, _ in execs}
        now = first_exec + 2000
        stage_id = 0
        for j, job in enumerate(t.jobs):
            now += job.gap_ms + idle_gaps.get(j, 0)
            self.events.append(
                {
                    "_t": now,
                    "_kind": "job_start",
                    "job": j,
                    "stages": list(range(stage_id, stage_id + len(job.stages))),
                    "names": [s.name for s in job.stages],
                    "ntasks": [self._n_tasks(s, data) for s in job.stages],
                }
            )
            for s in job.stages:
                n = self._n_tasks(s, data)
                sizes = [rng.lognormvariate(0, 0.25) for _ in range(n)]
                if s is skew_stage:
                    hot = rng.sample(range(n), max(1, n // 50))
                    for i in hot:
                        sizes[i] *= rng.uniform(8, 15)
                    self.truth["skewed_stage"] = stage_id
                norm = sum(sizes) / n
                mb_total = s.mb * data * t.size
                per_row = slow_factor if s.name == slow_name else 1.0
                if s.name == slow_name:
                    self.truth["slowed_stages"].append(stage_id)
                    self.truth["slowed_stage_name"] = s.name
                submitted = now
                self.events.append({"_t": submitted, "_kind": "stage_submit", "stage": stage_id, "spec": s, "n": n})
                free = [(max(a, now), rng.random(), e, c) for a, _, e, c in free]
                heapq.heapify(free)
                pending = list(range(n))
                retries: list[int] = []
                attempts_of: dict[int, int] = {}
                end = now
                while pending or retries:
                    i = retries.pop(0) if retries else pending.pop(0)
                    at, _, e, c = heapq.heappop(free)
                    h = host_of[e]
                    mb = mb_total * sizes[i] / norm / n
                    base = 400 + mb * s.ms_per_mb * per_row
                    dur = base * self.host_factor(h, at) * slow_all * rng.lognormvariate(0, 0.12)
                    gc_share = s.gc_share + gc_extra
                    dur = dur / (1 - gc_extra) if gc_extra else dur
                    attempt = attempts_of.get(i, 0)
                    attempts_of[i] = attempt + 1
                    fail = stage_id in fail_stages and attempt == 0 and rng.random() < fail_rate
                    if fail:
                        # It fails late, after the shuffle client's retries (spark.shuffle.io.maxRetries 3 x
                        # retryWait 5 s): the work and the wait are lost, and the retry starts over.
                        dur = dur * rng.uniform(0.5, 1.0) + rng.uniform(5_000, 15_000)
                    d = max(50, int(dur))
                    a = Attempt(
                        self.next_task,
                        i,
                        attempt,
                        e,
                        h.name,
                        at,
                        at + d,
                        "ExceptionFailure" if fail else "Success",
                        False,
                        mb if s.kind == "scan" else 0.0,
                        mb if s.kind != "scan" else 0.0,
                        mb * s.shuffle_out,
                        int(d * gc_share),
                        rng.uniform(0.7, 0.9),
                    )
                    self.next_task += 1
                    self.events.append({"_t": at, "_kind": "task_start", "stage": stage_id, "a": a})
                    self.events.append(
                        {"_t": a.finish, "_kind": "task_end", "stage": stage_id, "a": a, "skind": s.kind}
                    )
                    heapq.heappush(free, (a.finish + rng.randint(2, 30), rng.random(), e, c))
                    end = max(end, a.finish)
                    if fail:
                        retries.append(i)
                    elif "speculative_killed" in r.distractors and rng.random() < 0.12:
                        # A speculative copy started late and killed when the original won: costs no wall time.
                        k_start = a.launch + int(d * 0.6)
                        other = rng.choice(execs)  # a copy runs elsewhere, and takes no slot the stage waits for
                        k = Attempt(
                            self.next_task,
                            i,
                            attempt + 1,
                            other[0],
                            other[1].name,
                            k_start,
                            a.finish + 5,
                            "TaskKilled",
                            True,
                            0.0,
                            0.0,
                            0.0,
                            0,
                            0.5,
                        )
                        self.next_task += 1
                        self.events.append({"_t": k.launch, "_kind": "task_start", "stage": stage_id, "a": k})
                        self.events.append(
                            {"_t": k.finish, "_kind": "task_end", "stage": stage_id, "a": k, "skind": s.kind}
                        )
                self.events.append(
                    {"_t": end + 5, "_kind": "stage_done", "stage": stage_id, "spec": s, "n": n, "submitted": submitted}
                )
                now = end + rng.randint(20, 200)
                stage_id += 1
            self.events.append({"_t": now, "_kind": "job_end", "job": j})
        app_end = now + rng.randint(1500, 6000)
        if not self.twin:
            for _, h, at in execs:
                self.cluster.busy[h.name].append((at, app_end))
        self.execs = execs
        self.end_ms = app_end
        self.first_exec = first_exec
        return self.truth

    def _n_tasks(self, s: Stage, data: float) -> int:
        # Scans split by input size (like file splits); shuffles keep their configured partition count.
        size = self.run.template.size
        return max(2, round(s.tasks * data * size)) if s.kind == "scan" else max(2, round(s.tasks * size))

    def _heaviest_name(self, stages: list[Stage]) -> str:
        work: dict[str, float] = {}
        for s in stages:
            work[s.name] = work.get(s.name, 0.0) + s.mb * s.ms_per_mb + 400 * s.tasks
        return max(work, key=lambda name: work[name])

    def _heaviest(self, stages: list[Stage], kinds: tuple[str, ...]) -> Stage:
        return max((s for s in stages if s.kind in kinds), key=lambda s: s.mb * s.ms_per_mb)


# --- Event shapes (from logs real Spark 4.1.1 wrote) ----------------------------------------------------------


def _rdd(stage: int, name: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "RDD ID": stage * 3 + 1,
            "Name": "MapPartitionsRDD",
            "Callsite": name,
            "Parent IDs": [stage * 3],
            "Storage Level": {
                "Use Disk": False,
                "Use Memory": False,
                "Use Off Heap": False,
                "Deserialized": False,
                "Replication": 1,
            },
            "Barrier": False,
            "DeterministicLevel": "DETERMINATE",
            "Number of Partitions": n,
            "Number of Cached Partitions": 0,
            "Memory Size": 0,
            "Disk Size": 0,
        }
    ]


def _stage_info(stage: int, name: str, n: int, submitted: int | None, completed: int | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "Stage ID": stage,
        "Stage Attempt ID": 0,
        "Stage Name": name,
        "Number of Tasks": n,
        "RDD Info": _rdd(stage, name, n),
        "Parent IDs": [stage - 1] if stage else [],
        "Details": f"org.apache.spark.sql.Dataset.{name.split(' ')[0]}(Dataset.scala:3566)",
        "Accumulables": [],
        "Resource Profile Id": 0,
        "Shuffle Push Enabled": False,
        "Shuffle Push Mergers Count": 0,
    }
    if submitted is not None:
        info["Submission Time"] = submitted
    if completed is not None:
        info["Completion Time"] = completed
    return info


def _task_info(a: Attempt, finished: bool) -> dict[str, Any]:
    return {
        "Task ID": a.task_id,
        "Index": a.index,
        "Attempt": a.attempt,
        "Partition ID": a.index,
        "Launch Time": a.launch,
        "Executor ID": a.executor,
        "Host": a.host,
        "Locality": "NODE_LOCAL" if a.in_mb else "PROCESS_LOCAL",
        "Speculative": a.speculative,
        "Getting Result Time": 0,
        "Finish Time": a.finish if finished else 0,
        "Failed": finished and a.reason == "ExceptionFailure",
        "Killed": finished and a.reason == "TaskKilled",
        "Accumulables": [],
    }


def _task_end(a: Attempt, stage: int, skind: str, out_factor: float) -> dict[str, Any]:
    d = a.finish - a.launch
    run = max(1, d - 12)
    ok = a.reason == "Success"
    fetch_wait = int(run * 0.04) if a.shuffle_mb and ok else 0
    shuffle_bytes = int(a.shuffle_mb * MB) if ok else 0
    out_bytes = int(a.out_mb * MB * 0.25 * out_factor) if skind == "result" and ok else 0
    write_bytes = int(a.out_mb * MB) if skind != "result" and ok else 0
    if a.reason == "Success":
        reason: dict[str, Any] = {"Reason": "Success"}
    elif a.reason == "TaskKilled":
        reason = {"Reason": "TaskKilled", "Kill Reason": "another attempt succeeded", "Accumulator Updates": []}
    else:
        reason = {
            "Reason": "ExceptionFailure",
            "Class Name": "java.io.IOException",
            "Description": "Connection reset by peer",
            "Stack Trace": [],
            "Full Stack Trace": "java.io.IOException: Connection reset by peer\n\tat sun.nio.ch.SocketDispatcher.read0("
            "Native Method)",
            "Accumulator Updates": [],
        }
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage,
        "Stage Attempt ID": 0,
        "Task Type": "ResultTask" if skind == "result" else "ShuffleMapTask",
        "Task End Reason": reason,
        "Task Info": _task_info(a, True),
        "Task Executor Metrics": {
            "JVMHeapMemory": 0,
            "JVMOffHeapMemory": 0,
            "MinorGCCount": 0,
            "MinorGCTime": 0,
            "MajorGCCount": 0,
            "MajorGCTime": 0,
            "TotalGCTime": 0,
        },
        "Task Metrics": {
            "Executor Deserialize Time": 10,
            "Executor Deserialize CPU Time": 4_000_000,
            "Executor Run Time": run,
            "Executor CPU Time": int(run * a.cpu_share * 1_000_000),
            "Peak Execution Memory": int(a.shuffle_mb * MB * 0.5),
            "Peak On Heap Execution Memory": int(a.shuffle_mb * MB * 0.5),
            "Peak Off Heap Execution Memory": 0,
            "Result Size": 2100,
            "JVM GC Time": a.gc_ms,
            "Result Serialization Time": 1,
            "Memory Bytes Spilled": 0,
            "Disk Bytes Spilled": 0,
            "Shuffle Read Metrics": {
                "Remote Blocks Fetched": 40 if shuffle_bytes else 0,
                "Local Blocks Fetched": 4 if shuffle_bytes else 0,
                "Fetch Wait Time": fetch_wait,
                "Remote Bytes Read": int(shuffle_bytes * 0.9),
                "Remote Bytes Read To Disk": 0,
                "Local Bytes Read": shuffle_bytes - int(shuffle_bytes * 0.9),
                "Total Records Read": shuffle_bytes // 120,
                "Remote Requests Duration": fetch_wait,
                "Push Based Shuffle": {
                    "Corrupt Merged Block Chunks": 0,
                    "Merged Fetch Fallback Count": 0,
                    "Merged Remote Blocks Fetched": 0,
                    "Merged Local Blocks Fetched": 0,
                    "Merged Remote Chunks Fetched": 0,
                    "Merged Local Chunks Fetched": 0,
                    "Merged Remote Bytes Read": 0,
                    "Merged Local Bytes Read": 0,
                    "Merged Remote Requests Duration": 0,
                },
            },
            "Shuffle Write Metrics": {
                "Shuffle Bytes Written": write_bytes,
                "Shuffle Write Time": write_bytes // 20,
                "Shuffle Records Written": write_bytes // 120,
            },
            "Input Metrics": {"Bytes Read": int(a.in_mb * MB) if ok else 0, "Records Read": int(a.in_mb * MB) // 150},
            "Output Metrics": {"Bytes Written": out_bytes, "Records Written": out_bytes // 200},
            "Updated Blocks": [],
        },
    }


def app_events(app: App, number: int) -> tuple[list[dict[str, Any]], str]:
    r, t = app.run, app.run.template
    name = t.app_name + ("_backfill" if "name_suffix" in r.distractors else "")
    driver_mb = t.driver_mb * (3 if "driver_memory" in r.distractors else 1)
    out_factor = 7.0 if "output_bytes" in r.distractors else 1.0
    run_date = time.strftime("%Y-%m-%dT%H:00:00+00:00", time.gmtime(r.start_ms / 1000))
    props = {
        "spark.master": "yarn",
        "spark.submit.deployMode": "cluster",
        "spark.app.name": name,
        "spark.app.id": app.app_id,
        "spark.app.submitTime": str(r.start_ms - 900),
        "spark.app.startTime": str(r.start_ms),
        "spark.executor.instances": str(app.executors),
        "spark.executor.cores": str(app.cores),
        "spark.executor.memory": f"{app.memory_mb}m",
        "spark.driver.memory": f"{driver_mb}m",
        "spark.dynamicAllocation.enabled": "false",
        "spark.yarn.queue": t.queue,
        "spark.sql.shuffle.partitions": "400",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.compression.codec": "zstd",
    }
    if not r.adhoc:
        dag, task = t.key.rsplit("_", 1)[0], t.key
        props.update(
            {
                "spark.airflow.ctx.dag_id": dag,
                "spark.airflow.ctx.task_id": task,
                "spark.airflow.ctx.dag_run_id": f"scheduled__{run_date}",
                "spark.airflow.ctx.try_number": "1",
            }
        )
    head: list[dict[str, Any]] = [
        {"Event": "SparkListenerLogStart", "Spark Version": t.version},
        {
            "Event": "SparkListenerResourceProfileAdded",
            "Resource Profile Id": 0,
            "Executor Resource Requests": {
                "cores": {"Resource Name": "cores", "Amount": app.cores, "Discovery Script": "", "Vendor": ""},
                "memory": {"Resource Name": "memory", "Amount": app.memory_mb, "Discovery Script": "", "Vendor": ""},
                "offHeap": {"Resource Name": "offHeap", "Amount": 0, "Discovery Script": "", "Vendor": ""},
            },
            "Task Resource Requests": {"cpus": {"Resource Name": "cpus", "Amount": 1.0}},
        },
        {
            "Event": "SparkListenerExecutorAdded",
            "Timestamp": r.start_ms + 200,
            "Executor ID": "driver",
            "Executor Info": {
                "Host": "gw01.dc2.example.net",
                "Total Cores": 0,
                "Log Urls": {},
                "Attributes": {},
                "Resources": {},
                "Resource Profile Id": 0,
            },
        },
        {
            "Event": "SparkListenerBlockManagerAdded",
            "Block Manager ID": {"Executor ID": "driver", "Host": "gw01.dc2.example.net", "Port": 40261},
            "Maximum Memory": driver_mb * MB // 2,
            "Timestamp": r.start_ms + 210,
            "Maximum Onheap Memory": driver_mb * MB // 2,
            "Maximum Offheap Memory": 0,
        },
        {
            "Event": "SparkListenerEnvironmentUpdate",
            "JVM Information": {
                "Java Home": "/usr/lib/jvm/java-17",
                "Java Version": "17.0.12",
                "Scala Version": "version 2.12.18",
            },
            "Spark Properties": props,
            "Hadoop Properties": {},
            "System Properties": {"user.timezone": "Etc/UTC"},
            "Metrics Properties": {},
            "Classpath Entries": {},
        },
        {
            "Event": "SparkListenerApplicationStart",
            "App Name": name,
            "App ID": app.app_id,
            "Timestamp": r.start_ms,
            "User": t.user,
            "App Attempt ID": "1",
        },
    ]
    timed: list[tuple[int, int, dict[str, Any]]] = []
    seq = 0

    def put(ts: int, event: dict[str, Any]) -> None:
        nonlocal seq
        timed.append((ts, seq, event))
        seq += 1

    for e, h, at in app.execs:
        put(
            at,
            {
                "Event": "SparkListenerExecutorAdded",
                "Timestamp": at,
                "Executor ID": e,
                "Executor Info": {
                    "Host": h.name,
                    "Total Cores": app.cores,
                    "Log Urls": {"stdout": f"http://{h.name}:8042/node/containerlogs/container_{e}/stdout"},
                    "Attributes": {},
                    "Resources": {},
                    "Resource Profile Id": 0,
                    "Registration Time": at,
                },
            },
        )
        put(
            at + 1,
            {
                "Event": "SparkListenerBlockManagerAdded",
                "Block Manager ID": {"Executor ID": e, "Host": h.name, "Port": 7337},
                "Maximum Memory": app.memory_mb * MB // 2,
                "Timestamp": at + 1,
                "Maximum Onheap Memory": app.memory_mb * MB // 2,
                "Maximum Offheap Memory": 0,
            },
        )
    for ev in app.events:
        kind, ts = ev["_kind"], ev["_t"]
        if kind == "job_start":
            infos = [
                _stage_info(s, nm, n, None, None)
                for s, nm, n in zip(ev["stages"], ev["names"], ev["ntasks"], strict=True)
            ]
            put(
                ts,
                {
                    "Event": "SparkListenerJobStart",
                    "Job ID": ev["job"],
                    "Submission Time": ts,
                    "Stage Infos": infos,
                    "Stage IDs": ev["stages"],
                    "Properties": {"spark.job.description": t.key},
                },
            )
        elif kind == "stage_submit":
            put(
                ts,
                {
                    "Event": "SparkListenerStageSubmitted",
                    "Stage Info": _stage_info(ev["stage"], ev["spec"].name, ev["n"], ts, None),
                    "Properties": {},
                },
            )
        elif kind == "task_start":
            put(
                ts,
                {
                    "Event": "SparkListenerTaskStart",
                    "Stage ID": ev["stage"],
                    "Stage Attempt ID": 0,
                    "Task Info": _task_info(ev["a"], False),
                },
            )
        elif kind == "task_end":
            put(ts, _task_end(ev["a"], ev["stage"], ev["skind"], out_factor))
        elif kind == "stage_done":
            put(
                ts,
                {
                    "Event": "SparkListenerStageCompleted",
                    "Stage Info": _stage_info(ev["stage"], ev["spec"].name, ev["n"], ev["submitted"], ts),
                },
            )
        elif kind == "job_end":
            put(
                ts,
                {
                    "Event": "SparkListenerJobEnd",
                    "Job ID": ev["job"],
                    "Completion Time": ts,
                    "Job Result": {"Result": "JobSucceeded"},
                },
            )
    timed.sort(key=lambda x: (x[0], x[1]))
    tail = [{"Event": "SparkListenerApplicationEnd", "Timestamp": app.end_ms, "ExitCode": 0}]
    return head + [e for _, _, e in timed] + tail, name


# --- Writing ----------------------------------------------------------------------------------------------------

SCALES: dict[str, dict[str, int]] = {
    "small": {"templates": 4, "days": 8, "hosts": 12, "bad": 1, "size_pct": 5, "max_executors": 5},
    "default": {"templates": 24, "days": 21, "hosts": 50, "bad": 3, "size_pct": 40, "max_executors": 24},
}


def generate(
    out: Path,
    *,
    scale: str = "default",
    seed: int = 16,
    end_ms: int | None = None,
    days: int | None = None,
    templates: int | None = None,
    cause_rate: float = 0.22,
) -> dict[str, Any]:
    """Write the population into ``out`` (event logs, mtimes at each app's end) and its truth, ``manifest.json``."""
    p = dict(SCALES[scale])
    if days is not None:
        p["days"] = days
    if templates is not None:
        p["templates"] = templates
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    end_ms = end_ms if end_ms is not None else int(time.time() * 1000) - 3 * 3_600_000
    t0 = (end_ms - p["days"] * DAY_MS) // DAY_MS * DAY_MS
    hosts = build_fleet(rng, p["hosts"], p["days"], p["bad"])
    temps = [build_template(rng, i) for i in range(p["templates"])]
    for t in temps:
        t.size = p["size_pct"] / 100
        t.executors = min(t.executors, p["max_executors"])
    rate = cause_rate if scale != "small" else 0.45
    runs = schedule(rng, temps, p["days"], t0, rate)
    if scale == "small":  # every cause at least once, on runs after the first five of their template
        late = [r for r in runs if r.number >= 5]
        for r, cause in zip(late, CAUSES, strict=False):
            r.cause = cause
    extra: list[Run] = []
    for r in runs:
        if r.cause == "contention":  # busy neighbours: ad-hoc apps started around it
            for k in range(rng.randint(3, 6) if scale != "small" else 2):
                t = build_template(random.Random(rng.random()), 2 + 6 * (k % 2))
                t.key, t.app_name, t.user, t.queue = (
                    f"adhoc_{len(extra)}",
                    f"notebook-{rng.randint(100, 999)}",
                    "analyst",
                    r.template.queue,
                )
                t.executors, t.size = min(12, p["max_executors"]), p["size_pct"] / 100
                extra.append(Run(t, r.start_ms - rng.randint(0, 600_000), r.day, 0, adhoc=True))
        if r.cause == "slow_host" and not any(r.day in h.bad for h in hosts):
            r.cause = "more_data"
    runs += extra
    runs.sort(key=lambda r: r.start_ms)
    cluster = Cluster(hosts)
    manifest_runs: list[dict[str, Any]] = []
    cctx = zstandard.ZstdCompressor(level=3)
    rm_start = t0 - DAY_MS
    for number, r in enumerate(runs, 1):
        app_rng = random.Random(rng.random())
        t = r.template
        placed = cluster.place(app_rng, t.executors, r.day, avoid_bad=r.cause not in (None, "slow_host"))
        if r.cause == "slow_host":
            bad = [h for h in hosts if r.day in h.bad]
            chosen = app_rng.choice(bad)
            # YARN may give one NodeManager several of an app's containers: a bad host then holds a fifth of them.
            share = max(1, t.executors // 5)
            placed = [chosen] * share + [h for h in placed if h is not chosen and r.day not in h.bad]
        elif r.cause is None and not r.adhoc:
            placed = [h for h in placed if r.day not in h.bad] + [h for h in placed if r.day in h.bad]
        app_id = f"application_{rm_start}_{number:04d}"
        sim_seed = app_rng.random()
        twin = App(dataclasses.replace(r, cause=None), placed, cluster, random.Random(sim_seed), app_id, twin=True)
        twin.simulate()
        app = App(r, placed, cluster, random.Random(sim_seed), app_id)
        truth = app.simulate()
        truth["usual_runtime_ms"] = twin.end_ms - r.start_ms
        truth["slowdown"] = round((app.end_ms - r.start_ms) / max(1, twin.end_ms - r.start_ms), 3)
        cause = r.cause
        if cause is None and truth["slow_host_executors"] and not r.adhoc:
            cause = "slow_host"  # landed on a bad host on its bad day: the only thing that changed
        events, name = app_events(app, number)
        path = out / f"{app_id}_1.zstd"
        payload = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
        path.write_bytes(cctx.compress(payload))
        os.utime(path, ns=(app.end_ms * 1_000_000, app.end_ms * 1_000_000))
        manifest_runs.append(
            {
                "app_id": app_id,
                "path": str(path),
                "template": t.key,
                "shape": t.shape,
                "adhoc": r.adhoc,
                "day": r.day,
                "run_number": r.number,
                "start_ms": r.start_ms,
                "end_ms": app.end_ms,
                "runtime_ms": app.end_ms - r.start_ms,
                "cause": cause,
                "truth_cause": CAUSES.get(cause) if cause else None,
                "distractors": r.distractors,
                "executors": app.executors,
                "tasks": app.next_task,
                "app_name": name,
                **truth,
            }
        )
    hosts_out = [
        {
            "host": h.name,
            "generation": h.generation,
            "factor": GENERATIONS[h.generation],
            "bad_days": {str(d): round(f, 3) for d, f in sorted(h.bad.items())},
        }
        for h in hosts
    ]
    manifest = {
        "about": "benchmarks/independent/generate.py: an independent population of recurring Spark apps (issue 16)",
        "seed": seed,
        "scale": scale,
        "params": p,
        "t0_ms": t0,
        "days": p["days"],
        "generations": list(GENERATIONS),
        "hosts": hosts_out,
        "templates": [{"key": t.key, "shape": t.shape, "runs_per_day": len(t.hours)} for t in temps],
        "runs": manifest_runs,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--days", type=int, default=None)
    parser.add_argument("--templates", type=int, default=None)
    args = parser.parse_args()
    began = time.monotonic()
    m = generate(args.out, scale=args.scale, seed=args.seed, days=args.days, templates=args.templates)
    runs = m["runs"]
    causes: dict[str, int] = {}
    for r in runs:
        causes[str(r["cause"])] = causes.get(str(r["cause"]), 0) + 1
    print(
        f"{len(runs)} apps ({sum(r['adhoc'] for r in runs)} ad hoc), {sum(r['tasks'] for r in runs)} task attempts, "
        f"{time.monotonic() - began:.1f} s; causes {causes}"
    )


if __name__ == "__main__":
    main()
