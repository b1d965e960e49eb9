"""Fill a PostgreSQL database with N realistic analyzed apps for the web benchmark (bench_web.py).

    .venv/bin/python benchmarks/fill_apps.py --apps 1000000 --reset       # ~database hindsight_bench_web

The database (``--db``, default ``hindsight_bench_web`` on 127.0.0.1:5432, user postgres) is created when
missing and migrated; ``--reset`` drops and re-creates it first. Not ``hindsight_bench``: bench_throughput.py
drops and re-creates that one on every run. Never point it at ``test``.

Shape (seeded: same --seed, --apps and --until, same rows):

* 5 clusters; 2,000 users and 300 queues, both Zipf-distributed (a few busy users/queues, a long tail);
* 20,000 flow definitions (Airflow / Azkaban / Oozie), each with 1-5 job definitions (a template each), owned by
  one user and queue on one cluster; ~80 % of apps belong to a flow run (``flow_exec_id``), whose jobs all run,
  one app per job; the rest are ad hoc apps (no scheduler);
* ~70 % Spark (YARN ``application_<ts>_<seq>`` ids), ~30 % MapReduce (``job_<ts>_<seq>``); job types;
* start times spread over the 30 days before ``--until``; runtimes log-normal (median ~6 min);
* per app every heuristic of its type (Spark 15, MapReduce 13 codes from the heuristic registry) minus a few it
  skipped (~12 results), each with 2 details; result severities skewed (95 % NONE), so ~55 % of apps are NONE and
  ~20 % MODERATE or worse; the app's severity is the worst finding, its score (cost in GB-seconds) their sum;
* per Spark app (``--summaries-share``, default all) ~10 stage summaries and ~8 executor summaries.

Rows go in by COPY (psycopg2 ``copy_expert``, the project's driver) in chunks of ``--chunk`` apps. On a fresh fill
the secondary indexes and foreign keys of the five tables are dropped during the load and re-created after it
(one bulk build instead of 50M index insertions), then VACUUM ANALYZE. Times and sizes are printed and written
to ``--json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from heuristics import BUILTINS  # noqa: E402  (the repository is put on the path just above)

DEFAULT_DB = "hindsight_bench_web"
DEFAULT_UNTIL = "2026-11-22T00:00:00+00:00"
TABLES = (
    "analyzer_analyzedapp",
    "analyzer_heuristicresult",
    "analyzer_heuristicdetail",
    "analyzer_stagesummary",
    "analyzer_executorsummary",
)
NULL = "\\N"
DAY_MS = 86_400_000

# The built-in heuristics' codes, in registry order, per app type.
SPARK_CODES = tuple(h.code for h in BUILTINS if "spark" in h.app_types)
MAPREDUCE_CODES = tuple(h.code for h in BUILTINS if "mapreduce" in h.app_types)
CLUSTERS = ("prod-east", "prod-west", "analytics", "ml-training", "adhoc")
CLUSTER_WEIGHTS = (0.35, 0.25, 0.2, 0.12, 0.08)
SCHEDULERS = ("airflow", "azkaban", "oozie")
SPARK_JOB_TYPES = ("Spark", "PySpark", "SparkSQL")
MR_JOB_TYPES = ("HadoopJava", "Pig", "Hive")
WORDS = [
    "sales",
    "orders",
    "clicks",
    "sessions",
    "users",
    "ledger",
    "inventory",
    "payments",
    "fraud",
    "recs",
    "search",
    "ads",
    "events",
    "metrics",
    "billing",
    "churn",
    "features",
    "embeddings",
    "logs",
    "geo",
    "pricing",
    "catalog",
    "returns",
    "shipments",
    "reviews",
]
VERBS = ("load", "agg", "join", "dedup", "export", "train", "score", "compact", "backfill", "report")
SEVERITY_P = (0.95, 0.03, 0.012, 0.006, 0.002)  # of one finding: NONE, LOW, MODERATE, SEVERE, CRITICAL
DETAIL_NAMES = (
    ("Median task duration", "Max task duration"),
    ("Ratio", "Tasks involved"),
    ("GC time", "CPU time"),
    ("Spilled bytes", "Memory per task"),
)


def zipf_weights(n: int, s: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** s
    return weights / weights.sum()


@dataclass
class Shape:
    """The fixed population the apps are drawn from (users, queues, flows); a function of the seed only."""

    seed: int
    until_ms: int
    users: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    flow_user: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flow_queue: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flow_cluster: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flow_jobs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flow_spark: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    flow_sched: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    flow_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))
    flow_names: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, seed: int, until_ms: int, n_users: int = 2000, n_queues: int = 300, n_flows: int = 20000) -> Shape:
        rng = np.random.default_rng(seed)
        shape = cls(seed=seed, until_ms=until_ms)
        shape.users = [f"{WORDS[i % len(WORDS)][:4]}{i:04d}" for i in range(n_users)]
        shape.queues = [f"root.{WORDS[i % len(WORDS)]}.q{i:03d}" for i in range(n_queues)]
        shape.flow_user = rng.choice(n_users, size=n_flows, p=zipf_weights(n_users))
        shape.flow_queue = rng.choice(n_queues, size=n_flows, p=zipf_weights(n_queues))
        shape.flow_cluster = rng.choice(len(CLUSTERS), size=n_flows, p=CLUSTER_WEIGHTS)
        shape.flow_jobs = rng.integers(1, 6, size=n_flows)
        shape.flow_spark = rng.random(n_flows) < 0.7
        shape.flow_sched = rng.integers(0, len(SCHEDULERS), size=n_flows)
        shape.flow_weight = zipf_weights(n_flows, 0.8)  # hourly flows run far more often than weekly ones
        shape.flow_names = [f"{WORDS[i % len(WORDS)]}_{WORDS[(i * 7) % len(WORDS)]}_{i:05d}" for i in range(n_flows)]
        return shape


@dataclass
class Counters:
    apps: int = 0
    results: int = 0
    details: int = 0
    stages: int = 0
    executors: int = 0


def _esc(text: str) -> str:
    """COPY text format: backslash, tab and newlines are escaped."""
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return text


def _times(ms: np.ndarray) -> list[str]:
    return [f"{s}+00" for s in ms.astype("datetime64[ms]").astype(str).tolist()]


def _strs(values: np.ndarray) -> list[str]:
    return [str(v) for v in values.tolist()]


def _rows(columns: Sequence[Sequence[str]]) -> str:
    return "\n".join("\t".join(row) for row in zip(*columns, strict=True)) + "\n"


class Filler:
    """Writes chunks of apps and their children with COPY through a psycopg2 cursor."""

    def __init__(self, cursor: Any, shape: Shape, columns: dict[str, list[str]], defaults: dict[str, dict[str, str]]):
        self.cursor = cursor
        self.shape = shape
        self.columns = columns  # table -> its column names (every one is given: COPY sets no Django defaults)
        self.defaults = defaults  # table -> column -> COPY text of the model default, for columns not generated
        self.counters = Counters()
        cursor.execute("SELECT coalesce(max(id), 0) FROM analyzer_analyzedapp")
        self.next_app = int(cursor.fetchone()[0]) + 1
        cursor.execute("SELECT coalesce(max(id), 0) FROM analyzer_heuristicresult")
        self.next_result = int(cursor.fetchone()[0]) + 1
        self.cluster_ids = self._clusters()
        self.run_seq = 0  # flow runs made so far (flow_exec_id numbers)
        self.app_seq = np.zeros(len(CLUSTERS), dtype=np.int64)  # per cluster YARN sequence numbers

    def _clusters(self) -> list[int]:
        ids = []
        for name in CLUSTERS:
            self.cursor.execute(
                "INSERT INTO analyzer_cluster (name, jobhistory_url, created_at, updated_at) "
                "VALUES (%s, %s, now(), now()) ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id",
                (name, f"http://jhs.{name}.example:19888"),
            )
            ids.append(int(self.cursor.fetchone()[0]))
        return ids

    def _copy(self, table: str, given: dict[str, list[str]], n: int) -> None:
        columns = self.columns[table]
        data = []
        for column in columns:
            if column in given:
                data.append(given[column])
            else:
                data.append([self.defaults[table][column]] * n)
        body = _rows(data)
        quoted = ", ".join(f'"{c}"' for c in columns)
        self.cursor.copy_expert(f"COPY {table} ({quoted}) FROM STDIN", io.StringIO(body))

    def chunk(self, n: int, chunk_index: int, summaries_share: float) -> None:
        shape = self.shape
        rng = np.random.default_rng([shape.seed, chunk_index])
        # Apps: flow runs (all their jobs) until ~80 % of the chunk, ad hoc apps for the rest.
        flows: list[int] = []
        jobs: list[int] = []
        runs: list[int] = []
        picks = rng.choice(len(shape.flow_weight), size=max(1, int(n * 0.8 / 3)), p=shape.flow_weight)
        for flow in picks.tolist():
            self.run_seq += 1
            for job in range(int(shape.flow_jobs[flow])):
                if len(flows) >= int(n * 0.8):
                    break
                flows.append(flow)
                jobs.append(job)
                runs.append(self.run_seq)
            if len(flows) >= int(n * 0.8):
                break
        n_flow = len(flows)
        n_adhoc = n - n_flow
        flow_a = np.array(flows, dtype=np.int64)
        ids = np.arange(self.next_app, self.next_app + n, dtype=np.int64)
        self.next_app += n
        user = np.concatenate(
            [shape.flow_user[flow_a], rng.choice(len(shape.users), n_adhoc, p=zipf_weights(len(shape.users)))]
        )
        queue = np.concatenate(
            [shape.flow_queue[flow_a], rng.choice(len(shape.queues), n_adhoc, p=zipf_weights(len(shape.queues)))]
        )
        cluster = np.concatenate([shape.flow_cluster[flow_a], rng.choice(len(CLUSTERS), n_adhoc, p=CLUSTER_WEIGHTS)])
        spark = np.concatenate([shape.flow_spark[flow_a], rng.random(n_adhoc) < 0.7])
        # Times: a run's jobs start one after another; ad hoc apps anywhere in the 30 days.
        span = 30 * DAY_MS
        run_start = rng.integers(shape.until_ms - span, shape.until_ms - DAY_MS // 24, size=n)
        runtime = np.clip(rng.lognormal(np.log(360_000), 1.1, size=n), 5_000, 20 * 3_600_000).astype(np.int64)
        job_a = np.concatenate([np.array(jobs, dtype=np.int64), np.zeros(n_adhoc, dtype=np.int64)])
        if n_flow:
            run_a = np.array(runs, dtype=np.int64)
            first = np.concatenate([[True], run_a[1:] != run_a[:-1]])
            start_of_run = np.maximum.accumulate(np.where(first, np.arange(n_flow), 0))
            run_start[:n_flow] = run_start[:n_flow][start_of_run] + job_a[:n_flow] * 420_000
        start = run_start
        end = start + runtime
        incomplete = rng.random(n) < 0.002  # logs cut short: no end time
        failed = rng.random(n) < 0.04
        # Findings: every code of the app's type but a few skipped at random; ~12 per app.
        self._apps_and_findings(
            rng,
            n,
            ids,
            user,
            queue,
            cluster,
            spark,
            flow_a,
            job_a,
            runs,
            start,
            end,
            runtime,
            incomplete,
            failed,
            summaries_share,
        )

    def _apps_and_findings(
        self,
        rng: np.random.Generator,
        n: int,
        ids: np.ndarray,
        user: np.ndarray,
        queue: np.ndarray,
        cluster: np.ndarray,
        spark: np.ndarray,
        flow_a: np.ndarray,
        job_a: np.ndarray,
        runs: list[int],
        start: np.ndarray,
        end: np.ndarray,
        runtime: np.ndarray,
        incomplete: np.ndarray,
        failed: np.ndarray,
        summaries_share: float,
    ) -> None:
        shape = self.shape
        n_flow = len(flow_a)
        n_codes = np.where(spark, len(SPARK_CODES), len(MAPREDUCE_CODES))
        skipped = np.where(spark, rng.integers(2, 5, size=n), rng.integers(0, 3, size=n))
        kept = n_codes - skipped
        total = int(kept.sum())
        result_app = np.repeat(np.arange(n), kept)
        # Position within the app: 0..kept-1; which codes: the first `kept` of a per-app shuffle.
        offsets = np.concatenate([[0], np.cumsum(kept)[:-1]])
        position = np.arange(total) - np.repeat(offsets, kept)
        order = np.argsort(rng.random((n, len(SPARK_CODES))), axis=1)
        is_spark_result = spark[result_app]
        # Spark: a random `kept` of its 15 codes; MapReduce: its first `kept` codes in registry order.
        code_idx = np.where(is_spark_result, order[result_app, position], position)
        sev = rng.choice(5, size=total, p=SEVERITY_P).astype(np.int64)
        tasks = rng.integers(1, 4000, size=total)  # what the finding's observed values count
        # Each finding's score is its cost in GB-seconds (docs/IMPACT.md): a share of the app's memory-time that grows
        # with severity (up to ~10% per level), of an app holding 16-800 GB for its runtime; none at NONE.
        app_memory_gb = rng.choice([16, 64, 256, 800], size=n)
        share = rng.uniform(0.0, 0.1, size=total) * sev
        score = np.round(share * (runtime[result_app] / 1000) * app_memory_gb[result_app]).astype(np.int64)
        app_sev = np.zeros(n, dtype=np.int64)
        np.maximum.at(app_sev, result_app, sev)
        app_score = np.zeros(n, dtype=np.int64)
        np.add.at(app_score, result_app, score)

        # The apps.
        clusters = np.array(self.cluster_ids, dtype=np.int64)[cluster]
        seq = np.empty(n, dtype=np.int64)
        for c in range(len(CLUSTERS)):
            mask = cluster == c
            count = int(mask.sum())
            seq[mask] = self.app_seq[c] + np.arange(1, count + 1)
            self.app_seq[c] += count
        cluster_ts = 1_762_000_000_000 + np.arange(len(CLUSTERS)) * 1_111_111
        app_ids = [
            f"{'application' if s else 'job'}_{cluster_ts[c]}_{q:06d}"
            for s, c, q in zip(spark.tolist(), cluster.tolist(), seq.tolist(), strict=True)
        ]
        attempt = np.where(spark & (rng.random(n) < 0.03), "2", np.where(spark, "1", ""))
        flow_names = [shape.flow_names[f] for f in flow_a.tolist()]
        sched = [SCHEDULERS[int(shape.flow_sched[f])] for f in flow_a.tolist()]
        flow_def = [f"{sc}:{fn}" for sc, fn in zip(sched, flow_names, strict=True)] + [""] * (n - n_flow)
        job_def = [
            f"{fd}/{WORDS[(j * 3 + 1) % len(WORDS)]}_{VERBS[j]}" if fd else ""
            for fd, j in zip(flow_def, job_a.tolist(), strict=True)
        ]
        template = [
            f"{WORDS[(j * 3 + 1) % len(WORDS)]}_{VERBS[j]}" if fd else ""
            for fd, j in zip(flow_def, job_a.tolist(), strict=True)
        ]
        flow_exec = [f"{fd}@run{r:08d}" for fd, r in zip(flow_def[:n_flow], runs, strict=True)] + [""] * (n - n_flow)
        job_exec = [f"{fe}/{j}" if fe else "" for fe, j in zip(flow_exec, job_a.tolist(), strict=True)]
        names = []
        for i in range(n):
            if i < n_flow:
                names.append(f"{flow_names[i]}.{template[i]}")
            else:
                w = rng.integers(0, len(WORDS), size=2)
                names.append(f"adhoc {WORDS[w[0]]} {VERBS[int(w[1]) % len(VERBS)]} {shape.users[int(user[i])]}")
        job_type = np.where(
            spark,
            np.array(SPARK_JOB_TYPES)[rng.integers(0, 3, size=n)],
            np.array(MR_JOB_TYPES)[rng.integers(0, 3, size=n)],
        )
        status = np.where(incomplete, "INCOMPLETE", np.where(failed, "FAILED", "SUCCEEDED"))
        executors = rng.integers(2, 200, size=n)
        mem_gb = executors * rng.choice([4, 8, 16], size=n)
        used = mem_gb * runtime / 3_600_000
        wasted = used * rng.beta(2, 5, size=n)
        end_text = _times(end)
        start_text = _times(start)
        metrics = [
            json.dumps(
                {
                    "executors": int(e),
                    "executor_memory_gb": int(m // max(e, 1)),
                    "tasks": int(t),
                    "used_gb_hours": round(float(u), 3),
                    "wasted_gb_hours": round(float(w), 3),
                    "input_bytes": int(t) * 134_217_728,
                    "shuffle_bytes": int(t) * 20_000_000,
                }
            )
            for e, m, t, u, w in zip(
                executors.tolist(),
                mem_gb.tolist(),
                (executors * 12).tolist(),
                used.tolist(),
                wasted.tolist(),
                strict=True,
            )
        ]
        props = json.dumps({f"spark.conf.key{k}": f"value{k}" for k in range(20)})
        yarn_view = json.dumps(
            {
                "queue": "q",
                "finalStatus": "SUCCEEDED",
                "memorySeconds": 123456789,
                "vcoreSeconds": 98765,
                "allocatedMB": 8192,
                "allocatedVCores": 4,
            }
        )
        host = [f"{c}" for c in np.array(CLUSTERS)[cluster].tolist()]
        source = [f"{h}:{'spark-history' if s else 'jobhistory'}" for h, s in zip(host, spark.tolist(), strict=True)]
        app_type = np.where(spark, "SPARK", "MAPREDUCE").tolist()
        given: dict[str, list[str]] = {
            "id": _strs(ids),
            "source": source,
            "app_id": app_ids,
            "attempt_id": attempt.tolist(),
            "app_type": app_type,
            "name": [_esc(x) for x in names],
            "user": [shape.users[u] for u in user.tolist()],
            "queue": [shape.queues[q] for q in queue.tolist()],
            "job_type": job_type.tolist(),
            "scheduler": sched + [""] * (n - n_flow),
            "flow_def_id": flow_def,
            "flow_def_url": [
                f"https://{s}.example/flows/{fd}" if fd else ""
                for s, fd in zip(sched + [""] * (n - n_flow), flow_def, strict=True)
            ],
            "flow_exec_id": flow_exec,
            "flow_exec_url": [f"https://sched.example/runs/{fe}" if fe else "" for fe in flow_exec],
            "job_def_id": job_def,
            "job_def_url": [f"https://sched.example/jobs/{jd}" if jd else "" for jd in job_def],
            "job_exec_id": job_exec,
            "job_exec_url": [f"https://sched.example/jobruns/{je}" if je else "" for je in job_exec],
            "job_name": template,
            # analysis.jobinfo's key: <type>:<scheduler>:<job def> when scheduled, else <type>:@<user>:<name>.
            "template": [
                f"{t}:{sc}:{jd}" if jd else f"{t}:@{shape.users[int(u)]}:{nm}"
                for t, sc, jd, u, nm in zip(
                    app_type, sched + [""] * (n - n_flow), job_def, user.tolist(), names, strict=True
                )
            ],
            "spark_version": np.where(
                spark, np.array(["3.5.3", "4.0.1", "4.1.1"])[rng.integers(0, 3, size=n)], ""
            ).tolist(),
            "start_time": start_text,
            "end_time": [NULL if inc else e for inc, e in zip(incomplete.tolist(), end_text, strict=True)],
            "status": status.tolist(),
            "partial": np.where(incomplete, "t", "f").tolist(),
            "severity": _strs(app_sev),
            "score": _strs(app_score),
            "runtime_ms": [
                NULL if inc else str(r) for inc, r in zip(incomplete.tolist(), runtime.tolist(), strict=True)
            ],
            "used_gb_hours": [f"{u:.3f}" for u in used.tolist()],
            "wasted_gb_hours": [f"{w:.3f}" for w in wasted.tolist()],
            "metrics": metrics,
            "warnings": ["[]"] * n,
            "parse_stats": [json.dumps({"events": int(t) * 3, "bad_lines": 0}) for t in (executors * 40).tolist()],
            "spark_properties": [props if s else "{}" for s in spark.tolist()],
            "cluster_id": _strs(clusters),
            "yarn": [yarn_view if c < 2 else "{}" for c in cluster.tolist()],
            "analysis_ms": _strs(rng.integers(50, 5000, size=n)),
            # Analyzed when it ended (an incomplete log: when it started).
            "analyzed_at": [
                s if inc else e for inc, s, e in zip(incomplete.tolist(), start_text, end_text, strict=True)
            ],
        }
        self._copy("analyzer_analyzedapp", given, n)

        # Heuristic results and their details.
        result_ids = np.arange(self.next_result, self.next_result + total, dtype=np.int64)
        self.next_result += total
        mapreduce_idx = np.minimum(code_idx, len(MAPREDUCE_CODES) - 1)  # Spark rows index past the shorter list
        codes = np.where(is_spark_result, np.array(SPARK_CODES)[code_idx], np.array(MAPREDUCE_CODES)[mapreduce_idx])
        code_list = codes.tolist()
        sev_list = sev.tolist()
        ratio = rng.random(total) * 8
        self._copy(
            "analyzer_heuristicresult",
            {
                "id": _strs(result_ids),
                "app_id": _strs(ids[result_app]),
                "position": _strs(position),
                "code": code_list,
                "name": [c.split(".", 1)[1].replace("_", " ").capitalize() for c in code_list],
                "severity": [str(s) for s in sev_list],
                "score": _strs(score),
                "advice": [
                    "" if s == 0 else "Raise spark.executor.memory or split the largest partitions." for s in sev_list
                ],
                "observed": [
                    f'{{"ratio": {r:.2f}, "tasks": {t}}}' for r, t in zip(ratio.tolist(), tasks.tolist(), strict=True)
                ],
                "thresholds": ['{"ratio": [1.5, 2, 4, 8]}'] * total,
                "stages": ["[]" if s == 0 else "[[3, 0], [7, 0]]" for s in sev_list],
                "executors": ["[]" if s == 0 else '["4", "17"]' for s in sev_list],
            },
            total,
        )
        detail_kind = code_idx % len(DETAIL_NAMES)
        d_result = np.repeat(result_ids, 2)
        d_pos = np.tile(np.array([0, 1]), total)
        d_names = [DETAIL_NAMES[k][p] for k, p in zip(np.repeat(detail_kind, 2).tolist(), d_pos.tolist(), strict=True)]
        d_values = rng.lognormal(3, 1.5, size=2 * total)
        self._copy(
            "analyzer_heuristicdetail",
            {
                "result_id": _strs(d_result),
                "position": _strs(d_pos),
                "name": d_names,
                "value": [f"{v:,.1f}" for v in d_values.tolist()],
            },
            2 * total,
        )
        self.counters.apps += n
        self.counters.results += total
        self.counters.details += 2 * total

        # Stage and executor summaries of Spark apps.
        with_summaries = np.flatnonzero(spark & (rng.random(n) < summaries_share))
        if with_summaries.size:
            self._summaries(rng, ids[with_summaries], start[with_summaries], runtime[with_summaries])

    def _summaries(self, rng: np.random.Generator, app_ids: np.ndarray, start: np.ndarray, runtime: np.ndarray) -> None:
        per_app = rng.integers(6, 15, size=app_ids.size)
        total = int(per_app.sum())
        app = np.repeat(app_ids, per_app)
        offsets = np.concatenate([[0], np.cumsum(per_app)[:-1]])
        stage_id = np.arange(total) - np.repeat(offsets, per_app)
        app_start = np.repeat(start, per_app)
        app_runtime = np.repeat(runtime, per_app)
        sub = app_start + (app_runtime * stage_id / np.repeat(per_app, per_app)).astype(np.int64)
        duration = np.maximum(100, (app_runtime / np.repeat(per_app, per_app) * rng.uniform(0.3, 1.0, total))).astype(
            np.int64
        )
        num_tasks = rng.integers(1, 2000, size=total)
        failed = np.where(rng.random(total) < 0.02, rng.integers(1, 5, size=total), 0)
        q = np.sort(rng.lognormal(7, 1, size=(total, 5)), axis=1).astype(np.int64)
        quantiles = [f"[{a}, {b}, {c}, {d}, {e}]" for a, b, c, d, e in q.tolist()]
        in_bytes = rng.integers(0, 50_000_000_000, size=total)
        shuffle = rng.integers(0, 10_000_000_000, size=total)
        spill = np.where(rng.random(total) < 0.1, rng.integers(1, 5_000_000_000, size=total), 0)
        hist = '{"edges_ms": [10, 100, 1000, 10000, 100000], "counts": [3, 40, 120, 8]}'
        given = {
            "app_id": _strs(app),
            "stage_id": _strs(stage_id),
            "attempt_id": ["0"] * total,
            "name": [f"collect at job.py:{s * 17 + 40}" for s in stage_id.tolist()],
            "status": ["FAILED" if f else "COMPLETE" for f in failed.tolist()],
            "num_tasks": _strs(num_tasks),
            "num_complete_tasks": _strs(num_tasks - failed),
            "num_failed_tasks": _strs(failed),
            "num_killed_tasks": ["0"] * total,
            "submission_time": _times(sub),
            "completion_time": _times(sub + duration),
            "duration_ms": _strs(duration),
            "executor_run_time_ms": _strs(duration * 8),
            "executor_cpu_time_ms": [f"{v:.1f}" for v in (duration * 6.5).tolist()],
            "jvm_gc_time_ms": _strs(duration // 20),
            "input_bytes": _strs(in_bytes),
            "input_records": _strs(in_bytes // 200),
            "output_bytes": _strs(in_bytes // 3),
            "output_records": _strs(in_bytes // 600),
            "shuffle_read_bytes": _strs(shuffle),
            "shuffle_read_records": _strs(shuffle // 100),
            "shuffle_write_bytes": _strs(shuffle),
            "shuffle_write_records": _strs(shuffle // 100),
            "memory_bytes_spilled": _strs(spill * 3),
            "disk_bytes_spilled": _strs(spill),
            "peak_execution_memory": _strs(rng.integers(0, 4_000_000_000, size=total)),
            "task_duration_quantiles": quantiles,
            "task_duration_histogram": [hist] * total,
            "failure_reason": [
                "" if f == 0 else "Job aborted due to stage failure: Task 3 failed 4 times" for f in failed.tolist()
            ],
        }
        self._copy("analyzer_stagesummary", given, total)
        self.counters.stages += total

        per_app = rng.integers(4, 13, size=app_ids.size)
        total = int(per_app.sum())
        app = np.repeat(app_ids, per_app)
        offsets = np.concatenate([[0], np.cumsum(per_app)[:-1]])
        index = np.arange(total) - np.repeat(offsets, per_app)
        app_start = np.repeat(start, per_app)
        app_end = app_start + np.repeat(runtime, per_app)
        tasks = rng.integers(10, 5000, size=total)
        removed = rng.random(total) < 0.05
        peak = '{"JVMHeapMemory": 3221225472, "JVMOffHeapMemory": 268435456, "OnHeapExecutionMemory": 1073741824}'
        given = {
            "app_id": _strs(app),
            "executor_id": ["driver" if i == 0 else str(i) for i in index.tolist()],
            "host": [f"node{h:04d}.example:7337" for h in rng.integers(0, 2000, size=total).tolist()],
            "cores": ["4"] * total,
            "added_time": _times(app_start),
            "removed_time": _times(app_end),
            "removed_reason": [
                "Container killed by YARN for exceeding memory limits" if r else "" for r in removed.tolist()
            ],
            "max_memory": ["4613734400"] * total,
            "total_tasks": _strs(tasks),
            "failed_tasks": _strs(np.where(removed, 4, 0)),
            "total_duration_ms": _strs(tasks * 800),
            "total_gc_time_ms": _strs(tasks * 30),
            "total_input_bytes": _strs(tasks * 60_000_000),
            "total_shuffle_read": _strs(tasks * 9_000_000),
            "total_shuffle_write": _strs(tasks * 9_000_000),
            "peak_metrics": [peak] * total,
        }
        self._copy("analyzer_executorsummary", given, total)
        self.counters.executors += total


def table_columns(models_by_table: dict[str, Any]) -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """Every concrete column of each table, with the COPY text of each field's model default."""
    columns: dict[str, list[str]] = {}
    defaults: dict[str, dict[str, str]] = {}
    for table, model in models_by_table.items():
        names = []
        table_defaults: dict[str, str] = {}
        for model_field in model._meta.concrete_fields:
            if table != "analyzer_analyzedapp" and model_field.column == "id":
                continue  # children get their ids from the sequence (except results: their ids are given)
            names.append(model_field.column)
            if model_field.has_default() and (value := model_field.get_default()) is not None:
                table_defaults[model_field.column] = (
                    json.dumps(value)
                    if isinstance(value, dict | list)
                    else ("t" if value is True else "f" if value is False else _esc(str(value)))
                )
            elif model_field.null:  # no default, or a null one (the app's failure)
                table_defaults[model_field.column] = NULL
        columns[table] = names
        defaults[table] = table_defaults
    columns["analyzer_heuristicresult"].insert(0, "id")
    return columns, defaults


