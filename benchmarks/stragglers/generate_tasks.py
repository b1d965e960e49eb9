"""Seeded synthetic task history for the straggler ranking, with known slow hosts.

    .venv/bin/python benchmarks/stragglers/generate_tasks.py --out var/stragglers/seed0 --seed 0
    .venv/bin/python benchmarks/stragglers/generate_tasks.py --tasks 1000000 --hosts 1250 --slow 1.5 3 --out DIR

The workload: apps of 1-12 stages starting uniformly over a day; stage sizes lognormal (median ~150 tasks,
1 to 20,000, so some stages are too small to normalize), per-stage base durations lognormal (median 20 s,
spread 1 in log space) and task noise lognormal with a per-stage sigma in [0.2, 0.6]; 0.5% of stages have
identical durations (zero variance: skipped); 2% of tasks are data-skew stragglers x1.5-4 unrelated to their
host (the heavy tail). Hosts: Pareto popularity (tens to thousands of tasks each), three hardware generations
(x1.00, 1.03, 1.06: real but not straggling), and ``slow_fraction`` of them slow by a factor uniform in
``slow_range``, on all their tasks or, with ``active < 1``, in that share of (app, host) pairs.

Issue 16 fleets (``--generations``, ``--bad``, ``--days``): hardware generations with their shares of the hosts
(e.g. x1.00, 1.05 and an older x1.15 generation: working as bought, never stragglers), ``bad_hosts`` hosts truly
broken (x``bad_factor``, 1.8 by default; drawn from any generation, so a broken host of a fast generation may
still be faster than the median of a slow one), and apps spread over ``days`` days so that daily windows can
be ranked one after another. The truth is the slow factor (1.0 for a host that is only of an older
generation).

Writes, in ``--out``, one .npy per column (memory-mapped, filled a chunk of about a million tasks at a time,
so 10M tasks need ~300 MB of RAM): host (int32), group (int32, the stage), duration_ms (float32),
finish_ms (int64); hosts_slow_factor.npy (float64, 1.0 = healthy) and meta.json.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

DAY_MS = 86_400_000
COLUMNS = {"host": np.int32, "group": np.int32, "duration_ms": np.float32, "finish_ms": np.int64}


@dataclass(frozen=True)
class Spec:
    n_tasks: int = 10_000_000
    n_hosts: int = 12_500
    seed: int = 0
    slow_fraction: float = 0.01
    slow_range: tuple[float, float] = (1.3, 3.0)
    active: float = 1.0  # share of (app, host) pairs in which a slow host is slow
    skew_fraction: float = 0.02
    start_ms: int = 1_790_000_000_000
    generations: tuple[float, ...] = (1.0, 1.03, 1.06)  # hardware speed factors
    generation_shares: tuple[float, ...] | None = None  # None: equally likely (the issue-7 benchmark's draw)
    bad_hosts: int = 0  # truly broken hosts, beyond slow_fraction
    bad_factor: float = 1.8
    days: int = 1  # apps start uniformly over this many days
    task_sigma: tuple[float, float] = (0.2, 0.6)  # per-stage lognormal task noise, uniform in this range


def hosts_of(spec: Spec, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(popularity CDF, hardware factor, slow factor) per host."""
    weight = rng.pareto(1.5, spec.n_hosts) + 1.0
    weight = np.minimum(weight, np.quantile(weight, 0.999))  # no single host takes a visible share
    cdf = np.cumsum(weight) / weight.sum()
    gens = np.array(spec.generations, dtype=np.float64)
    if spec.generation_shares is None:
        hardware = rng.choice(gens, spec.n_hosts)
    else:  # exact shares, shuffled over hosts (popularity is independent of the generation)
        counts = np.floor(np.array(spec.generation_shares) * spec.n_hosts).astype(int)
        counts[0] += spec.n_hosts - counts.sum()
        hardware = rng.permutation(np.repeat(gens, counts))
    slow = np.ones(spec.n_hosts)
    k = round(spec.slow_fraction * spec.n_hosts)
    chosen = rng.choice(spec.n_hosts, k, replace=False)
    slow[chosen] = rng.uniform(*spec.slow_range, k)
    if spec.bad_hosts:
        healthy = np.flatnonzero(slow == 1.0)
        slow[rng.choice(healthy, spec.bad_hosts, replace=False)] = spec.bad_factor
    return cdf, hardware, slow


