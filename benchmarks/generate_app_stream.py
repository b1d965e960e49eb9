"""Write a stream of typical Spark 4.1.1 event logs (1-5k tasks each) for the polling throughput benchmark.

Each log is one application written by ``generate_large_log``'s machinery (real Spark 4.1.1 event lines with
ids, times, hosts and metrics replaced), with its own shape drawn from the seed: executors and cores, job
style (a few wide stages, many narrow ones, or in between), skew, spill, retried tasks, sometimes a job that
fails, and a share of the logs zstd-compressed (Spark's ``.zstd`` codec suffix). The same seed writes the same
bytes; ``stream.json`` beside the logs lists every app.

    .venv/bin/python benchmarks/generate_app_stream.py [--apps 600] [--seed 7] [--out benchmarks/out/stream]
"""

from __future__ import annotations

import argparse
import io
import random
import time
from pathlib import Path
from typing import Any

import generate_large_log as large
import orjson
import zstandard
from generate_large_log import AppShape, JobMix

REPO = Path(__file__).resolve().parent.parent
CLUSTER_TS = 1_795_100_000_000  # the ResourceManager start time in the generated application ids
FIRST_START_MS = 1_795_400_000_000
# Job styles: (map stage sizes, reduce stage sizes); 1-5k tasks make 1-40 jobs of two stages each.
STYLES: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "wide": ((200, 400, 800, 1200), (200, 400)),
    "narrow": ((8, 16, 32, 64), (4, 8, 16, 32)),
    "mixed": ((50, 100, 200, 400), (20, 50, 100, 200)),
}


def app_id(index: int) -> str:
    return f"application_{CLUSTER_TS}_{index + 1:04d}"


def draw_app(seed: int, index: int, min_tasks: int, max_tasks: int, zstd_share: float) -> dict[str, Any]:
    """The shape of app ``index``: drawn from its own generator, so any app can be rewritten alone."""
    rng = random.Random(f"{seed}:{index}:shape")
    executors = rng.choice((2, 4, 8, 16, 32, 48))
    style = rng.choice(tuple(STYLES))
    return {
        "app_id": app_id(index),
        "tasks": rng.randint(min_tasks, max_tasks),
        "executors": executors,
        "cores": rng.choice((1, 2, 4)),
        "hosts": max(1, executors // rng.choice((1, 2, 4))),
        "executor_memory_gib": rng.choice((4, 8, 16)),
        "user": rng.choice(("etl", "analytics", "ml", "reporting")),
        "style": style,
        "reduce_skew_rate": rng.choice((0.0, 0.0, 0.1, 0.5)),
        "spill_rate": rng.choice((0.0, 0.0, 0.1, 0.4)),
        "fails": rng.random() < 0.1,
        "zstd": rng.random() < zstd_share,
        # Apps start a minute and a half apart on average, as on a busy cluster.
        "start_ms": FIRST_START_MS + index * 90_000 + rng.randrange(60_000),
    }


def write_one(out_dir: Path, templates: large.Templates, seed: int, plan: dict[str, Any]) -> dict[str, Any]:
    """Write one app's log as ``plan`` says; what was written (path, bytes, tasks, jobs)."""
    maps, reduces = STYLES[plan["style"]]
    shape = AppShape(
        app_id=plan["app_id"],
        app_name=f"{plan['style']} {plan['user']} job {plan['app_id'][-4:]}",
        user=plan["user"],
        start_ms=plan["start_ms"],
        executors=plan["executors"],
        hosts=plan["hosts"],
        cores=plan["cores"],
        executor_memory_gib=plan["executor_memory_gib"],
    )
    mix = JobMix(
        map_tasks=maps,
        reduce_tasks=reduces,
        map_spill_rate=plan["spill_rate"],
        reduce_skew_rate=plan["reduce_skew_rate"],
        reduce_spill_rate=plan["spill_rate"],
        fail_one_job=plan["fails"],
    )
    rng = random.Random(f"{seed}:{plan['app_id']}:events")
    path = out_dir / (plan["app_id"] + (".zstd" if plan["zstd"] else ""))
    buffer = io.BytesIO()
    written = large.write_app(buffer, templates, rng, plan["tasks"], shape, mix, exit_code=1 if plan["fails"] else 0)
    data = buffer.getvalue()
    # Spark's zstd codec writes one zstd frame stream at level 1 by default.
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(data) if plan["zstd"] else data)
    return {
        "app_id": plan["app_id"],
        "path": str(path),
        "bytes": path.stat().st_size,
        "uncompressed_bytes": len(data),
        "tasks": written["tasks"],
        "jobs": written["jobs"],
        "failed_jobs": written["failed_jobs"],
        "end_ms": written["end_ms"],
        "shape": plan,
    }


