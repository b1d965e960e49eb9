"""Seeded synthetic histories of recurring jobs with known causes of slowdown (for analysis.attribution).

Each template (a recurring job) has its own data size, shuffle ratio, stage count, executors, cores, memory,
CPU cost per GB, skew, GC, contention sensitivity... Its runs vary day to day (input +/-12%, queue wait,
concurrent apps, GC, ...) and runtime is a template-specific function of the features:

    compute = cpu_per_gb * (input + 1.5 shuffle + 3 spill) / (executors * cores)
              * (1 + skew_sens * (duration_skew - 1)) / (1 - gc_share) * (1 + strag_sens * straggler_share)
              * (1 + fetch_wait_share) * (1 + cont_sens * extra concurrent apps) * (1 + 3 failed/tasks)
    runtime = (queue_wait + 20 s + 3 s * stages + compute + driver_idle + 30 s * executors_lost) * lognormal(0, 5%)

``num_tasks`` is the successful tasks; failed attempts are ``failed_tasks`` (as the product counts them from issue
16 on). Host evidence is per run, from its own tasks (``slow_host_task_share``, ``host_cpu_ratio_spread``); a slow
host stretches task durations without more bytes, so ``duration_skew_excess`` (duration skew over input skew)
rises for slow hosts and stays put for data skew. The ranking-window ``straggler_task_share`` is not generated.

Output bytes, driver memory, killed and speculative tasks and the submitting user have no effect: they are
the distractors. Injected causes (the truth is a registry cause):

    more_input (data_volume)     input x2-4; tasks, shuffle, spill and output follow
    more_shuffle (data_volume)   shuffle x2.5-5; spill follows
    skew (skew)                  task input skew x3-6; duration skew follows (its excess over input skew does not)
    slow_hosts (host_health)     slow-host task share 0.25-0.6, duration skew x1.5-2.5 with no byte skew, host CPU
                                 ratio spread +0.1-0.3, fetch wait +0.05-0.15, executors lost +Poisson(1)
    queue_contention (contention) queue wait + 0.5-1.5 x the usual runtime, concurrent apps x2-4
    gc_pressure (memory_gc)      GC share 0.30-0.55
    config_change (config)       executors / 2.5-5 (hosts follow), or cores per executor halved
    failures (failures)          failed attempts 15-35% of tasks (successful tasks unchanged)
    driver_work (driver)         driver idle (no stage running) + 0.3-1.0 x the usual runtime
    outside ("none")             runtime x1.5-3 with no feature changed: the cause is not measured

History: ``runs`` normal runs per template, of which 10% carry a random injected cause, 5% a distractor move
and 2% an unmeasured slowdown (like real history). 5% of templates have only 3 runs (they borrow baselines).
Test set: one fresh run per template and cause, with 2 distractors moved to |z| >> 3 when ``distractors``.

    .venv/bin/python benchmarks/attribution/generate_histories.py --templates 300 --runs 60 --seed 0 --out out.parquet
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import pandas as pd

CAUSE_OF: dict[str, str] = {
    "more_input": "data_volume",
    "more_shuffle": "data_volume",
    "skew": "skew",
    "slow_hosts": "host_health",
    "queue_contention": "contention",
    "gc_pressure": "memory_gc",
    "config_change": "config",
    "failures": "failures",
    "driver_work": "driver",
    "outside": "none",
}
INJECTIONS = tuple(CAUSE_OF)
EXPLAINED = tuple(k for k, v in CAUSE_OF.items() if v != "none")
DISTRACTORS = ("output_bytes", "driver_memory_mb", "killed_tasks", "speculative_tasks", "user")
GB = 1024**3


@dataclass
class Templates:
    n: int
    in_gb: np.ndarray
    sh_ratio: np.ndarray
    out_ratio: np.ndarray
    split_mb: np.ndarray
    stages: np.ndarray
    executors: np.ndarray
    cores: np.ndarray
    mem_mb: np.ndarray
    drv_mb: np.ndarray
    cpu_per_gb: np.ndarray
    skew0: np.ndarray
    gc0: np.ndarray
    fetch0: np.ndarray
    strag0: np.ndarray
    cpu_spread0: np.ndarray
    idle0: np.ndarray
    wait0: np.ndarray
    conc0: np.ndarray
    epn: np.ndarray
    skew_sens: np.ndarray
    strag_sens: np.ndarray
    cont_sens: np.ndarray
    job_type: np.ndarray
    user: np.ndarray
    queue: np.ndarray
    version: np.ndarray
    usual_runtime: np.ndarray


def make_templates(n: int, rng: np.random.Generator) -> Templates:
    ln = rng.lognormal
    in_gb = np.clip(ln(np.log(30), 1.3, n), 0.5, 5000)
    sh_ratio = np.clip(ln(np.log(0.4), 0.8, n), 0.02, 3)
    cpu = ln(np.log(40), 0.5, n)
    cores = rng.choice([1, 2, 4, 5, 8], n)
    compute0 = np.clip(ln(np.log(900), 0.8, n), 120, 4 * 3600)  # usual compute seconds
    work0 = cpu * in_gb * (1 + 1.5 * sh_ratio)
    executors = np.clip(np.ceil(work0 / compute0 / cores), 2, 2000)
    t = Templates(
        n=n,
        in_gb=in_gb,
        sh_ratio=sh_ratio,
        out_ratio=np.clip(ln(np.log(0.2), 0.8, n), 0.001, 2),
        split_mb=rng.choice([64, 128, 256], n),
        stages=rng.integers(2, 41, n),
        executors=executors,
        cores=cores,
        mem_mb=rng.choice([2048, 4096, 8192, 16384], n),
        drv_mb=rng.choice([1024, 2048, 4096, 8192], n),
        cpu_per_gb=cpu,
        skew0=1 + np.clip(ln(np.log(0.5), 0.6, n), 0.05, 3),
        gc0=rng.uniform(0.02, 0.10, n),
        fetch0=rng.uniform(0.01, 0.05, n),
        strag0=rng.uniform(0.0, 0.03, n),
        cpu_spread0=rng.uniform(0.03, 0.15, n),
        idle0=ln(np.log(10), 0.8, n),
        wait0=ln(np.log(15), 0.8, n),
        conc0=rng.uniform(5, 60, n),
        epn=rng.choice([1, 2, 4], n),
        skew_sens=rng.uniform(0.2, 0.6, n),
        strag_sens=rng.uniform(1.0, 2.0, n),
        cont_sens=rng.uniform(0.002, 0.01, n),
        job_type=rng.choice(["spark_sql", "spark_etl", "spark_ml", "mapreduce"], n),
        user=rng.choice([f"user{i:02d}" for i in range(40)], n),
        queue=rng.choice(["default", "etl", "adhoc", "ml", "reports", "backfill"], n),
        version=rng.choice(["3.3.2", "3.4.1", "3.5.0"], n),
        usual_runtime=np.zeros(n),
    )
    t.usual_runtime = t.wait0 + 20 + 3 * t.stages + compute0 + t.idle0
    return t


def _runs(t: Templates, tpl: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Normal runs of the given templates (feature values before any injection)."""
    m = len(tpl)
    ln = rng.lognormal
    d: dict[str, np.ndarray] = {}
    d["input_gb"] = t.in_gb[tpl] * ln(0, 0.12, m)
    d["sh_ratio"] = t.sh_ratio[tpl] * ln(0, 0.08, m)
    d["out_ratio"] = t.out_ratio[tpl] * ln(0, 0.1, m)
    d["executors"] = np.maximum(1, np.round(t.executors[tpl] * ln(0, 0.04, m)))
    d["cores"] = t.cores[tpl].astype(float)
    d["in_skew"] = t.skew0[tpl] * ln(0, 0.08, m)
    d["dur_factor"] = rng.uniform(0.8, 1.2, m)
    d["gc"] = np.clip(t.gc0[tpl] + rng.normal(0, 0.01, m), 0.005, 0.9)
    d["fetch"] = np.clip(t.fetch0[tpl] + rng.normal(0, 0.005, m), 0, 0.9)
    d["strag"] = np.clip(t.strag0[tpl] + np.abs(rng.normal(0, 0.01, m)), 0, 1)
    d["host_slow"] = np.ones(m)
    d["cpu_spread"] = np.clip(t.cpu_spread0[tpl] + rng.normal(0, 0.01, m), 0, 1)
    d["idle"] = t.idle0[tpl] * ln(0, 0.2, m)
    d["wait"] = t.wait0[tpl] * ln(0, 0.4, m)
    d["conc"] = rng.poisson(t.conc0[tpl]).astype(float)
    d["lost"] = rng.poisson(0.03, m).astype(float)
    d["fail_rate"] = rng.uniform(0, 0.002, m)
    d["kill_rate"] = rng.uniform(0, 0.004, m)
    d["spec_rate"] = rng.uniform(0, 0.006, m)
    d["drv_mb"] = t.drv_mb[tpl].astype(float)
    d["user"] = t.user[tpl].astype(object)
    d["shuffle_mult"] = np.ones(m)
    d["outside"] = np.ones(m)
    d["extra_wait"] = np.zeros(m)
    return d