def iter_chunks(spec: Spec, chunk_tasks: int = 1_000_000) -> Iterator[dict[str, np.ndarray]]:
    """Task columns, a chunk of whole stages at a time (the last chunk trimmed to ``n_tasks`` in total)."""
    rng = np.random.default_rng(spec.seed)
    cdf, hardware, slow = hosts_of(spec, rng)
    emitted = 0
    group0 = 0
    app0 = 0
    while emitted < spec.n_tasks:
        # A batch of apps with their stages, enough for about one chunk.
        n_stages = max(8, chunk_tasks // 330)
        sizes = np.minimum(1 + np.floor(rng.lognormal(np.log(150), 1.3, n_stages)), 20_000).astype(np.int64)
        stages_per_app = rng.integers(1, 13, n_stages)
        app = app0 + np.repeat(np.arange(n_stages), stages_per_app)[:n_stages]
        app0 = int(app[-1]) + 1
        base = rng.lognormal(np.log(20_000), 1.0, n_stages)
        sigma = rng.uniform(*spec.task_sigma, n_stages)
        constant = rng.random(n_stages) < 0.005
        # Each stage starts within an hour of its app's start (the finish time only feeds the window filter).
        app_start = spec.start_ms + (rng.random(n_stages) * DAY_MS * spec.days).astype(np.int64)[app - app.min()]
        starts = app_start + (np.cumsum(base) - base).astype(np.int64) % 3_600_000
        total = int(sizes.sum())
        st = np.repeat(np.arange(n_stages), sizes)
        host = np.searchsorted(cdf, rng.random(total)).astype(np.int32)
        np.minimum(host, spec.n_hosts - 1, out=host)
        noise = np.where(constant[st], 1.0, np.exp(sigma[st] * rng.standard_normal(total)))
        skew = np.where(rng.random(total) < spec.skew_fraction, rng.uniform(1.5, 4.0, total), 1.0)
        factor = slow[host]
        if spec.active < 1.0:
            # Deterministic per (app, host): a slow host is slow in some apps, healthy in others.
            h = (app[st].astype(np.uint64) * np.uint64(2654435761) + host.astype(np.uint64) * np.uint64(40503)) % 1000
            factor = np.where(h < spec.active * 1000, factor, 1.0)
        duration = base[st] * noise * np.where(constant[st], 1.0, hardware[host] * factor * skew)
        finish = starts[st] + duration.astype(np.int64)
        chunk = {
            "host": host,
            "group": (group0 + st).astype(np.int32),
            "duration_ms": duration.astype(np.float32),
            "finish_ms": finish,
        }
        group0 += n_stages
        take = min(total, spec.n_tasks - emitted)
        emitted += take
        yield {k: v[:take] for k, v in chunk.items()}


def truth(spec: Spec) -> np.ndarray:
    """Slow factor per host (1.0 = healthy), the same draw iter_chunks uses."""
    return hosts_of(spec, np.random.default_rng(spec.seed))[2]


def hardware(spec: Spec) -> np.ndarray:
    """Hardware generation factor per host, the same draw iter_chunks uses."""
    return hosts_of(spec, np.random.default_rng(spec.seed))[1]


def generate_frame(spec: Spec) -> tuple[pd.DataFrame, np.ndarray]:
    """The whole task frame in memory (small specs: tests) and the slow factor per host."""
    chunks = list(iter_chunks(spec, chunk_tasks=min(1_000_000, max(10_000, spec.n_tasks))))
    frame = pd.DataFrame({k: np.concatenate([c[k] for c in chunks]) for k in COLUMNS})
    return frame, truth(spec)


def write(spec: Spec, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    maps = {
        k: np.lib.format.open_memmap(out / f"{k}.npy", mode="w+", dtype=dt, shape=(spec.n_tasks,))
        for k, dt in COLUMNS.items()
    }
    pos = 0
    for chunk in iter_chunks(spec):
        n = len(chunk["host"])
        for k, m in maps.items():
            m[pos : pos + n] = chunk[k]
        pos += n
    for m in maps.values():
        m.flush()
    del maps
    np.save(out / "hosts_slow_factor.npy", truth(spec))
    (out / "meta.json").write_text(json.dumps(asdict(spec), indent=1))


def read(out: Path) -> tuple[pd.DataFrame, np.ndarray, dict[str, object]]:
    frame = pd.DataFrame({k: np.load(out / f"{k}.npy", mmap_mode="r") for k in COLUMNS}, copy=False)
    return frame, np.load(out / "hosts_slow_factor.npy"), json.loads((out / "meta.json").read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--tasks", type=int, default=10_000_000)
    p.add_argument("--hosts", type=int, default=12_500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--slow", type=float, nargs=2, default=(1.3, 3.0), metavar=("MIN", "MAX"))
    p.add_argument("--slow-fraction", type=float, default=0.01)
    p.add_argument("--active", type=float, default=1.0)
    p.add_argument("--generations", type=float, nargs="+", default=None, help="e.g. 1.0 1.05 1.15")
    p.add_argument("--shares", type=float, nargs="+", default=None, help="of each generation, e.g. 0.4 0.4 0.2")
    p.add_argument("--bad", type=int, default=0, help="truly broken hosts (x1.8)")
    p.add_argument("--days", type=int, default=1)
    a = p.parse_args()
    spec = Spec(
        a.tasks,
        a.hosts,
        a.seed,
        a.slow_fraction,
        tuple(a.slow),
        a.active,
        generations=tuple(a.generations) if a.generations else Spec.generations,
        generation_shares=tuple(a.shares) if a.shares else None,
        bad_hosts=a.bad,
        days=a.days,
    )
    write(spec, a.out)
    print(f"wrote {spec.n_tasks} tasks over {spec.n_hosts} hosts to {a.out}")


if __name__ == "__main__":
    main()
