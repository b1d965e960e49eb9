"""Write a large, realistic Spark 4.1.1 event log for the parse benchmarks (default: >= 1M tasks, > 1 GB).

Every event is a real event line from a log Spark 4.1.1 wrote (the template log), with its ids, times, hosts
and metrics replaced so the whole file is one consistent application: LogStart, ResourceProfileAdded,
EnvironmentUpdate, ApplicationStart, 200 executors on 50 hosts, then jobs of a map stage and a reduce stage
each, whose tasks are scheduled on the executors' cores (TaskStart/TaskEnd in time order), and ApplicationEnd.
Metrics vary: lognormal durations, skewed stages, failed-and-retried tasks, one job that fails, spill.

The file is streamed (never held in memory) and the same seed writes the same bytes.

    .venv/bin/python benchmarks/generate_large_log.py [--tasks 1000000] [--zstd] [--out benchmarks/out]
"""

from __future__ import annotations

import argparse
import copy
import heapq
import io
import math
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import zstandard

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TEMPLATE = Path("/work/shared/refdata/spark-generated/spark-4.1.1/event-logs/local-1795326055348")
FALLBACK_TEMPLATE = REPO / "samples" / "task_retries"
APP_ID = "application_1795000000000_0042"
START_MS = 1_795_400_000_000
EXECUTORS = 200
HOSTS = 50
CORES = 4

Event = dict[str, Any]


@dataclass(frozen=True)
class AppShape:
    """Who the application is and what it ran on; the defaults are the large log's (benchmarks/generate_app_stream.py
    writes many smaller ones)."""

    app_id: str = APP_ID
    app_name: str = "hindsight-benchmark: nightly sessionization"
    user: str = "etl"
    start_ms: int = START_MS
    executors: int = EXECUTORS
    hosts: int = HOSTS
    cores: int = CORES
    executor_memory_gib: int = 16


@dataclass(frozen=True)
class JobMix:
    """How ``plan_stages`` draws each job's map and reduce stages; the defaults are the large log's."""

    map_tasks: tuple[int, ...] = (200, 400, 800, 1200, 2000, 3000)
    reduce_tasks: tuple[int, ...] = (200, 400, 800, 2000)
    map_spill_rate: float = 0.1
    reduce_skew_rate: float = 0.1
    reduce_spill_rate: float = 0.15
    fail_one_job: bool = True  # one job a few percent into the run fails for good


@dataclass(frozen=True)
class Templates:
    log_start: Event
    resource_profile: Event
    executor_added: Event
    block_manager_added: Event
    environment: Event
    app_start: Event
    job_start: Event
    stage_submitted: Event
    stage_completed: Event
    task_start: Event
    map_task_end: Event  # a ShuffleMapTask that succeeded
    result_task_end: Event  # a ResultTask that read shuffle data and succeeded
    failed_task_end: Event  # ExceptionFailure
    job_end: Event
    app_end: Event


def load_templates(path: Path) -> Templates:
    """Pick one real event of each kind from a Spark 4.x event log."""
    first: dict[str, Event] = {}
    task_ends: dict[str, Event] = {}
    with path.open("rb") as log:
        for line in log:
            event = orjson.loads(line)
            kind = event["Event"]
            first.setdefault(kind, event)
            if kind == "SparkListenerTaskEnd":
                reason = event["Task End Reason"]["Reason"]
                metrics = event.get("Task Metrics") or {}
                if reason != "Success":
                    task_ends.setdefault("failed", event)
                elif event["Task Type"] == "ShuffleMapTask" and _shuffle_written(metrics):
                    task_ends.setdefault("map", event)
                elif event["Task Type"] == "ResultTask" and metrics["Shuffle Read Metrics"]["Total Records Read"]:
                    task_ends.setdefault("result", event)
    missing = {"map", "result", "failed"} - set(task_ends)
    if missing:
        raise SystemExit(f"{path}: template log lacks task ends of kind {sorted(missing)}")
    return Templates(
        log_start=first["SparkListenerLogStart"],
        resource_profile=first["SparkListenerResourceProfileAdded"],
        executor_added=first["SparkListenerExecutorAdded"],
        block_manager_added=first["SparkListenerBlockManagerAdded"],
        environment=first["SparkListenerEnvironmentUpdate"],
        app_start=first["SparkListenerApplicationStart"],
        job_start=first["SparkListenerJobStart"],
        stage_submitted=first["SparkListenerStageSubmitted"],
        stage_completed=first["SparkListenerStageCompleted"],
        task_start=first["SparkListenerTaskStart"],
        map_task_end=task_ends["map"],
        result_task_end=task_ends["result"],
        failed_task_end=task_ends["failed"],
        job_end=first["SparkListenerJobEnd"],
        app_end=first["SparkListenerApplicationEnd"],
    )


