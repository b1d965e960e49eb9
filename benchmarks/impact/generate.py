"""Write recurring production-sized Spark apps, clean and with one injected problem each, for the impact benchmark.

Independent of the engine under test: nothing here imports ``analysis`` (its replay, fixes or what-if), so the
event logs come from a different model of a cluster than the one Hindsight replays them with.

Each of ~20 templates is an ETL-like app (2-6 jobs, 3-12 stages, scans that run side by side before a join,
shuffles, writes) with its own cluster shape (4-16 executors x 2-5 cores, dynamic allocation on or off). Each
run of a template draws its data volume and speed afresh (+-10%, as a recurring app's runs differ), and is run
through this file's own event-driven scheduler: task slots, stage dependencies, scheduler delay per launch,
executor start-up, dynamic allocation (requests on backlog, idle removal after 60 s), and the driver's gaps
between jobs (planning, file listing, commits). For every (template, seed) a clean run and one run per problem
are written with the same random streams, so ``true_cost_ms`` = the problem run's runtime - its clean twin's is
what that problem cost, scheduling effects included:

- ``skew``: 1-2 shuffle stages get 1-3 hot partitions holding 8-30x the mean partition's data (the stage's
  total data is unchanged: the other partitions shrink);
- ``gc``: the heavy stages' tasks spend 20-50% of their run time in GC (the time is added to the task);
- ``spill``: 1-3 shuffle stages spill 1.5-3x their shuffle read from memory, 25-45% of that to disk, and pay
  for it (disk bytes written and read back at 60-150 MB/s per task, plus serialization);
- ``failures``: in 1-3 stages of one job, 20-40% of the tasks fail once (an ExceptionFailure after 10-90% of
  their work) and are retried;
- ``fewer_executors``: half the usual executors (half the maximum with dynamic allocation).

    .venv/bin/python benchmarks/impact/generate.py [--out benchmarks/out/impact] [--seeds 4] [--small]

``manifest.json`` beside the logs lists every run: template, problem, the heuristic codes that should find it,
runtime, clean twin's runtime and true cost.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]
# In the past (2026-10-23), seven weeks before the first version's dates so weekdays and hours are the same: the
# reader drops app ends more than a day after the log is read (impossible timings, issue 15 F17).
CLUSTER_TS = 1_792_766_400_000
FIRST_START_MS = 1_792_866_400_000
MB = 1_000_000
MIB = 1 << 20
GIB = 1 << 30

PROBLEMS = ("clean", "skew", "gc", "spill", "failures", "fewer_executors")
# The heuristics that should find each problem (any one of them), per the brief of issue 14.
EXPECTED: dict[str, list[str]] = {
    "clean": [],
    "skew": ["spark.task_skew", "spark.large_partition"],
    "gc": ["spark.executor_gc"],
    "spill": ["spark.spill"],
    "failures": ["spark.stage_failures", "spark.job_failures"],
    "fewer_executors": [],
}
TEMPLATE_NAMES = (
    "orders_daily_etl",
    "clickstream_sessionize",
    "inventory_snapshot",
    "payments_reconcile",
    "customer_360",
    "ad_impressions_rollup",
    "search_logs_enrich",
    "fraud_features",
    "shipment_tracking",
    "catalog_sync",
    "ledger_close",
    "recommendations_prep",
    "sensor_downsample",
    "email_campaign_stats",
    "pricing_history",
    "returns_analytics",
    "warehouse_kpis",
    "user_churn_features",
    "billing_usage",
    "partner_feed_export",
)
EXCEPTIONS = (
    ("java.io.IOException", "Connection reset by peer"),
    ("org.apache.spark.SparkException", "Task failed while writing rows to s3a://warehouse/tmp/_temporary/0"),
    ("com.amazonaws.SdkClientException", "Unable to execute HTTP request: Read timed out"),
    ("java.util.concurrent.TimeoutException", "Futures timed out after [120 seconds]"),
)


# ---------------------------------------------------------------- templates


@dataclass
class StageSpec:
    stage_id: int
    job: int
    kind: str  # scan | shuffle | write
    name: str
    parents: list[int]
    tasks: int
    bytes_total: float  # input (scan) or shuffle read (shuffle, write) bytes of the whole stage
    mb_per_s: float  # per-task processing speed
    out_ratio: float  # shuffle written or output bytes / bytes read
    memory_heavy: bool  # aggregations and joins: execution memory, GC and spill happen here


@dataclass
class Template:
    index: int
    name: str
    executors: int
    cores: int
    executor_memory_gib: int
    dynamic: bool
    shuffle_partitions: int
    jobs: list[list[StageSpec]]
    gaps_ms: list[int]  # the driver's time before each job (planning, listing files, the previous job's commit)
    kryo: bool

    @property
    def stages(self) -> list[StageSpec]:
        return [s for job in self.jobs for s in job]


def _callsite(rng: random.Random, name: str, verb: str) -> str:
    cls = "".join(part.title() for part in name.split("_"))
    return f"{verb} at {cls}.scala:{rng.randint(40, 400)}"


def build_template(index: int) -> Template:
    """Template ``index``: its DAG, data sizes and cluster shape, drawn from its own generator."""
    rng = random.Random(f"template:{index}")
    name = TEMPLATE_NAMES[index % len(TEMPLATE_NAMES)] + ("" if index < len(TEMPLATE_NAMES) else f"_{index}")
    executors = rng.choice((4, 6, 8, 8, 10, 12, 16))
    cores = rng.choice((2, 3, 4, 4, 5))
    memory = min(16, max(4, cores * rng.choice((2, 3, 4))))
    partitions = rng.choice((200, 200, 400, 600, 800))
    slots = executors * cores
    n_jobs = rng.randint(2, 6)
    jobs: list[list[StageSpec]] = []
    gaps: list[int] = []
    next_id = 0
    budget = 12
    for j in range(n_jobs):
        left_jobs = n_jobs - j - 1
        room = budget - next_id - left_jobs  # every later job needs at least one stage
        shapes = ["scan_agg", "join", "write_only", "scan_agg_write"]
        shape = rng.choice(
            [s for s in shapes if {"scan_agg": 2, "join": 4, "write_only": 1, "scan_agg_write": 3}[s] <= room]
        )
        if j == 0 and n_jobs <= 2 and shape == "write_only" and room >= 2:
            shape = "scan_agg"  # at least 3 stages in the app
        stages: list[StageSpec] = []

        def scan(gb: float, j: int = j) -> StageSpec:
            nonlocal next_id
            tasks = max(8, min(1500, int(gb * 1000 / rng.choice((128, 256, 256)))))
            spec = StageSpec(
                next_id,
                j,
                "scan",
                _callsite(rng, name, rng.choice(("parquet", "load", "table"))),
                [],
                tasks,
                gb * GIB,
                rng.uniform(25, 70),
                rng.uniform(0.15, 0.6),
                False,
            )
            next_id += 1
            return spec

        def shuffle(parents: list[StageSpec], kind: str = "shuffle", j: int = j) -> StageSpec:
            nonlocal next_id
            read = sum(p.bytes_total * p.out_ratio for p in parents)
            tasks = partitions if rng.random() < 0.7 else max(8, partitions // rng.choice((2, 4)))
            spec = StageSpec(
                next_id,
                j,
                kind,
                _callsite(rng, name, "save" if kind == "write" else rng.choice(("count", "collect", "run", "save"))),
                [p.stage_id for p in parents],
                tasks,
                read,
                rng.uniform(15, 45),
                rng.uniform(0.2, 0.9) if kind == "shuffle" else rng.uniform(0.3, 0.8),
                kind == "shuffle",
            )
            next_id += 1
            return spec

        # Input sizes scaled to the slots: a few waves of 2-20 s tasks, minutes of work per job.
        gb = slots * rng.uniform(0.4, 2.0) * rng.choice((1, 1, 2))
        if shape == "write_only":
            stages.append(scan(gb * 0.5))
            stages[-1].kind = "scan"
        elif shape == "scan_agg":
            a = scan(gb)
            stages += [a, shuffle([a])]
        elif shape == "scan_agg_write":
            a = scan(gb)
            b = shuffle([a])
            stages += [a, b, shuffle([b], "write")]
        else:  # join: two scans side by side, then the join, then an aggregation or a write
            a, b = scan(gb), scan(gb * rng.uniform(0.1, 0.6))
            c = shuffle([a, b])
            stages += [a, b, c, shuffle([c], rng.choice(("shuffle", "write")))]
        jobs.append(stages)
        gaps.append(rng.randint(4000, 15000) if j == 0 else rng.randint(300, 12000))
    return Template(
        index, name, executors, cores, memory, rng.random() < 0.4, partitions, jobs, gaps, rng.random() < 0.7
    )


# ---------------------------------------------------------------- a run's task plan


@dataclass
class TaskPlan:
    index: int
    read_bytes: float
    run_ms: float  # executor run time of a successful attempt
    gc_ms: float
    cpu_share: float
    peak_memory: int
    memory_spilled: int = 0
    disk_spilled: int = 0
    fail_after: float = 0.0  # >0: the first attempt fails after this share of the work


@dataclass
class RunPlan:
    template: Template
    seed: int
    problem: str
    executors: int
    tasks: dict[int, list[TaskPlan]]
    injected: dict[str, Any] = field(default_factory=dict)


def plan_run(template: Template, seed: int, problem: str) -> RunPlan:
    """The run's tasks: clean ones from streams keyed by (template, seed, stage), then the problem on top."""
    run = random.Random(f"{template.index}:{seed}:run")
    volume = run.uniform(0.9, 1.1)  # this run's data
    speed = run.uniform(0.93, 1.07)  # this run's cluster speed (neighbours, cache)
    memory_per_task = template.executor_memory_gib * GIB * 0.6 / template.cores
    tasks: dict[int, list[TaskPlan]] = {}
    for stage in template.stages:
        rng = random.Random(f"{template.index}:{seed}:stage:{stage.stage_id}")
        mean = stage.bytes_total * volume / stage.tasks
        # partition sizes vary (file sizes, key spread): lognormal, sigma 0.25, normalized to the mean
        sizes = [rng.lognormvariate(0, 0.25) for _ in range(stage.tasks)]
        norm = stage.tasks / sum(sizes)
        plans = []
        for i, size in enumerate(sizes):
            read = mean * size * norm
            overhead = rng.uniform(60, 250)
            run_ms = (overhead + read / (stage.mb_per_s * MB) * 1000 * rng.lognormvariate(0, 0.12)) / speed
            gc_share = rng.uniform(0.01, 0.05) if stage.memory_heavy else rng.uniform(0.005, 0.025)
            # aggregations and joins take execution memory in pages up to what the data needs; scans with a
            # partial aggregation a little
            need = read * rng.uniform(0.5, 1.2) if stage.memory_heavy else rng.uniform(16, 128) * MIB
            peak = int(min(memory_per_task * 0.9, max(64 * MIB if stage.memory_heavy else 0, need)))
            plans.append(TaskPlan(i, read, run_ms, run_ms * gc_share, rng.uniform(0.6, 0.9), peak))
        tasks[stage.stage_id] = plans
    executors = template.executors
    prng = random.Random(f"{template.index}:{seed}:problem:{problem}")
    injected: dict[str, Any] = {}
    shuffles = [s for s in template.stages if s.kind != "scan" and s.tasks >= 20]
    heavy = sorted(template.stages, key=lambda s: -sum(t.run_ms for t in tasks[s.stage_id]))
    if problem == "skew":
        chosen = sorted(shuffles or heavy, key=lambda s: -s.bytes_total)[: prng.choice((1, 1, 2))]
        injected["stages"] = []
        for stage in chosen:
            plans = tasks[stage.stage_id]
            n = len(plans)
            hot = prng.sample(range(n), min(n, prng.randint(1, 3)))
            factor = min(prng.uniform(8, 30), 0.4 * n / len(hot))
            total = sum(t.read_bytes for t in plans)
            mean = total / n
            rest = (total - factor * mean * len(hot)) / sum(t.read_bytes for t in plans if t.index not in hot)
            for t in plans:
                new = factor * mean if t.index in hot else t.read_bytes * rest
                scale = new / t.read_bytes
                t.run_ms *= scale
                t.gc_ms *= scale
                t.peak_memory = int(t.peak_memory * min(scale, 3))
                t.read_bytes = new
            injected["stages"].append({"stage": stage.stage_id, "hot_partitions": len(hot), "factor": round(factor, 1)})
    elif problem == "gc":
        share_of_work, chosen = 0.0, []
        total = sum(t.run_ms for s in template.stages for t in tasks[s.stage_id])
        for stage in heavy:  # the heaviest stages until half the work
            chosen.append(stage)
            share_of_work += sum(t.run_ms for t in tasks[stage.stage_id]) / total
            if share_of_work >= 0.5:
                break
        target = prng.uniform(0.2, 0.5)
        for stage in chosen:
            for t in tasks[stage.stage_id]:
                share = min(0.7, max(0.1, prng.gauss(target, 0.05)))
                work = t.run_ms - t.gc_ms
                t.run_ms = work / (1 - share)
                t.gc_ms = t.run_ms * share
                t.peak_memory = int(max(t.peak_memory, memory_per_task * prng.uniform(0.7, 0.95)))
        injected = {"stages": [s.stage_id for s in chosen], "gc_share": round(target, 2)}
    elif problem == "spill":
        chosen = sorted(shuffles or heavy, key=lambda s: -s.bytes_total)[: prng.randint(1, 3)]
        for stage in chosen:
            throughput = prng.uniform(60, 150) * MB
            for t in tasks[stage.stage_id]:
                t.memory_spilled = int(t.read_bytes * prng.uniform(1.5, 3.0))
                t.disk_spilled = int(t.memory_spilled * prng.uniform(0.25, 0.45))
                cost = 2 * t.disk_spilled / throughput * 1000 + t.memory_spilled / (400 * MB) * 1000
                t.run_ms += cost
                t.peak_memory = int(memory_per_task * prng.uniform(0.85, 0.98))
        injected = {"stages": [s.stage_id for s in chosen]}
    elif problem == "failures":
        candidates = [j for j in template.jobs if sum(s.tasks for s in j) >= 20]
        job = prng.choice(candidates or template.jobs)
        chosen = [s for s in job if s.tasks >= 10][: prng.randint(1, 3)] or job[:1]
        rate = prng.uniform(0.2, 0.4)
        for stage in chosen:
            for t in tasks[stage.stage_id]:
                if prng.random() < rate:
                    t.fail_after = prng.uniform(0.1, 0.9)
        injected = {"job": job[0].job, "stages": [s.stage_id for s in chosen], "failure_rate": round(rate, 2)}
    elif problem == "fewer_executors":
        executors = max(1, template.executors // 2)
        injected = {"executors": executors, "usual_executors": template.executors}
    return RunPlan(template, seed, problem, executors, tasks, injected)


# ---------------------------------------------------------------- the scheduler


@dataclass
class Attempt:
    task_id: int
    stage: StageSpec
    plan: TaskPlan
    attempt: int
    executor: str
    launch_ms: int
    finish_ms: int
    failed: bool
    run_ms: int
    deser_ms: int


class Cluster:
    """An event-driven Spark scheduler: FIFO by stage id over task slots, with start-up, delays and gaps."""

    def __init__(self, plan: RunPlan, start_ms: int) -> None:
        self.plan = plan
        self.t = plan.template
        # Timing draws are keyed by what they time (this run's template and seed, a stage, a task attempt, the
        # n-th executor request), never by the problem, so a problem run and its clean twin differ only where
        # the problem makes them differ. Metric values (not timing) come from the problem's own stream.
        self.key = f"{self.t.index}:{plan.seed}"
        self.rng = random.Random(f"{self.key}:metrics:{plan.problem}")
        self.requests = 0
        self.start_ms = start_ms
        self.events: list[tuple[int, int, dict[str, Any]]] = []
        self.seq = 0
        self.heap: list[tuple[int, int, str, Any]] = []
        self.free: dict[str, int] = {}  # alive executor -> free cores
        self.idle_since: dict[str, int] = {}
        self.requested = 0
        self.next_executor = 1
        self.pending: dict[int, deque[tuple[TaskPlan, int]]] = {}
        self.running: dict[int, int] = {}  # stage -> tasks running
        self.left: dict[int, int] = {}  # stage -> tasks not yet succeeded
        self.done_stages: set[int] = set()
        self.stage_submitted: dict[int, int] = {}
        self.next_task_id = 0
        self.attempts: list[Attempt] = []
        self.finished = False
        hosts = self.draw("hosts")
        self.hosts = [
            f"ip-10-{hosts.randint(0, 255)}-{hosts.randint(0, 255)}-{hosts.randint(1, 254)}.ec2.internal"
            for _ in range(max(2, self.t.executors // 2))
        ]

    def draw(self, what: str) -> random.Random:
        return random.Random(f"{self.key}:{what}")

    def emit(self, ts: int, event: dict[str, Any]) -> None:
        self.seq += 1
        self.events.append((ts, self.seq, event))

    def push(self, ts: int, kind: str, payload: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (ts, self.seq, kind, payload))

    def request_executors(self, now: int, count: int) -> None:
        for _ in range(count):
            self.requested += 1
            self.requests += 1
            startup = self.draw(f"executor:{self.requests}").randint(2500, 9000)  # container + JVM start-up
            self.push(now + startup, "executor_ready")

    def run(self) -> int:
        t0 = self.start_ms
        driver_ready = t0 + self.draw("driver").randint(1500, 4000)
        if self.t.dynamic:
            self.request_executors(driver_ready, 2)
        else:
            self.request_executors(driver_ready, self.plan.executors)
        self.push(t0 + self.t.gaps_ms[0], "job_submit", 0)
        if self.t.dynamic:
            self.push(driver_ready + 1000, "allocation_tick")
        now = t0
        while self.heap:
            now, _, kind, payload = heapq.heappop(self.heap)
            getattr(self, "on_" + kind)(now, payload)
            if self.finished and kind == "app_end":
                break
            self.schedule(now)
        return now

    # events
    def on_executor_ready(self, now: int, _: Any) -> None:
        self.requested -= 1
        if self.finished:
            return
        executor = str(self.next_executor)
        self.next_executor += 1
        host = self.hosts[(int(executor) - 1) % len(self.hosts)]
        self.free[executor] = self.t.cores
        self.idle_since[executor] = now
        self.emit(now, executor_added(now, executor, host, self.t.cores))
        heap_bytes = self.t.executor_memory_gib * GIB
        self.emit(now + 40, block_manager_added(now + 40, executor, host, int((heap_bytes - 300 * MIB) * 0.6)))

    def on_allocation_tick(self, now: int, _: Any) -> None:
        if self.finished:
            return
        backlog = sum(len(q) for q in self.pending.values()) + sum(self.running.values())
        wanted = min(self.plan.executors, math.ceil(backlog / self.t.cores)) if backlog else 0
        have = len(self.free) + self.requested
        if wanted > have:
            self.request_executors(now, min(wanted - have, max(1, have)))  # Spark's exponential ramp-up
        for executor, since in list(self.idle_since.items()):
            busy = self.free[executor] < self.t.cores
            if not busy and now - since > 60_000 and len(self.free) > 1:
                del self.free[executor], self.idle_since[executor]
                self.emit(
                    now,
                    {
                        "Event": "SparkListenerExecutorRemoved",
                        "Timestamp": now,
                        "Executor ID": executor,
                        "Removed Reason": "Executor killed by driver.",
                    },
                )
        self.push(now + 1000, "allocation_tick")

    def on_job_submit(self, now: int, job_index: int) -> None:
        stages = self.t.jobs[job_index]
        self.emit(now, job_start(now, job_index, stages))
        for stage in stages:
            self.left[stage.stage_id] = len(self.plan.tasks[stage.stage_id])
        for stage in stages:
            if not stage.parents:
                self.push(now + self.draw(f"submit:{stage.stage_id}").randint(5, 60), "stage_submit", stage)

    def on_stage_submit(self, now: int, stage: StageSpec) -> None:
        self.emit(now, stage_event("SparkListenerStageSubmitted", stage, now, None))
        self.stage_submitted[stage.stage_id] = now
        self.pending[stage.stage_id] = deque((t, 0) for t in self.plan.tasks[stage.stage_id])
        self.running[stage.stage_id] = 0

    def on_task_end(self, now: int, attempt: Attempt) -> None:
        stage = attempt.stage
        self.running[stage.stage_id] -= 1
        if attempt.executor in self.free:
            self.free[attempt.executor] += 1
            if self.free[attempt.executor] == self.t.cores:
                self.idle_since[attempt.executor] = now
        self.emit(now, task_end(attempt, self.hosts, self.t, self.rng))
        if attempt.failed:
            self.pending[stage.stage_id].appendleft((attempt.plan, attempt.attempt + 1))  # retried next
            return
        self.left[stage.stage_id] -= 1
        if self.left[stage.stage_id] == 0:
            self.push(now + self.draw(f"complete:{stage.stage_id}").randint(3, 30), "stage_complete", stage)

    def on_stage_complete(self, now: int, stage: StageSpec) -> None:
        self.emit(now, stage_event("SparkListenerStageCompleted", stage, self.stage_submitted[stage.stage_id], now))
        del self.pending[stage.stage_id]
        self.done_stages.add(stage.stage_id)
        job = self.t.jobs[stage.job]
        for child in job:
            if stage.stage_id in child.parents and all(p in self.done_stages for p in child.parents):
                self.push(now + self.draw(f"submit:{child.stage_id}").randint(5, 60), "stage_submit", child)
        if all(s.stage_id in self.done_stages for s in job):
            job_rng = self.draw(f"job:{stage.job}")
            end = now + job_rng.randint(1, 15)
            self.emit(
                end,
                {
                    "Event": "SparkListenerJobEnd",
                    "Job ID": stage.job,
                    "Completion Time": end,
                    "Job Result": {"Result": "JobSucceeded"},
                },
            )
            if stage.job + 1 < len(self.t.jobs):
                self.push(end + self.t.gaps_ms[stage.job + 1] + job_rng.randint(-200, 200), "job_submit", stage.job + 1)
            else:
                self.push(end + job_rng.randint(800, 4000), "app_end")  # write the last output, stop the context

    def on_app_end(self, now: int, _: Any) -> None:
        self.finished = True
        self.emit(now, {"Event": "SparkListenerApplicationEnd", "Timestamp": now, "ExitCode": 0})

    def schedule(self, now: int) -> None:
        """Offer free slots to runnable stages, lowest stage id first, spreading over executors."""
        if self.finished:
            return
        for stage_id in sorted(self.pending):
            queue = self.pending[stage_id]
            while queue:
                free = [e for e, cores in self.free.items() if cores > 0]
                if not free:
                    return
                executor = max(free, key=lambda e: (self.free[e], -int(e)))
                plan, number = queue.popleft()
                self.free[executor] -= 1
                self.idle_since.pop(executor, None)
                self.idle_since[executor] = now
                self.launch(now, self.t.stages[stage_id], plan, number, executor)

    def launch(self, now: int, stage: StageSpec, plan: TaskPlan, number: int, executor: str) -> None:
        rng = self.draw(f"task:{stage.stage_id}:{plan.index}:{number}")
        launch = now + rng.randint(1, 25)  # scheduler delay: offer, serialize, send
        deser = rng.randint(3, 60) + (rng.randint(200, 900) if number == 0 and plan.index < self.t.cores else 0)
        failed = number == 0 and plan.fail_after > 0
        run_ms = max(1, int(plan.run_ms * (plan.fail_after if failed else 1)))
        finish = launch + deser + run_ms + rng.randint(2, 30)  # result serialization and fetch
        attempt = Attempt(self.next_task_id, stage, plan, number, executor, launch, finish, failed, run_ms, deser)
        self.next_task_id += 1
        self.running[stage.stage_id] += 1
        self.attempts.append(attempt)
        self.emit(launch, task_start(attempt, self.hosts))
        self.push(finish, "task_end", attempt)


# ---------------------------------------------------------------- events


def executor_host(executor: str, hosts: list[str]) -> str:
    return hosts[(int(executor) - 1) % len(hosts)]


def executor_added(ts: int, executor: str, host: str, cores: int) -> dict[str, Any]:
    container = f"container_e07_{CLUSTER_TS}_0001_01_{int(executor) + 1:06d}"
    return {
        "Event": "SparkListenerExecutorAdded",
        "Timestamp": ts,
        "Executor ID": executor,
        "Executor Info": {
            "Host": host,
            "Total Cores": cores,
            "Log Urls": {"stdout": f"http://{host}:8042/node/containerlogs/{container}/etl/stdout?start=-4096"},
            "Attributes": {"NM_HOST": host, "NM_PORT": "8041", "CONTAINER_ID": container, "USER": "etl"},
            "Resources": {},
            "Resource Profile Id": 0,
        },
    }


def block_manager_added(ts: int, executor: str, host: str, max_memory: int) -> dict[str, Any]:
    return {
        "Event": "SparkListenerBlockManagerAdded",
        "Block Manager ID": {
            "Executor ID": executor,
            "Host": host,
            "Port": 40000 + int(executor) if executor.isdigit() else 40000,
        },
        "Maximum Memory": max_memory,
        "Timestamp": ts,
        "Maximum Onheap Memory": max_memory,
        "Maximum Offheap Memory": 0,
    }


def stage_info(stage: StageSpec, submitted: int | None, completed: int | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "Stage ID": stage.stage_id,
        "Stage Attempt ID": 0,
        "Stage Name": stage.name,
        "Number of Tasks": stage.tasks,
        "RDD Info": [
            {
                "RDD ID": stage.stage_id * 3 + 2,
                "Name": "MapPartitionsRDD",
                "Callsite": stage.name,
                "Parent IDs": [stage.stage_id * 3 + 1],
                "Storage Level": {
                    "Use Disk": False,
                    "Use Memory": False,
                    "Use Off Heap": False,
                    "Deserialized": False,
                    "Replication": 1,
                },
                "Barrier": False,
                "DeterministicLevel": "DETERMINATE",
                "Number of Partitions": stage.tasks,
                "Number of Cached Partitions": 0,
                "Memory Size": 0,
                "Disk Size": 0,
            }
        ],
        "Parent IDs": stage.parents,
        "Details": f"org.apache.spark.sql.Dataset.{stage.name.split(' ')[0]}(Dataset.scala:3575)",
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


def stage_event(kind: str, stage: StageSpec, submitted: int, completed: int | None) -> dict[str, Any]:
    event: dict[str, Any] = {"Event": kind, "Stage Info": stage_info(stage, submitted, completed)}
    if kind == "SparkListenerStageSubmitted":
        event["Properties"] = {"spark.job.description": stage.name, "spark.scheduler.pool": "default"}
    return event


def job_start(ts: int, job: int, stages: list[StageSpec]) -> dict[str, Any]:
    return {
        "Event": "SparkListenerJobStart",
        "Job ID": job,
        "Submission Time": ts,
        "Stage Infos": [stage_info(s, None, None) for s in stages],
        "Stage IDs": [s.stage_id for s in stages],
        "Properties": {"spark.job.description": stages[-1].name, "callSite.short": stages[-1].name},
    }


def task_info(a: Attempt, hosts: list[str], finished: bool) -> dict[str, Any]:
    return {
        "Task ID": a.task_id,
        "Index": a.plan.index,
        "Attempt": a.attempt,
        "Partition ID": a.plan.index,
        "Launch Time": a.launch_ms,
        "Executor ID": a.executor,
        "Host": executor_host(a.executor, hosts),
        "Locality": "NODE_LOCAL" if a.stage.kind == "scan" else "PROCESS_LOCAL",
        "Speculative": False,
        "Getting Result Time": 0,
        "Finish Time": a.finish_ms if finished else 0,
        "Failed": finished and a.failed,
        "Killed": False,
        "Accumulables": [],
    }


def task_start(a: Attempt, hosts: list[str]) -> dict[str, Any]:
    return {
        "Event": "SparkListenerTaskStart",
        "Stage ID": a.stage.stage_id,
        "Stage Attempt ID": 0,
        "Task Info": task_info(a, hosts, False),
    }


def task_end(a: Attempt, hosts: list[str], t: Template, rng: random.Random) -> dict[str, Any]:
    p, stage = a.plan, a.stage
    share = a.run_ms / max(p.run_ms, 1)  # a failed attempt did this share of the work
    read = int(p.read_bytes * share)
    gc = int(p.gc_ms * share)
    spill_ms_free = max(1, a.run_ms - gc)
    scan = stage.kind == "scan"
    records = max(1, read // rng.randint(90, 240))
    remote = int(read * (1 - 1 / max(2, t.executors))) if not scan else 0
    out = int(p.read_bytes * stage.out_ratio) if not a.failed else 0
    write_stage = stage.kind == "write"
    metrics = {
        "Executor Deserialize Time": a.deser_ms,
        "Executor Deserialize CPU Time": a.deser_ms * rng.randint(300_000, 800_000),
        "Executor Run Time": a.run_ms,
        "Executor CPU Time": int(spill_ms_free * p.cpu_share * 1_000_000),
        "Peak Execution Memory": p.peak_memory,
        "Peak On Heap Execution Memory": p.peak_memory,
        "Peak Off Heap Execution Memory": 0,
        "Result Size": 0 if a.failed else rng.randint(1800, 6000),
        "JVM GC Time": gc,
        "Result Serialization Time": 0 if a.failed else rng.randint(0, 3),
        "Memory Bytes Spilled": int(p.memory_spilled * share),
        "Disk Bytes Spilled": int(p.disk_spilled * share),
        "Shuffle Read Metrics": {
            "Remote Blocks Fetched": 0 if scan else sum(s.tasks for s in t.stages if s.stage_id in stage.parents),
            "Local Blocks Fetched": 0
            if scan
            else max(1, sum(s.tasks for s in t.stages if s.stage_id in stage.parents) // max(2, t.executors)),
            "Fetch Wait Time": 0 if scan else int(a.run_ms * rng.uniform(0, 0.03)),
            "Remote Bytes Read": remote,
            "Remote Bytes Read To Disk": 0,
            "Local Bytes Read": 0 if scan else read - remote,
            "Total Records Read": 0 if scan else records,
            "Remote Requests Duration": 0 if scan else int(a.run_ms * rng.uniform(0, 0.05)),
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
            "Shuffle Bytes Written": 0 if write_stage else out,
            "Shuffle Write Time": 0 if write_stage else int(out / (200 * MB) * 1e9),
            "Shuffle Records Written": 0 if write_stage else out // 120,
        },
        "Input Metrics": {"Bytes Read": read if scan else 0, "Records Read": records if scan else 0},
        "Output Metrics": {
            "Bytes Written": out if write_stage else 0,
            "Records Written": out // 150 if write_stage else 0,
        },
        "Updated Blocks": [],
    }
    if a.failed:
        cls, message = EXCEPTIONS[rng.randrange(len(EXCEPTIONS))]
        frames = [
            {
                "Declaring Class": "org.apache.spark.scheduler.ResultTask",
                "Method Name": "runTask",
                "File Name": "ResultTask.scala",
                "Line Number": 93,
            },
            {
                "Declaring Class": "org.apache.spark.executor.Executor$TaskRunner",
                "Method Name": "run",
                "File Name": "Executor.scala",
                "Line Number": 719,
            },
        ]
        reason: dict[str, Any] = {
            "Reason": "ExceptionFailure",
            "Class Name": cls,
            "Description": message,
            "Stack Trace": frames,
            "Full Stack Trace": f"{cls}: {message}\n\tat {frames[0]['Declaring Class']}.runTask(ResultTask.scala:93)\n",
            "Accumulator Updates": [],
        }
    else:
        reason = {"Reason": "Success"}
    heap = t.executor_memory_gib * GIB
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage.stage_id,
        "Stage Attempt ID": 0,
        "Task Type": "ResultTask"
        if write_stage or stage.stage_id == t.jobs[stage.job][-1].stage_id
        else "ShuffleMapTask",
        "Task End Reason": reason,
        "Task Info": task_info(a, hosts, True),
        "Task Executor Metrics": {
            "JVMHeapMemory": int(heap * rng.uniform(0.45, 0.8)),
            "JVMOffHeapMemory": rng.randint(80, 160) * MIB,
            "OnHeapExecutionMemory": p.peak_memory * t.cores,
            "OffHeapExecutionMemory": 0,
            "OnHeapStorageMemory": rng.randint(1, 40) * MIB,
            "OffHeapStorageMemory": 0,
            # the executor's memory at this task's end: its concurrent tasks' execution memory plus storage
            "OnHeapUnifiedMemory": int(p.peak_memory * t.cores * rng.uniform(0.6, 1.0)) + 200 * MIB,
            "OffHeapUnifiedMemory": 0,
            "DirectPoolMemory": rng.randint(8, 64) * MIB,
            "MappedPoolMemory": 0,
            "ProcessTreeJVMVMemory": 0,
            "ProcessTreeJVMRSSMemory": 0,
            "ProcessTreePythonVMemory": 0,
            "ProcessTreePythonRSSMemory": 0,
            "ProcessTreeOtherVMemory": 0,
            "ProcessTreeOtherRSSMemory": 0,
            "MinorGCCount": 0,
            "MinorGCTime": 0,
            "MajorGCCount": 0,
            "MajorGCTime": 0,
            "TotalGCTime": 0,
            "ConcurrentGCCount": 0,
            "ConcurrentGCTime": 0,
        },
        "Task Metrics": metrics,
    }


def environment(plan: RunPlan, app_id: str, app_name: str, start_ms: int) -> dict[str, Any]:
    t = plan.template
    props = {
        "spark.app.name": app_name,
        "spark.app.id": app_id,
        "spark.app.startTime": str(start_ms),
        "spark.master": "yarn",
        "spark.submit.deployMode": "cluster",
        "spark.driver.memory": "4g",
        "spark.driver.cores": "1",
        "spark.executor.memory": f"{t.executor_memory_gib}g",
        "spark.executor.cores": str(t.cores),
        "spark.executor.memoryOverhead": f"{max(384, t.executor_memory_gib * 1024 // 10)}m",
        "spark.sql.shuffle.partitions": str(t.shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "hdfs:///spark-history",
        "spark.yarn.queue": "etl",
        "spark.shuffle.service.enabled": "true",
        "spark.dynamicAllocation.enabled": "true" if t.dynamic else "false",
        "spark.scheduler.mode": "FIFO",
    }
    if t.dynamic:
        props |= {
            "spark.dynamicAllocation.minExecutors": "1",
            "spark.dynamicAllocation.initialExecutors": "2",
            "spark.dynamicAllocation.maxExecutors": str(plan.executors),
            "spark.dynamicAllocation.executorIdleTimeout": "60s",
        }
    else:
        props["spark.executor.instances"] = str(plan.executors)
    if t.kryo:
        props["spark.serializer"] = "org.apache.spark.serializer.KryoSerializer"
    return {
        "Event": "SparkListenerEnvironmentUpdate",
        "JVM Information": {
            "Java Home": "/usr/lib/jvm/java-17-openjdk-amd64",
            "Java Version": "17.0.12 (Eclipse Adoptium)",
            "Scala Version": "version 2.12.18",
        },
        "Spark Properties": props,
        "Hadoop Properties": {"fs.defaultFS": "hdfs://nameservice1", "dfs.blocksize": "134217728"},
        "System Properties": {"java.vm.name": "OpenJDK 64-Bit Server VM", "user.name": "etl"},
        "Metrics Properties": {},
        "Classpath Entries": {},
    }


def write_run(out_dir: Path, plan: RunPlan, number: int) -> dict[str, Any]:
    """Simulate one run and write its event log; what the manifest records about it (no true cost yet)."""
    t = plan.template
    app_id = f"application_{CLUSTER_TS}_{number + 1:04d}"
    start = FIRST_START_MS + number * 600_000 + random.Random(f"{t.index}:{plan.seed}:start").randrange(60_000)
    cluster = Cluster(plan, start)
    end = cluster.run()
    app_name = t.name
    head = [
        {"Event": "SparkListenerLogStart", "Spark Version": "3.5.1"},
        {
            "Event": "SparkListenerResourceProfileAdded",
            "Resource Profile Id": 0,
            "Executor Resource Requests": {
                "cores": {"Resource Name": "cores", "Amount": t.cores, "Discovery Script": "", "Vendor": ""},
                "memory": {
                    "Resource Name": "memory",
                    "Amount": t.executor_memory_gib * 1024,
                    "Discovery Script": "",
                    "Vendor": "",
                },
            },
            "Task Resource Requests": {"cpus": {"Resource Name": "cpus", "Amount": 1.0}},
        },
        {
            "Event": "SparkListenerExecutorAdded",
            "Timestamp": start + 300,
            "Executor ID": "driver",
            "Executor Info": {
                "Host": "ip-10-0-0-10.ec2.internal",
                "Total Cores": 1,
                "Log Urls": {},
                "Attributes": {},
                "Resources": {},
                "Resource Profile Id": 0,
            },
        },
        block_manager_added(start + 320, "driver", "ip-10-0-0-10.ec2.internal", int(4 * GIB * 0.5)),
        environment(plan, app_id, app_name, start),
        {
            "Event": "SparkListenerApplicationStart",
            "App Name": app_name,
            "App ID": app_id,
            "Timestamp": start,
            "User": "etl",
            "App Attempt ID": "1",
        },
    ]
    path = out_dir / f"{app_id}_1"
    cluster.events.sort(key=lambda e: (e[0], e[1]))
    with path.open("wb") as handle:
        for event in head:
            handle.write(orjson.dumps(event) + b"\n")
        for _, _, event in cluster.events:
            handle.write(orjson.dumps(event) + b"\n")
    attempts = cluster.attempts
    return {
        "app_id": app_id,
        "path": str(path),
        "template": t.name,
        "seed": plan.seed,
        "problem": plan.problem,
        "expected_codes": EXPECTED.get(plan.problem, []),
        "injected": plan.injected,
        "dynamic_allocation": t.dynamic,
        "executors": plan.executors,
        "usual_executors": t.executors,
        "cores": t.cores,
        "jobs": len(t.jobs),
        "stages": len(t.stages),
        "tasks": sum(1 for a in attempts if not a.failed),
        "failed_attempts": sum(1 for a in attempts if a.failed),
        "start_ms": start,
        "end_ms": end,
        "runtime_ms": end - start,
        "bytes": path.stat().st_size,
    }


def write_twins(out_dir: Path, index: int, seed: int, seeds: int) -> list[dict[str, Any]]:
    """A clean run of template ``index`` with ``seed`` and one run per problem, each with its true cost."""
    template = build_template(index)
    first = (index * seeds + seed) * len(PROBLEMS)  # app numbers do not depend on the order runs are written in
    twins = [write_run(out_dir, plan_run(template, seed, problem), first + k) for k, problem in enumerate(PROBLEMS)]
    clean = twins[0]["runtime_ms"]
    for run in twins:
        run["clean_runtime_ms"] = clean
        run["true_cost_ms"] = run["runtime_ms"] - clean
    return twins


def generate(out_dir: Path, templates: int, seeds: int, workers: int = 1) -> dict[str, Any]:
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"application_{CLUSTER_TS}_*"):
        old.unlink()
    started = time.monotonic()
    pairs = [(index, seed) for index in range(templates) for seed in range(seeds)]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(write_twins, *zip(*[(out_dir, i, s, seeds) for i, s in pairs], strict=True)))
    else:
        done = [write_twins(out_dir, index, seed, seeds) for index, seed in pairs]
    runs = [run for twins in done for run in twins]
    summary = {
        "out": str(out_dir),
        "templates": templates,
        "seeds": seeds,
        "apps": len(runs),
        "tasks": sum(r["tasks"] for r in runs),
        "bytes": sum(r["bytes"] for r in runs),
        "runtime_min_s": round(min(r["runtime_ms"] for r in runs) / 1000, 1),
        "runtime_max_s": round(max(r["runtime_ms"] for r in runs) / 1000, 1),
        "seconds": round(time.monotonic() - started, 1),
    }
    (out_dir / "manifest.json").write_bytes(
        orjson.dumps({"summary": summary, "runs": runs}, option=orjson.OPT_INDENT_2)
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "impact")
    parser.add_argument("--templates", type=int, default=len(TEMPLATE_NAMES))
    parser.add_argument("--seeds", type=int, default=4, help="runs of each template (x6: clean and one per problem)")
    parser.add_argument("--workers", type=int, default=2, help="processes writing runs")
    parser.add_argument("--small", action="store_true", help="2 templates x 1 seed (12 apps): the smoke test")
    args = parser.parse_args()
    templates, seeds = (2, 1) if args.small else (args.templates, args.seeds)
    print(orjson.dumps(generate(args.out, templates, seeds, args.workers), option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