def fill(
    connection: Any,
    apps: int,
    *,
    seed: int = 1,
    chunk: int = 10_000,
    until: datetime | None = None,
    summaries_share: float = 1.0,
    progress: bool = False,
) -> Counters:
    """Add ``apps`` generated apps through a Django ``connection`` (its tables migrated); returns the row counts."""
    from analyzer.models import AnalyzedApp, ExecutorSummary, HeuristicDetail, HeuristicResult, StageSummary

    until = until or datetime.fromisoformat(DEFAULT_UNTIL)
    shape = Shape.build(seed, int(until.timestamp() * 1000))
    models_by_table = dict(
        zip(TABLES, (AnalyzedApp, HeuristicResult, HeuristicDetail, StageSummary, ExecutorSummary), strict=True)
    )
    columns, defaults = table_columns(models_by_table)
    connection.ensure_connection()
    with connection.cursor() as django_cursor:
        raw = django_cursor.cursor  # the psycopg2 cursor, for copy_expert
        filler = Filler(raw, shape, columns, defaults)
        chunks = range((apps + chunk - 1) // chunk)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=apps, unit="app", unit_scale=True, smoothing=0.05)
        for index in chunks:
            size = min(chunk, apps - index * chunk)
            filler.chunk(size, index, summaries_share)
            if bar is not None:
                bar.update(size)
        if bar is not None:
            bar.close()
        for table in TABLES:
            raw.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT coalesce(max(id), 1) FROM {table}))"
            )
    return filler.counters