def _inject(
    d: dict[str, np.ndarray], kinds: np.ndarray, t: Templates, tpl: np.ndarray, rng: np.random.Generator
) -> None:
    for kind in np.unique(kinds):
        s = np.flatnonzero(kinds == kind)
        k = len(s)
        u = rng.uniform
        if kind == "more_input":
            d["input_gb"][s] *= u(2, 4, k)
        elif kind == "more_shuffle":
            d["shuffle_mult"][s] *= u(2.5, 5, k)
        elif kind == "skew":
            d["in_skew"][s] *= u(3, 6, k)
        elif kind == "slow_hosts":
            d["strag"][s] = u(0.25, 0.6, k)
            d["host_slow"][s] = u(1.5, 2.5, k)
            d["cpu_spread"][s] += u(0.1, 0.3, k)
            d["fetch"][s] += u(0.05, 0.15, k)
            d["lost"][s] += rng.poisson(1.0, k)
        elif kind == "queue_contention":
            d["extra_wait"][s] = u(0.5, 1.5, k) * t.usual_runtime[tpl[s]]
            d["conc"][s] *= u(2, 4, k)
        elif kind == "gc_pressure":
            d["gc"][s] = u(0.30, 0.55, k)
        elif kind == "config_change":
            by_cores = (rng.random(k) < 0.3) & (d["cores"][s] >= 2)
            d["cores"][s] = np.where(by_cores, np.floor(d["cores"][s] / 2), d["cores"][s])
            d["executors"][s] = np.where(
                by_cores, d["executors"][s], np.maximum(1, np.round(d["executors"][s] / u(2.5, 5, k)))
            )
        elif kind == "failures":
            d["fail_rate"][s] = u(0.15, 0.35, k)
        elif kind == "driver_work":
            d["idle"][s] += u(0.3, 1.0, k) * t.usual_runtime[tpl[s]]
        elif kind == "outside":
            d["outside"][s] = u(1.5, 3, k)