def generate(
    out_dir: Path,
    apps: int,
    seed: int,
    template: Path,
    *,
    min_tasks: int = 1000,
    max_tasks: int = 5000,
    zstd_share: float = 0.25,
) -> dict[str, Any]:
    """Write ``apps`` logs into ``out_dir`` (emptied of earlier logs first) and ``stream.json``; the summary."""
    if not 1 <= min_tasks <= max_tasks:
        raise ValueError("need 1 <= min_tasks <= max_tasks")
    out_dir = out_dir.resolve()  # the manifest's paths work from any directory
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"application_{CLUSTER_TS}_*"):
        old.unlink()
    templates = large.load_templates(template)
    started = time.monotonic()
    written = [
        write_one(out_dir, templates, seed, draw_app(seed, index, min_tasks, max_tasks, zstd_share))
        for index in range(apps)
    ]
    summary = {
        "out": str(out_dir),
        "apps": apps,
        "seed": seed,
        "min_tasks": min_tasks,
        "max_tasks": max_tasks,
        "zstd_share": zstd_share,
        "template": str(template),
        "tasks": sum(app["tasks"] for app in written),
        "bytes": sum(app["bytes"] for app in written),
        "uncompressed_bytes": sum(app["uncompressed_bytes"] for app in written),
        "zstd_apps": sum(app["shape"]["zstd"] for app in written),
        "apps_with_failed_job": sum(app["failed_jobs"] > 0 for app in written),
        "seconds": round(time.monotonic() - started, 1),
    }
    manifest = {"summary": summary, "apps": written}
    (out_dir / "stream.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return summary


def ensure(out_dir: Path, apps: int, seed: int, template: Path, **options: Any) -> dict[str, Any]:
    """The stream's manifest, writing the stream first unless ``out_dir`` already holds this very one."""
    manifest_path = out_dir / "stream.json"
    if manifest_path.exists():
        manifest = orjson.loads(manifest_path.read_bytes())
        summary = manifest["summary"]
        wanted = {"apps": apps, "seed": seed, "template": str(template)} | options
        if all(summary.get(key) == value for key, value in wanted.items()) and all(
            Path(app["path"]).exists() for app in manifest["apps"]
        ):
            return dict(manifest)
    generate(out_dir, apps, seed, template, **options)
    return dict(orjson.loads(manifest_path.read_bytes()))


def default_template() -> Path:
    return large.DEFAULT_TEMPLATE if large.DEFAULT_TEMPLATE.exists() else large.FALLBACK_TEMPLATE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "stream")
    parser.add_argument("--apps", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--min-tasks", type=int, default=1000)
    parser.add_argument("--max-tasks", type=int, default=5000)
    parser.add_argument("--zstd-share", type=float, default=0.25, help="share of the logs written as .zstd")
    parser.add_argument("--template", type=Path, default=None, help="a real Spark 4.x event log (uncompressed)")
    args = parser.parse_args()
    summary = generate(
        args.out,
        args.apps,
        args.seed,
        args.template or default_template(),
        min_tasks=args.min_tasks,
        max_tasks=args.max_tasks,
        zstd_share=args.zstd_share,
    )
    print(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