# Fresh fills: secondary indexes and constraints off during the load, built once after it.


def drop_secondary(raw: Any) -> list[str]:
    """Drop the non-primary-key indexes and constraints of the five tables; returns the DDL that re-creates them."""
    tables = ", ".join(f"'{t}'" for t in TABLES)
    raw.execute(
        f"SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        f"WHERE conrelid::regclass::text IN ({tables}) AND contype IN ('f', 'u') ORDER BY contype DESC"
    )
    constraints = raw.fetchall()
    raw.execute(
        f"SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        f"WHERE i.indrelid::regclass::text IN ({tables}) AND NOT i.indisprimary "
        f"AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.contype IN ('u', 'p'))"
    )
    indexes = raw.fetchall()
    recreate = [definition for _, definition in indexes]
    # Unique constraints first (foreign keys may need them), then foreign keys.
    for table, name, definition in sorted(constraints, key=lambda c: c[2].startswith("FOREIGN")):
        recreate.append(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for table, name, _ in constraints:
        raw.execute(f'ALTER TABLE {table} DROP CONSTRAINT IF EXISTS "{name}"')
    for name, _ in indexes:
        raw.execute(f"DROP INDEX IF EXISTS {name}")
    return recreate


def _database_url(db: str, host: str, port: int, user: str) -> str:
    return f"postgres://{user}@{host}:{port}/{db}"


def _create_database(db: str, host: str, port: int, user: str, reset: bool) -> None:
    import psycopg2  # type: ignore[import-untyped]

    if db in {"test", "postgres", "template0", "template1"} or not db.startswith("hindsight_bench"):
        raise SystemExit(f"refusing to fill {db!r}: use a database named hindsight_bench*")
    admin = psycopg2.connect(host=host, port=port, user=user, dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        if reset:
            cursor.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,))
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{db}"')
    admin.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=10_000, help="apps per COPY round")
    parser.add_argument("--db", default=DEFAULT_DB)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5432)
    parser.add_argument("--user", default="postgres")
    parser.add_argument("--reset", action="store_true", help="drop and re-create the database first")
    parser.add_argument("--until", default=DEFAULT_UNTIL, help="apps start in the 30 days before this (ISO 8601)")
    parser.add_argument("--summaries-share", type=float, default=1.0, help="share of Spark apps with stages/executors")
    parser.add_argument("--json", type=Path, default=None, help="write the fill's times and sizes here")
    args = parser.parse_args(argv)

    _create_database(args.db, args.host, args.port, args.user, args.reset)
    os.environ["DATABASE_URL"] = _database_url(args.db, args.host, args.port, args.user)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    migrated = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM analyzer_analyzedapp")
        fresh = cursor.fetchone()[0] == 0
        recreate = drop_secondary(cursor.cursor) if fresh else []
    counters = fill(
        connection,
        args.apps,
        seed=args.seed,
        chunk=args.chunk,
        until=datetime.fromisoformat(args.until),
        summaries_share=args.summaries_share,
        progress=True,
    )
    loaded = time.perf_counter()
    with connection.cursor() as cursor:
        for statement in recreate:
            cursor.execute("SET maintenance_work_mem = '1GB'")
            cursor.execute(statement)
    indexed = time.perf_counter()
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")
        vacuumed = time.perf_counter()
        cursor.execute("SELECT pg_database_size(current_database())")
        db_bytes = int(cursor.fetchone()[0])
        sizes = {}
        for table in TABLES:
            cursor.execute(f"SELECT pg_total_relation_size('{table}'), pg_relation_size('{table}')")
            total_bytes, heap = cursor.fetchone()
            sizes[table] = {"total_bytes": int(total_bytes), "heap_bytes": int(heap)}
    result = {
        "db": args.db,
        "apps": args.apps,
        "seed": args.seed,
        "rows": counters.__dict__,
        "seconds": {
            "migrate": round(migrated - started, 1),
            "load": round(loaded - migrated, 1),
            "indexes_and_constraints": round(indexed - loaded, 1),
            "vacuum_analyze": round(vacuumed - indexed, 1),
            "total": round(vacuumed - started, 1),
        },
        "db_size_bytes": db_bytes,
        "db_size_gb": round(db_bytes / 1e9, 2),
        "tables": sizes,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