def _shuffle_written(metrics: Event) -> int:
    return int(metrics["Shuffle Write Metrics"]["Shuffle Bytes Written"])


@dataclass
class StagePlan:
    stage_id: int
    name: str
    num_tasks: int
    is_map: bool
    parent_ids: tuple[int, ...]
    median_ms: float
    skewed: bool
    spills: bool
    failing_tasks: int  # tasks that fail once, then succeed on attempt 1
    fails_for_good: bool  # one task fails 4 times: the stage and its job fail


class LogWriter:
    """Writes the application's events; mutates one template dict per kind in place, then serializes it."""

    def __init__(self, out: BinaryIO, templates: Templates, rng: random.Random, shape: AppShape | None = None) -> None:
        self.out = out
        self.t = templates
        self.rng = rng
        self.shape = shape = shape or AppShape()
        self.next_task_id = 0
        self.next_rdd_id = 0
        self.bytes_written = 0
        self.tasks_written = 0
        self.hosts = [f"worker-{h:03d}.cluster.example.com" for h in range(shape.hosts)]
        self.executor_host = [self.hosts[e % shape.hosts] for e in range(shape.executors)]
        self.executor_ids = [str(e + 1) for e in range(shape.executors)]

    def emit(self, event: Event) -> None:
        line = orjson.dumps(event) + b"\n"
        self.out.write(line)
        self.bytes_written += len(line)

    # --- application frame ---------------------------------------------------------------------------

    def write_header(self) -> int:
        t = self.t
        shape = self.shape
        self.emit(t.log_start)
        profile = copy.deepcopy(t.resource_profile)
        requests = profile["Executor Resource Requests"]
        requests["cores"]["Amount"] = shape.cores
        requests["memory"]["Amount"] = shape.executor_memory_gib * 1024  # MiB, as spark.executor.memory below
        requests["memoryOverhead"] = requests["memory"] | {"Resource Name": "memoryOverhead", "Amount": 2048}
        self.emit(profile)
        now = shape.start_ms
        # On YARN the driver (in the application master's container) logs a block manager, not an executor.
        self.emit(self.block_manager("driver", self.hosts[7 % shape.hosts], now + 40, 4_772_593_254))
        env = copy.deepcopy(t.environment)
        env["Spark Properties"] |= {
            "spark.app.name": shape.app_name,
            "spark.app.id": shape.app_id,
            "spark.master": "yarn",
            "spark.submit.deployMode": "cluster",
            "spark.executor.instances": str(shape.executors),
            "spark.executor.cores": str(shape.cores),
            "spark.executor.memory": f"{shape.executor_memory_gib}g",
            "spark.executor.memoryOverhead": "2g",
            "spark.driver.memory": "8g",
            "spark.dynamicAllocation.enabled": "false",
            "spark.sql.shuffle.partitions": "2000",
        }
        env["Spark Properties"].pop("spark.eventLog.dir", None)
        self.emit(env)
        app_start = copy.deepcopy(t.app_start)
        app_start |= {
            "App Name": shape.app_name,
            "App ID": shape.app_id,
            "Timestamp": now - 2500,
            "User": shape.user,
            "App Attempt ID": "1",
        }
        self.emit(app_start)
        added = copy.deepcopy(t.executor_added)
        bm = copy.deepcopy(t.block_manager_added)
        container_prefix = f"container_{shape.app_id.removeprefix('application_')}_01"
        for e in range(shape.executors):
            ts = now + 3000 + self.rng.randrange(20_000)
            added |= {"Timestamp": ts, "Executor ID": self.executor_ids[e]}
            host = self.executor_host[e]
            container = f"{container_prefix}_{e + 2:06d}"
            added["Executor Info"] |= {
                "Host": host,
                "Total Cores": shape.cores,
                "Log Urls": {
                    "stdout": f"http://{host}:8042/node/containerlogs/{container}/{shape.user}/stdout?start=-4096",
                    "stderr": f"http://{host}:8042/node/containerlogs/{container}/{shape.user}/stderr?start=-4096",
                },
            }
            self.emit(added)
            bm |= {
                "Block Manager ID": {"Executor ID": self.executor_ids[e], "Host": host, "Port": 40000 + e},
                "Timestamp": ts + 150,
                "Maximum Memory": 9_473_312_256,
                "Maximum Onheap Memory": 9_473_312_256,
                "Maximum Offheap Memory": 0,
            }
            self.emit(bm)
        return now + 30_000

    def block_manager(self, executor_id: str, host: str, ts: int, memory: int) -> Event:
        bm = copy.deepcopy(self.t.block_manager_added)
        bm |= {
            "Block Manager ID": {"Executor ID": executor_id, "Host": host, "Port": 39000},
            "Timestamp": ts,
            "Maximum Memory": memory,
            "Maximum Onheap Memory": memory,
            "Maximum Offheap Memory": 0,
        }
        return bm

    def write_footer(self, now: int, exit_code: int) -> None:
        end = copy.deepcopy(self.t.app_end)
        end |= {"Timestamp": now, "ExitCode": exit_code}
        self.emit(end)

    # --- jobs and stages ------------------------------------------------------------------------------

    def stage_info(self, plan: StagePlan, attempt: int = 0) -> Event:
        info = copy.deepcopy(self.t.stage_submitted["Stage Info"])
        rdd = info["RDD Info"][0]
        rdd_id = self.next_rdd_id
        self.next_rdd_id += 1
        rdd |= {
            "RDD ID": rdd_id,
            "Name": "MapPartitionsRDD" if plan.is_map else "ShuffledRowRDD",
            "Callsite": plan.name,
            "Parent IDs": [],
            "Number of Partitions": plan.num_tasks,
        }
        info |= {
            "Stage ID": plan.stage_id,
            "Stage Attempt ID": attempt,
            "Stage Name": plan.name,
            "Number of Tasks": plan.num_tasks,
            "RDD Info": [rdd],
            "Parent IDs": list(plan.parent_ids),
        }
        info.pop("Submission Time", None)
        info.pop("Completion Time", None)
        info.pop("Failure Reason", None)
        info["Accumulables"] = []
        return info

    def write_job(self, job_id: int, stages: list[StagePlan], now: int) -> tuple[int, bool]:
        """Write one job; return the time it ended and whether it succeeded."""
        infos = [self.stage_info(plan) for plan in stages]
        job_start = copy.deepcopy(self.t.job_start)
        job_start |= {
            "Job ID": job_id,
            "Submission Time": now,
            "Stage Infos": infos,
            "Stage IDs": [p.stage_id for p in stages],
        }
        job_start["Properties"] = {
            "spark.job.description": f"sessionize batch {job_id}",
            "callSite.short": stages[-1].name,
            "spark.rdd.scope.noOverride": "true",
        }
        self.emit(job_start)
        succeeded = True
        for plan, info in zip(stages, infos, strict=True):
            now, ok = self.write_stage(plan, info, job_start["Properties"], now + 5)
            if not ok:
                succeeded = False
                break
        now += 3
        end = copy.deepcopy(self.t.job_end)
        end |= {"Job ID": job_id, "Completion Time": now}
        failure = {"Message": "Job aborted due to stage failure", "Stack Trace": []}
        end["Job Result"] = {"Result": "JobSucceeded"} if succeeded else {"Result": "JobFailed", "Exception": failure}
        self.emit(end)
        return now, succeeded

    def write_stage(self, plan: StagePlan, info: Event, properties: Event, now: int) -> tuple[int, bool]:
        submitted = {"Event": "SparkListenerStageSubmitted", "Stage Info": info | {"Submission Time": now}}
        submitted["Properties"] = properties
        self.emit(submitted)
        events, end_ms, ok = self.schedule_tasks(plan, now)
        for kind, task in events:
            if kind == 0:
                self.write_task_start(plan, task)
            else:
                self.write_task_end(plan, task)
        completed = {"Event": "SparkListenerStageCompleted", "Stage Info": info | {"Submission Time": now}}
        completed["Stage Info"]["Completion Time"] = end_ms + 2
        if not ok:
            completed["Stage Info"]["Failure Reason"] = (
                f"Job aborted due to stage failure: Task 0 in stage {plan.stage_id}.0 failed 4 times"
            )
        self.emit(completed)
        return end_ms + 2, ok

    def schedule_tasks(self, plan: StagePlan, now: int) -> tuple[list[tuple[int, dict[str, Any]]], int, bool]:
        """Run the stage's tasks on the executor slots (earliest free slot first); return start/end events."""
        rng = self.rng
        cores = self.shape.cores
        slots = [(now + rng.randrange(50), s) for s in range(self.shape.executors * cores)]
        heapq.heapify(slots)
        sigma = 0.35 if plan.is_map else 0.5
        failing = set(rng.sample(range(plan.num_tasks), plan.failing_tasks)) if plan.failing_tasks else set()
        hot = set(rng.sample(range(plan.num_tasks), max(1, plan.num_tasks // 1000))) if plan.skewed else set()
        # (index, attempt, earliest launch): a retry starts only after its failed attempt ended.
        pending: list[tuple[int, int, int]] = [(i, 0, 0) for i in range(plan.num_tasks)]
        pending.reverse()  # pop() takes index 0 first
        events: list[tuple[int, int, int, dict[str, Any]]] = []
        seq = 0
        stage_ok = True
        while pending:
            index, attempt, not_before = pending.pop()
            free_at, slot = heapq.heappop(slots)
            free_at = max(free_at, not_before)
            weight = (25.0 + rng.random() * 25.0) if index in hot else 1.0
            run_ms = max(5, int(rng.lognormvariate(math.log(plan.median_ms * weight), sigma)))
            fails = (index in failing and attempt == 0) or (plan.fails_for_good and index == 0)
            if fails:
                run_ms = max(5, run_ms // 3)
            deser = 1 + int(rng.expovariate(1 / 15))
            launch = free_at + 1 + rng.randrange(5)
            finish = launch + deser + run_ms + 2 + rng.randrange(8)
            task = {
                "id": self.next_task_id,
                "index": index,
                "attempt": attempt,
                "launch": launch,
                "finish": finish,
                "executor": slot // cores,
                "run": run_ms,
                "deser": deser,
                "weight": weight,
                "failed": fails,
            }
            self.next_task_id += 1
            events.append((launch, 0, seq, task))
            events.append((finish, 1, seq, task))
            seq += 1
            heapq.heappush(slots, (finish, slot))
            if fails:
                if plan.fails_for_good and attempt == 3:
                    stage_ok = False
                    break
                pending.insert(max(0, len(pending) - 8), (index, attempt + 1, finish + 10))
        events.sort(key=lambda e: (e[0], e[1], e[2]))
        end_ms = max(e[0] for e in events)
        return [(kind, task) for _ts, kind, _seq, task in events], end_ms, stage_ok

    def write_task_start(self, plan: StagePlan, task: dict[str, Any]) -> None:
        event = self.t.task_start
        event["Stage ID"] = plan.stage_id
        event["Stage Attempt ID"] = 0
        info = event["Task Info"]
        self.fill_task_info(info, plan, task, finished=False)
        self.emit(event)

    def fill_task_info(self, info: Event, plan: StagePlan, task: dict[str, Any], finished: bool) -> None:
        executor = task["executor"]
        info["Task ID"] = task["id"]
        info["Index"] = task["index"]
        info["Attempt"] = task["attempt"]
        info["Partition ID"] = task["index"]
        info["Launch Time"] = task["launch"]
        info["Executor ID"] = self.executor_ids[executor]
        info["Host"] = self.executor_host[executor]
        info["Locality"] = "NODE_LOCAL" if plan.is_map else "PROCESS_LOCAL"
        info["Finish Time"] = task["finish"] if finished else 0
        info["Failed"] = bool(finished and task["failed"])

    def write_task_end(self, plan: StagePlan, task: dict[str, Any]) -> None:
        rng = self.rng
        if task["failed"]:
            event = self.t.failed_task_end
            event["Task End Reason"]["Description"] = (
                f"java.io.IOException: Connection reset by peer (stage {plan.stage_id}, partition {task['index']})"
            )
        else:
            event = self.t.map_task_end if plan.is_map else self.t.result_task_end
        event["Stage ID"] = plan.stage_id
        event["Stage Attempt ID"] = 0
        event["Task Type"] = "ShuffleMapTask" if plan.is_map else "ResultTask"
        self.fill_task_info(event["Task Info"], plan, task, finished=True)
        run = task["run"]
        weight = task["weight"]
        gc = int(run * rng.uniform(0.01, 0.12))
        cpu_ns = int(run * rng.uniform(0.55, 0.95) * 1_000_000)
        m = event["Task Metrics"]
        m["Executor Deserialize Time"] = task["deser"]
        m["Executor Deserialize CPU Time"] = task["deser"] * rng.randrange(200_000, 900_000)
        m["Executor Run Time"] = run
        m["Executor CPU Time"] = cpu_ns
        m["Result Size"] = rng.randrange(1800, 6000)
        m["JVM GC Time"] = gc
        m["Result Serialization Time"] = rng.randrange(0, 3)
        peak = int(rng.uniform(16, 96) * 2**20 * weight)
        m["Peak Execution Memory"] = peak
        m["Peak On Heap Execution Memory"] = peak
        spill = int(peak * rng.uniform(2, 6)) if plan.spills else 0
        m["Memory Bytes Spilled"] = spill
        m["Disk Bytes Spilled"] = spill // 3
        read = m["Shuffle Read Metrics"]
        write = m["Shuffle Write Metrics"]
        if plan.is_map:
            in_bytes = int(rng.uniform(0.6, 1.0) * 128 * 2**20)
            m["Input Metrics"] = {"Bytes Read": in_bytes, "Records Read": in_bytes // 180}
            written = int(in_bytes * rng.uniform(0.15, 0.3))
            write["Shuffle Bytes Written"] = written
            write["Shuffle Records Written"] = written // 60
            write["Shuffle Write Time"] = int(written * rng.uniform(1.5, 4.0))
        else:
            total = int(rng.uniform(20, 40) * 2**20 * weight)
            hosts = self.shape.hosts
            local = total // hosts
            blocks = 400
            read["Remote Blocks Fetched"] = blocks - blocks // hosts
            read["Local Blocks Fetched"] = blocks // hosts
            read["Fetch Wait Time"] = int(run * rng.uniform(0.0, 0.08))
            read["Remote Bytes Read"] = total - local
            read["Local Bytes Read"] = local
            read["Total Records Read"] = total // 60
            read["Remote Requests Duration"] = int(run * rng.uniform(0.02, 0.15))
            m["Output Metrics"] = {"Bytes Written": total // 4, "Records Written": total // 240}
        for accumulable in event["Task Info"]["Accumulables"]:
            name = accumulable["Name"]
            value = ACCUMULABLE_SOURCES.get(name)
            if value is not None:
                update = value(m)
                accumulable["Update"] = update
                accumulable["Value"] = update
        tem = event.get("Task Executor Metrics")
        if tem is not None:
            heap = rng.randrange(2, 12) * 2**30
            tem["JVMHeapMemory"] = heap
            tem["JVMOffHeapMemory"] = rng.randrange(150, 300) * 2**20
            tem["OnHeapExecutionMemory"] = peak
            tem["OnHeapUnifiedMemory"] = peak
            tem["ProcessTreeJVMRSSMemory"] = heap + rng.randrange(1, 3) * 2**30
            tem["MinorGCCount"] = rng.randrange(5, 200)
            tem["MinorGCTime"] = gc * 4
            tem["TotalGCTime"] = gc * 5
        self.emit(event)
        self.tasks_written += 1


ACCUMULABLE_SOURCES = {
    "internal.metrics.executorDeserializeTime": lambda m: m["Executor Deserialize Time"],
    "internal.metrics.executorDeserializeCpuTime": lambda m: m["Executor Deserialize CPU Time"],
    "internal.metrics.executorRunTime": lambda m: m["Executor Run Time"],
    "internal.metrics.executorCpuTime": lambda m: m["Executor CPU Time"],
    "internal.metrics.resultSize": lambda m: m["Result Size"],
    "internal.metrics.jvmGCTime": lambda m: m["JVM GC Time"],
    "internal.metrics.peakExecutionMemory": lambda m: m["Peak Execution Memory"],
    "internal.metrics.memoryBytesSpilled": lambda m: m["Memory Bytes Spilled"],
    "internal.metrics.diskBytesSpilled": lambda m: m["Disk Bytes Spilled"],
    "internal.metrics.shuffle.write.bytesWritten": lambda m: m["Shuffle Write Metrics"]["Shuffle Bytes Written"],
    "internal.metrics.shuffle.write.recordsWritten": lambda m: m["Shuffle Write Metrics"]["Shuffle Records Written"],
    "internal.metrics.shuffle.write.writeTime": lambda m: m["Shuffle Write Metrics"]["Shuffle Write Time"],
    "internal.metrics.shuffle.read.localBytesRead": lambda m: m["Shuffle Read Metrics"]["Local Bytes Read"],
    "internal.metrics.shuffle.read.remoteBytesRead": lambda m: m["Shuffle Read Metrics"]["Remote Bytes Read"],
    "internal.metrics.shuffle.read.recordsRead": lambda m: m["Shuffle Read Metrics"]["Total Records Read"],
}


def plan_stages(rng: random.Random, target_tasks: int, mix: JobMix | None = None) -> Iterator[list[StagePlan]]:
    """Jobs of a map stage and a reduce stage, for as long as the caller asks."""
    mix = mix or JobMix()
    stage_id = 0
    total = 0
    job = 0
    failed_job = None
    while True:
        map_tasks = rng.choice(mix.map_tasks)
        reduce_tasks = rng.choice(mix.reduce_tasks)
        map_plan = StagePlan(
            stage_id=stage_id,
            name=f"parquet at sessionize.py:{40 + job % 7}",
            num_tasks=map_tasks,
            is_map=True,
            parent_ids=(),
            median_ms=rng.uniform(800, 6000),
            skewed=False,
            spills=rng.random() < mix.map_spill_rate,
            failing_tasks=rng.choice((0, 0, 0, 1, 3)),
            fails_for_good=False,
        )
        # One job a few percent into the run fails for good; a tenth of reduce stages are skewed.
        fails_for_good = mix.fail_one_job and failed_job is None and total > target_tasks // 20
        if fails_for_good:
            failed_job = job
        reduce_plan = StagePlan(
            stage_id=stage_id + 1,
            name=f"save at sessionize.py:{90 + job % 5}",
            num_tasks=reduce_tasks,
            is_map=False,
            parent_ids=(stage_id,),
            median_ms=rng.uniform(500, 4000),
            skewed=rng.random() < mix.reduce_skew_rate,
            spills=rng.random() < mix.reduce_spill_rate,
            failing_tasks=rng.choice((0, 0, 1, 2)),
            fails_for_good=fails_for_good,
        )
        yield [map_plan, reduce_plan]
        stage_id += 2
        total += map_tasks + reduce_tasks
        job += 1


class PlainAndZstdTee(io.RawIOBase):
    """Write to a plain file and, optionally, through a zstd compressor to a second file."""

    def __init__(self, plain: BinaryIO, compressed: BinaryIO | None) -> None:
        self.plain = plain
        self.compressor = zstandard.ZstdCompressor(level=1).stream_writer(compressed) if compressed else None

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.plain.write(data)
        if self.compressor is not None:
            self.compressor.write(data)
        return len(data)

    def close(self) -> None:
        if self.compressor is not None:
            self.compressor.close()
        super().close()


def write_app(
    out: BinaryIO,
    templates: Templates,
    rng: random.Random,
    tasks: int,
    shape: AppShape | None = None,
    mix: JobMix | None = None,
    exit_code: int = 0,
) -> dict[str, int]:
    """Write one whole application of at least ``tasks`` task attempts to ``out``; its jobs, tasks and failed jobs."""
    writer = LogWriter(out, templates, rng, shape)
    now = writer.write_header()
    jobs = 0
    failed_jobs = 0
    for job_id, stages in enumerate(plan_stages(rng, tasks, mix)):
        now, ok = writer.write_job(job_id, stages, now + 200 + rng.randrange(2000))
        jobs += 1
        failed_jobs += not ok
        if writer.tasks_written >= tasks:
            break
    writer.write_footer(now + 1500, exit_code)
    return {"jobs": jobs, "tasks": writer.tasks_written, "failed_jobs": failed_jobs, "end_ms": now + 1500}


def generate(out_dir: Path, tasks: int, seed: int, template: Path, with_zstd: bool) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    templates = load_templates(template)
    plain_path = out_dir / APP_ID
    zstd_dir = out_dir / "zstd"
    zstd_path = zstd_dir / f"{APP_ID}.zstd"
    if with_zstd:
        zstd_dir.mkdir(exist_ok=True)
    started = time.monotonic()
    with plain_path.open("wb") as plain, zstd_path.open("wb") if with_zstd else io.BytesIO() as compressed:
        tee = PlainAndZstdTee(io.BufferedWriter(plain, 1 << 20), compressed if with_zstd else None)  # type: ignore[arg-type]
        sink = io.BufferedWriter(tee, 1 << 20)
        written = write_app(sink, templates, rng, tasks)  # type: ignore[arg-type]
        sink.flush()
        tee.plain.flush()
        tee.close()
    jobs = written["jobs"]
    result = {
        "path": str(plain_path),
        "zstd_path": str(zstd_path) if with_zstd else None,
        "app_id": APP_ID,
        "bytes": plain_path.stat().st_size,
        "zstd_bytes": zstd_path.stat().st_size if with_zstd else None,
        "tasks": written["tasks"],
        "jobs": jobs,
        "failed_jobs": written["failed_jobs"],
        "stages": jobs * 2,
        "executors": EXECUTORS,
        "hosts": HOSTS,
        "seed": seed,
        "template": str(template),
        "seconds": round(time.monotonic() - started, 1),
    }
    (out_dir / "large_log.json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "large")
    parser.add_argument("--tasks", type=int, default=1_000_000, help="task attempts to write, at least")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--template", type=Path, default=None, help="a real Spark 4.x event log (uncompressed)")
    parser.add_argument("--zstd", action="store_true", help="also write a zstd copy (Spark's .zstd codec)")
    args = parser.parse_args()
    template = args.template or (DEFAULT_TEMPLATE if DEFAULT_TEMPLATE.exists() else FALLBACK_TEMPLATE)
    result = generate(args.out, args.tasks, args.seed, template, args.zstd)
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
