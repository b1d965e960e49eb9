"""Evidence for analysis.stages.rpca and analysis.stages.localize (CloudDiag).

    .venv/bin/python benchmarks/anomaly/evaluate_stages.py                 # everything, seeds 0 1 2
    .venv/bin/python benchmarks/anomaly/evaluate_stages.py --seeds 0 --trials 5

Parts:
* ``rpca_recovery``: synthetic low-rank + sparse matrices (the reference notes' 1000x200 rank 5, 5% +-10 case
  and smaller ones): relative error of L, support precision/recall/F1 of E, iterations, time.
* ``localization``: recurring-run categories (runs x stage durations) with a shared run-size factor, a
  cluster-load factor and per-entry noise; one stage slowed 2-4x in k of N runs. Top-1 = the first-ranked
  stage is flagged anomalous and is the injected one. Measured with the CV gate bypassed (localization given an
  anomalous category) and, separately, how often the gate fires on injected and on healthy categories.
* ``timing``: one category analysis (150 runs x 15 stages).

The gate rate is also given by the injected stage's share of its run's time.

Writes the ``stages`` key of benchmarks/anomaly/results.json (other keys kept).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from analysis.stages.localize import DEFAULT_ALPHA, analyse_category, coefficient_of_variation  # noqa: E402
from analysis.stages.rpca import robust_pca  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results.json"
# The injected stage's median share of its run's time, bucketed: the CV gate sees only whole-run times.
SHARE_BUCKETS = (("a: <10%", 0.10), ("b: 10-30%", 0.30), ("c: >=30%", 2.0))


def make_category(
    rng: np.random.Generator, n_runs: int, n_stages: int, k: int, noise: float, factor_range: tuple[float, float]
) -> tuple[pd.DataFrame, int, set[str]]:
    """Runs x stage durations (ms) of one template; returns (frame, injected stage, injected run ids)."""
    base = np.exp(rng.uniform(np.log(5_000), np.log(600_000), n_stages))
    sensitivity = rng.uniform(0.3, 1.2, n_stages)
    size = rng.normal(0.0, 0.1, n_runs)  # input size of the run (log)
    load = rng.normal(0.0, 0.05, n_runs)  # cluster load during the run (log)
    log_d = np.log(base) + np.outer(size, sensitivity) + load[:, None] + rng.normal(0.0, noise, (n_runs, n_stages))
    stage = int(rng.integers(n_stages))
    runs = rng.choice(n_runs, size=k, replace=False) if k else np.array([], int)
    log_d[runs, stage] += np.log(rng.uniform(*factor_range, size=len(runs)))
    durations = np.exp(log_d)
    frame = pd.DataFrame(durations, columns=[str(s) for s in range(n_stages)])
    frame.insert(0, "run_id", [f"r{i}" for i in range(n_runs)])
    frame["run_time"] = durations.sum(axis=1) + 20_000
    frame.attrs["share"] = float((durations[:, stage] / frame["run_time"]).median())  # injected stage's share
    return frame, stage, {f"r{i}" for i in runs}


def rpca_recovery(seeds: list[int]) -> dict[str, Any]:
    cases = [(1000, 200, 5, 0.05, 10.0), (300, 60, 3, 0.05, 10.0), (150, 15, 1, 0.05, 5.0)]
    out = []
    for m, n, r, density, magnitude in cases:
        rows = []
        for seed in seeds:
            rng = np.random.default_rng(seed)
            low = rng.normal(size=(m, r)) @ rng.normal(size=(r, n))
            mask = rng.random((m, n)) < density
            sparse = np.zeros((m, n))
            sparse[mask] = rng.choice([-magnitude, magnitude], int(mask.sum()))
            start = time.perf_counter()
            res = robust_pca(low + sparse)
            elapsed = time.perf_counter() - start
            support = np.abs(res.sparse) > 1e-3 * magnitude
            tp = int((support & mask).sum())
            precision = tp / max(int(support.sum()), 1)
            recall = tp / max(int(mask.sum()), 1)
            rows.append(
                {
                    "seed": seed,
                    "rel_error_L": float(np.linalg.norm(res.low_rank - low) / np.linalg.norm(low)),
                    "precision": precision,
                    "recall": recall,
                    "f1": 2 * precision * recall / max(precision + recall, 1e-12),
                    "rank": res.rank,
                    "iterations": res.iterations,
                    "converged": res.converged,
                    "seconds": elapsed,
                }
            )
        out.append(
            {
                "shape": [m, n],
                "rank": r,
                "density": density,
                "magnitude": magnitude,
                "max_rel_error_L": max(x["rel_error_L"] for x in rows),
                "min_f1": min(x["f1"] for x in rows),
                "max_seconds": max(x["seconds"] for x in rows),
                "all_converged": all(x["converged"] for x in rows),
                "runs": rows,
            }
        )
    return {"cases": out}


def localization(seeds: list[int], trials: int) -> dict[str, Any]:
    configs = []
    for n_runs in (20, 50, 150):
        for n_stages in (5, 15, 40):
            ks = sorted(
                {1, 2, max(1, math.ceil(0.05 * n_runs)), max(1, math.ceil(0.10 * n_runs)), math.ceil(0.15 * n_runs)}
            )
            for k in ks:
                for noise in (0.05, 0.1, 0.2):
                    configs.append((n_runs, n_stages, k, noise))
    rows = []
    misses: list[dict[str, Any]] = []
    total = hits = gate_fired = 0
    gate_by_share: dict[str, list[bool]] = {}
    run_tp = run_fp = run_fn = 0
    for n_runs, n_stages, k, noise in configs:
        c_hits = c_total = c_gate = 0
        for seed in seeds:
            rng = np.random.default_rng([seed, n_runs, n_stages, k, int(noise * 100)])
            for trial in range(trials):
                frame, stage, bad_runs = make_category(rng, n_runs, n_stages, k, noise, (2.0, 4.0))
                res = analyse_category(frame, force=True)
                top = res.stages[0]
                hit = top.anomalous and top.stage == str(stage)
                c_total += 1
                c_hits += hit
                c_gate += res.anomalous
                bucket = next(b for b, top_share in SHARE_BUCKETS if frame.attrs["share"] < top_share)
                gate_by_share.setdefault(bucket, []).append(res.anomalous)
                found = {s.stage: set(s.outlier_runs) for s in res.stages}.get(str(stage), set())
                run_tp += len(found & bad_runs)
                run_fp += len(found - bad_runs)
                run_fn += len(bad_runs - found)
                if not hit and len(misses) < 40:
                    injected = next(s for s in res.stages if s.stage == str(stage))
                    misses.append(
                        {
                            "n_runs": n_runs,
                            "n_stages": n_stages,
                            "k": k,
                            "noise": noise,
                            "seed": seed,
                            "trial": trial,
                            "top": {"stage": top.stage, "count": top.count, "cosine": round(top.cosine, 3)},
                            "injected": {
                                "stage": injected.stage,
                                "count": injected.count,
                                "cosine": round(injected.cosine, 3),
                                "anomalous": injected.anomalous,
                            },
                        }
                    )
        rows.append(
            {
                "n_runs": n_runs,
                "n_stages": n_stages,
                "k": k,
                "noise": noise,
                "trials": c_total,
                "top1": c_hits / c_total,
                "gate_rate": c_gate / c_total,
            }
        )
        total += c_total
        hits += c_hits
        gate_fired += c_gate
    healthy_cv = []
    for seed in seeds:
        rng = np.random.default_rng([seed, 999])
        for n_runs in (20, 50, 150):
            for noise in (0.05, 0.1, 0.2):
                for _ in range(trials):
                    frame, _, _ = make_category(rng, n_runs, 15, 0, noise, (1.0, 1.0))
                    healthy_cv.append(coefficient_of_variation(frame["run_time"]))
    cvs = np.asarray(healthy_cv)
    by_noise = {str(noise): min(r["top1"] for r in rows if r["noise"] == noise) for noise in (0.05, 0.1, 0.2)}
    return {
        "trials": total,
        "top1": hits / total,
        "min_top1_over_configs": min(r["top1"] for r in rows),
        "min_top1_by_noise": by_noise,
        "outlier_runs": {
            "precision": run_tp / max(run_tp + run_fp, 1),
            "recall": run_tp / max(run_tp + run_fn, 1),
        },
        "gate": {
            "alpha": DEFAULT_ALPHA,
            "fired_on_injected": gate_fired / total,
            "fired_on_injected_by_stage_share": {
                b: {"trials": len(v), "rate": sum(v) / len(v)} for b, v in sorted(gate_by_share.items())
            },
            "fired_on_healthy": float((cvs > DEFAULT_ALPHA).mean()),
            "healthy_cv_quantiles": {q: float(np.quantile(cvs, float(q))) for q in ("0.5", "0.9", "0.99")},
        },
        "configs": rows,
        "misses": misses,
    }


def timing() -> dict[str, Any]:
    rng = np.random.default_rng(7)
    frame, _, _ = make_category(rng, 150, 15, 20, 0.1, (2.0, 4.0))
    analyse_category(frame, force=True)
    times = []
    for _ in range(20):
        start = time.perf_counter()
        analyse_category(frame, force=True)
        times.append(time.perf_counter() - start)
    return {"case": "150 runs x 15 stages", "median_ms": 1000 * float(np.median(times)), "max_ms": 1000 * max(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--trials", type=int, default=10, help="trials per configuration and seed")
    args = parser.parse_args()
    started = time.time()
    result = {
        "command": "python benchmarks/anomaly/evaluate_stages.py " + " ".join(sys.argv[1:]),
        "seeds": args.seeds,
        "load_before": os.getloadavg(),
        "rpca_recovery": rpca_recovery(args.seeds),
        "localization": localization(args.seeds, args.trials),
        "timing": timing(),
        "load_after": os.getloadavg(),
        "wall_seconds": time.time() - started,
    }
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data["stages"] = result
    RESULTS.write_text(json.dumps(data, indent=1) + "\n")
    loc = result["localization"]
    print(
        json.dumps(
            {
                k: loc[k]
                for k in ("trials", "top1", "min_top1_over_configs", "min_top1_by_noise", "outlier_runs", "gate")
            },
            indent=1,
        )
    )
    print(
        json.dumps(
            [
                {k: c[k] for k in ("shape", "max_rel_error_L", "min_f1", "max_seconds")}
                for c in result["rpca_recovery"]["cases"]
            ]
        )
    )
    print(json.dumps(result["timing"]))


if __name__ == "__main__":
    main()