def _distract(
    d: dict[str, np.ndarray], rows: np.ndarray, rng: np.random.Generator, per_run: int, users: list[str]
) -> None:
    for r in rows:
        for name in rng.choice(DISTRACTORS, per_run, replace=False):
            if name == "output_bytes":
                d["out_ratio"][r] *= rng.uniform(4, 10)
            elif name == "driver_memory_mb":
                d["drv_mb"][r] *= rng.choice([2, 4])
            elif name == "killed_tasks":
                d["kill_rate"][r] = rng.uniform(0.05, 0.2)
            elif name == "speculative_tasks":
                d["spec_rate"][r] = rng.uniform(0.05, 0.2)
            else:
                d["user"][r] = rng.choice([u for u in users if u != d["user"][r]])


def _frame(d: dict[str, np.ndarray], t: Templates, tpl: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    m = len(tpl)
    ln = rng.lognormal
    inp = d["input_gb"]
    tasks = np.ceil(inp * 1024 / t.split_mb[tpl])
    shuffle = inp * d["sh_ratio"] * d["shuffle_mult"]
    out = inp * d["out_ratio"]
    ex, cores = d["executors"], d["cores"]
    mem_gb = ex * t.mem_mb[tpl] / 1024
    spill = np.maximum(0.0, shuffle - 0.6 * mem_gb) * ln(0, 0.1, m)
    dur_skew = (1 + (d["in_skew"] - 1) * d["dur_factor"]) * d["host_slow"]
    failed = rng.poisson(d["fail_rate"] * tasks).astype(float)
    slots = ex * cores
    compute = t.cpu_per_gb[tpl] * (inp + 1.5 * shuffle + 3 * spill) / slots
    compute *= 1 + t.skew_sens[tpl] * (dur_skew - 1)
    compute /= 1 - d["gc"]
    compute *= (1 + t.strag_sens[tpl] * d["strag"]) * (1 + d["fetch"])
    compute *= 1 + t.cont_sens[tpl] * np.maximum(0, d["conc"] - t.conc0[tpl])
    compute *= 1 + 3 * failed / np.maximum(tasks, 1)
    wait = d["wait"] + d["extra_wait"]
    runtime = (wait + 20 + 3 * t.stages[tpl] + compute + d["idle"] + 30 * d["lost"]) * ln(0, 0.05, m) * d["outside"]
    return pd.DataFrame(
        {
            "template": [f"tpl{i:04d}" for i in tpl],
            "runtime": runtime,
            "input_bytes": inp * GB,
            "output_bytes": out * GB,
            "shuffle_read_bytes": shuffle * GB,
            "shuffle_write_bytes": shuffle * GB * ln(0, 0.02, m),
            "spill_bytes": spill * GB,
            "num_tasks": tasks,
            "num_stages": t.stages[tpl].astype(float),
            "job_type": t.job_type[tpl],
            "user": d["user"],
            "num_executors": ex,
            "executor_cores": cores,
            "executor_memory_mb": t.mem_mb[tpl].astype(float),
            "driver_memory_mb": d["drv_mb"],
            "task_input_skew": d["in_skew"],
            "duration_skew_excess": dur_skew / np.maximum(1.0, d["in_skew"]),
            "failed_tasks": failed,
            "killed_tasks": rng.poisson(d["kill_rate"] * tasks).astype(float),
            "speculative_tasks": rng.poisson(d["spec_rate"] * tasks).astype(float),
            "gc_time_share": d["gc"],
            "fetch_wait_share": d["fetch"],
            "slow_host_task_share": d["strag"],
            "host_cpu_ratio_spread": np.clip(d["cpu_spread"], 0, 1),
            "driver_idle_s": d["idle"],
            "host_count": np.maximum(1, np.ceil(ex / t.epn[tpl])),
            "queue_wait_s": wait,
            "concurrent_apps": d["conc"],
            "queue": t.queue[tpl],
            "executors_lost": d["lost"],
            "framework_version": t.version[tpl],
        }
    )


def generate(
    templates: int = 300, runs: int = 60, seed: int = 0, *, distractors: bool = True, test_per_cause: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history, test). ``test`` adds ``injected`` (the kind) and ``truth`` (cause code; "none" for outside)."""
    rng = np.random.default_rng(seed)
    t = make_templates(templates, rng)
    users = sorted(set(t.user.tolist()) | {f"user{i:02d}" for i in range(40)})
    n_runs = np.where(rng.random(templates) < 0.05, 3, runs)
    tpl = np.repeat(np.arange(templates), n_runs)
    d = _runs(t, tpl, rng)
    m = len(tpl)
    r = rng.random(m)
    kinds = np.where(r < 0.10, rng.choice(EXPLAINED, m), np.where(r < 0.12, "outside", "none"))
    _inject(d, kinds, t, tpl, rng)
    _distract(d, np.flatnonzero(rng.random(m) < 0.05), rng, 1, users)
    history = _frame(d, t, tpl, rng)
    history.attrs["injected"] = kinds  # what each history run carries ("none": ordinary), for evaluation only

    ttpl = np.repeat(np.arange(templates), len(INJECTIONS) * test_per_cause)
    tkinds = np.tile(np.repeat(np.array(INJECTIONS), test_per_cause), templates)
    td = _runs(t, ttpl, rng)
    _inject(td, tkinds, t, ttpl, rng)
    if distractors:
        _distract(td, np.arange(len(ttpl)), rng, 2, users)
    test = _frame(td, t, ttpl, rng)
    test["injected"] = tkinds
    test["truth"] = [CAUSE_OF[k] for k in tkinds]
    return history, test


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--templates", type=int, default=300)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-distractors", action="store_true")
    ap.add_argument("--out", required=True, help="prefix: writes PREFIX.history.csv and PREFIX.test.csv")
    a = ap.parse_args()
    history, test = generate(a.templates, a.runs, a.seed, distractors=not a.no_distractors)
    history.to_csv(f"{a.out}.history.csv", index=False)
    test.to_csv(f"{a.out}.test.csv", index=False)
    print(f"{len(history)} history runs, {len(test)} test runs, {a.templates} templates")


if __name__ == "__main__":
    main()
