"""Judge the research analyses on the independent population through the product's own path (issue 16, item 5).

    .venv/bin/python benchmarks/independent/generate.py --out var/independent/logs
    .venv/bin/python benchmarks/independent/evaluate.py --logs var/independent/logs \\
        --json benchmarks/independent/results.json

What it does, in a fresh PostgreSQL database of its own (``--database``, default ``gen2_eval``, on the server of
``DATABASE_URL`` or 127.0.0.1:5432 as ``postgres``; created, and dropped first if it exists; ``test`` and
``postgres`` are refused):

1. ``manage.py migrate``; ``manage.py sources add independent --eventlog-dir LOGS`` (an event-log directory
   source, docs/SOURCES.md); ``manage.py poll --once`` (the initial lookback set to cover the whole history);
2. ``manage.py rank_hosts --window 24h --window 7d --end <day end>`` for every day that has data, oldest first
   (so every app's host evidence exists, from the 24 h window of its day);
3. ``manage.py train_attribution``; ``manage.py localize_stages --all``;
4. reads the answers through the REST API (Django's test client: ``/api/v1/apps/<id>/attribution``,
   ``/api/v1/apps/<id>/executor-anomalies``, ``/api/v1/stage-anomalies``, ``/api/v1/hosts``) and, for the daily
   snapshots the API does not list, the hosts selectors the API uses; and scores them against ``manifest.json``.

The commands run in one child process with Django set up (``--inside``), so the benchmark needs no server. The
measures (``MEASURES``) are those of issue 16's table, with counts beside every share.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DAY_MS = 86_400_000
CLUSTER = "independent"
# A cause is scored only where it made the run this much slower than its twin without it (the generator's truth;
# the product's own "slower than usual" line is 10% too): a cause that cost nothing has no right answer to "why
# was this run slower?".
MATERIAL = 1.10
REFUSED_DATABASES = frozenset({"test", "postgres", "template0", "template1", "hindsight"})

# Every measure the evaluator reports (the smoke test asserts each is present).
MEASURES = (
    "attribution_top1",
    "attribution_top3",
    "attribution_top1_without_driver_idle",
    "high_confidence_wrong",
    "unexplained_rated_low",
    "slow_host_executor_first",
    "straggler_precision_7d",
    "straggler_recall_7d",
    "slow_generation_hosts_flagged_7d",
    "straggler_daily",
    "slowed_stage_named",
)
SHARES = tuple(m for m in MEASURES if m not in ("slow_generation_hosts_flagged_7d", "straggler_daily"))


# --- The parent: a database of its own, then the child --------------------------------------------------------


def database_url(name: str) -> tuple[str, str]:
    """(URL of ``name``, URL of the server's ``postgres`` database) on the server of DATABASE_URL."""
    if name in REFUSED_DATABASES:
        raise SystemExit(f"evaluate: refusing to use the database {name!r}")
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    parts = urllib.parse.urlsplit(base)
    if not parts.scheme.startswith("postgres"):
        parts = urllib.parse.urlsplit("postgres://postgres@127.0.0.1:5432/postgres")
    return parts._replace(path=f"/{name}").geturl(), parts._replace(path="/postgres").geturl()


def fresh_database(name: str) -> str:
    import psycopg2

    url, admin = database_url(name)
    conn = psycopg2.connect(admin)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return url


def drop_database(name: str) -> None:
    import psycopg2

    _, admin = database_url(name)
    conn = psycopg2.connect(admin)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    conn.close()


def run(logs: Path, database: str, out_json: Path | None, keep: bool = True) -> dict[str, Any]:
    manifest = json.loads((logs / "manifest.json").read_text())
    url = fresh_database(database)
    now_ms = int(time.time() * 1000)
    lookback_s = (now_ms - manifest["t0_ms"]) // 1000 + 2 * 86_400
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "HINDSIGHT_INITIAL_LOOKBACK_S": str(lookback_s),
        "HINDSIGHT_HOSTS_KEEP_SNAPSHOTS": "10000",  # keep every daily snapshot for the per-day figures
        "HINDSIGHT_ATTRIBUTION_WINDOW_DAYS": str(manifest["days"] + 2),
        "OPENBLAS_NUM_THREADS": "1",
        "HINDSIGHT_API_THROTTLE_ANON": "1000000/minute",  # one reader asking for every app, not a crowd
    }
    answers = logs / "answers.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--inside", "--logs", str(logs), "--answers", str(answers)]
    began = time.monotonic()
    try:
        subprocess.run(cmd, env=env, cwd=ROOT, check=True)
    finally:
        if not keep:
            drop_database(database)
    result = score(manifest, json.loads(answers.read_text()))
    result["seconds"] = round(time.monotonic() - began, 1)
    result["database"] = database
    if out_json is not None:
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


# --- The child: the product's commands and its API -----------------------------------------------------------


def inside(logs: Path, answers_path: Path) -> None:
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.core.management import call_command
    from django.test import Client

    manifest = json.loads((logs / "manifest.json").read_text())
    timings: dict[str, float] = {}

    def step(name: str, *args: str) -> None:
        t = time.monotonic()
        with open(os.devnull, "w") as quiet:
            call_command(*args, stdout=quiet)
        timings[name] = timings.get(name, 0.0) + time.monotonic() - t

    step("migrate", "migrate", "--verbosity", "0")
    step("sources_add", "sources", "add", CLUSTER, "--eventlog-dir", str(logs.resolve()))
    step("poll", "poll", "--once")
    days = sorted({r["day"] for r in manifest["runs"]})
    for d in range(days[0], days[-1] + 1):
        end = _iso(manifest["t0_ms"] + (d + 1) * DAY_MS)
        step("rank_hosts", "rank_hosts", "--window", "24h", "--window", "7d", "--end", end)
    step("train_attribution", "train_attribution", "--quiet")
    step("localize_stages", "localize_stages", "--all")

    client = Client(HTTP_HOST="localhost")  # a host the local settings allow
    by_app: dict[str, Any] = {}
    for r in manifest["runs"]:
        if r["adhoc"]:
            continue
        aid = urllib.parse.quote(r["app_id"], safe="")
        entry: dict[str, Any] = {}
        res = client.get(f"/api/v1/apps/{aid}/attribution")
        entry["attribution_status"] = res.status_code
        entry["attribution"] = res.json() if res.status_code == 200 else None
        if r["cause"] == "slow_host":
            res = client.get(f"/api/v1/apps/{aid}/executor-anomalies")
            entry["executors"] = res.json() if res.status_code == 200 else None
        by_app[r["app_id"]] = entry
    stages: dict[str, Any] = {}
    for template in sorted({r["template"] for r in manifest["runs"] if r["cause"] == "unexplained"}):
        key = _template_key(client, manifest, template)
        res = client.get("/api/v1/stage-anomalies", {"template": key}) if key else None
        stages[template] = {"key": key, "answer": res.json() if res is not None and res.status_code == 200 else None}
    hosts_latest = {}
    for window in ("24h", "7d"):
        res = client.get("/api/v1/hosts", {"window": window, "stragglers": "true", "limit": 500})
        hosts_latest[window] = res.json() if res.status_code == 200 else {"status": res.status_code}
    daily = _daily_stragglers()
    answers = {
        "apps": by_app,
        "stages": stages,
        "hosts_latest": hosts_latest,
        "hosts_daily": daily,
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
    }
    answers_path.write_text(json.dumps(answers, default=str))


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ms / 1000))


def _template_key(client: Any, manifest: dict[str, Any], template: str) -> str | None:
    """The product's template key of one generated template, from the app detail of one of its runs."""
    run = next(r for r in manifest["runs"] if r["template"] == template)
    res = client.get(f"/api/v1/apps/{urllib.parse.quote(run['app_id'], safe='')}")
    if res.status_code != 200:
        return None
    body = res.json()
    return _find(body, "template")


def _find(body: Any, key: str) -> Any:
    if isinstance(body, dict):
        if isinstance(body.get(key), str):
            return body[key]
        for v in body.values():
            found = _find(v, key)
            if found:
                return found
    if isinstance(body, list):
        for v in body:
            found = _find(v, key)
            if found:
                return found
    return None


def _daily_stragglers() -> list[dict[str, Any]]:
    """Every stored snapshot's window and straggler hosts, read with the selectors the hosts API uses."""
    from analyzer.hosts import selectors
    from analyzer.models import HostRankingSnapshot

    out = []
    for row in HostRankingSnapshot.objects.order_by("window", "window_end"):
        snap = selectors.read_snapshot(row)
        records = selectors.snapshot_hosts(snap)
        out.append(
            {
                "window": row.window,
                "window_end": row.window_end.isoformat() if row.window_end else None,
                "n_ranked": row.n_ranked,
                "stragglers": sorted(h.host for h in records if getattr(h, "straggler", False)),
            }
        )
    return out


# --- Scoring --------------------------------------------------------------------------------------------------


def _share(hits: int, total: int) -> dict[str, Any]:
    return {"value": round(hits / total, 3) if total else None, "hits": hits, "of": total}


def _causes(attribution: dict[str, Any] | None) -> tuple[list[str], str | None, bool | None]:
    """(ranked cause codes, confidence level, slower than usual) of one attribution answer."""
    if not attribution or not attribution.get("available"):
        return [], None, None
    exp = attribution.get("explanation") or {}
    causes = exp.get("causes") or []
    codes = [c.get("code") for c in causes if isinstance(c, dict)]
    conf = exp.get("confidence") or {}
    return [c for c in codes if c], conf.get("level"), attribution.get("slower_than_usual")


def score(manifest: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
    runs = [r for r in manifest["runs"] if not r["adhoc"]]
    apps = answers["apps"]
    per_cause: dict[str, Counter[str]] = {}
    top1 = top3 = top1_nd = n_scored = n_nd = 0
    high = high_wrong = 0
    unexplained = unexplained_low = 0
    unavailable = 0
    misses: list[dict[str, Any]] = []
    immaterial = 0
    for r in runs:
        cause = r["cause"]
        if cause is None:
            continue
        c = per_cause.setdefault(cause, Counter())
        c["runs"] += 1
        if r["slowdown"] < MATERIAL:  # the cause cost too little to be an answer's subject
            immaterial += 1
            c["immaterial"] += 1
            continue
        codes, level, slower = _causes(apps.get(r["app_id"], {}).get("attribution"))
        if not codes:
            unavailable += 1
            c["unavailable"] += 1
            continue
        c["scored"] += 1
        if cause == "unexplained":
            unexplained += 1
            if level == "low":
                unexplained_low += 1
                c["low"] += 1
            if level == "high":
                high += 1
                high_wrong += 1  # nothing measured moved: a High answer names a cause that is not it
                c["high"] += 1
                c["high_wrong"] += 1
            continue
        truth = r["truth_cause"]
        n_scored += 1
        first = codes[0] if codes else None
        hit1, hit3 = first == truth, truth in codes[:3]
        top1 += hit1
        top3 += hit3
        c["top1"] += hit1
        c["top3"] += hit3
        if cause != "driver_idle":
            n_nd += 1
            top1_nd += hit1
        if level == "high":
            high += 1
            high_wrong += not hit1
            c["high"] += 1
            c["high_wrong"] += not hit1
        if not hit1 and len(misses) < 40:
            misses.append(
                {
                    "app_id": r["app_id"],
                    "cause": cause,
                    "ranked": codes[:3],
                    "level": level,
                    "slower": slower,
                    "distractors": r["distractors"],
                }
            )
    # Executor anomaly: the slow host's executor first.
    ex_hits = ex_total = 0
    for r in runs:
        if r["cause"] != "slow_host" or not r["slow_host_executors"]:
            continue
        ex_total += 1
        answer = apps.get(r["app_id"], {}).get("executors") or {}
        ranking = (answer.get("ranking") or {}) if answer.get("available") else {}
        first = _first_executor(ranking)
        ex_hits += first in set(r["slow_host_executors"])
    # Straggler hosts over 7-day windows.
    bad_days = {h["host"]: {int(d) for d in h["bad_days"]} for h in manifest["hosts"]}
    slow_gen = max(range(len(manifest["generations"])), key=lambda g: manifest["generations"][g])
    slow_gen_hosts = {h["host"] for h in manifest["hosts"] if h["generation"] == slow_gen}
    windows: dict[str, dict[str, Any]] = {}
    for w in ("7d", "24h"):
        tp = fp = fn = gen_flagged = snaps = 0
        for s in answers["hosts_daily"]:
            if s["window"] != w or not s["window_end"]:
                continue
            end_day = _day(manifest, s["window_end"]) - 1  # the last day inside the window
            span = 7 if w == "7d" else 1
            inside = set(range(end_day - span + 1, end_day + 1))
            truth = {h for h, ds in bad_days.items() if ds & inside}
            flagged = set(s["stragglers"])
            snaps += 1
            tp += len(flagged & truth)
            fp += len(flagged - truth)
            fn += len(truth - flagged)
            gen_flagged += len((flagged - truth) & slow_gen_hosts)
        windows[w] = {
            "snapshots": snaps,
            "precision": _share(tp, tp + fp),
            "recall": _share(tp, tp + fn),
            "false_positives": fp,
            "slow_generation_false_positives": gen_flagged,
        }
    last7 = next((s for s in reversed(answers["hosts_daily"]) if s["window"] == "7d"), None)
    last7_flagged = set(last7["stragglers"]) if last7 else set()
    # Stage localization: the injected stage named for its run.
    st_hits = st_total = 0
    for r in runs:
        if r["cause"] != "unexplained" or not r.get("slowed_stages") or r["slowdown"] < MATERIAL:
            continue
        st_total += 1
        answer = (answers["stages"].get(r["template"]) or {}).get("answer")
        st_hits += _stage_named(answer, r)
    by_cause = {
        k: {
            "runs": v["runs"],
            "immaterial": v["immaterial"],
            "scored": v["scored"],
            "top1": _share(v["top1"], v["scored"])["value"] if k != "unexplained" else None,
            "top3": _share(v["top3"], v["scored"])["value"] if k != "unexplained" else None,
            "high": v["high"],
            "high_wrong": v["high_wrong"],
            "low": v["low"],
            "unavailable": v["unavailable"],
        }
        for k, v in sorted(per_cause.items())
    }
    return {
        "population": {
            "apps": len(manifest["runs"]),
            "recurring_runs": len(runs),
            "adhoc_apps": len(manifest["runs"]) - len(runs),
            "templates": len(manifest["templates"]),
            "hosts": len(manifest["hosts"]),
            "days": manifest["days"],
            "task_attempts": sum(r["tasks"] for r in manifest["runs"]),
            "causes": dict(Counter(str(r["cause"]) for r in runs)),
            "with_distractors": sum(1 for r in runs if r["distractors"]),
        },
        "attribution_top1": _share(top1, n_scored),
        "attribution_top3": _share(top3, n_scored),
        "attribution_top1_without_driver_idle": _share(top1_nd, n_nd),
        "high_confidence_wrong": _share(high_wrong, high),
        "unexplained_rated_low": _share(unexplained_low, unexplained),
        "attribution_unavailable": unavailable,
        "attribution_immaterial": immaterial,
        "slow_host_executor_first": _share(ex_hits, ex_total),
        "straggler_precision_7d": windows["7d"]["precision"],
        "straggler_recall_7d": windows["7d"]["recall"],
        "slow_generation_hosts_flagged_7d": {
            "false_positive_flags": windows["7d"]["slow_generation_false_positives"],
            "hosts_in_last_window": len((last7_flagged & slow_gen_hosts) - {h for h, d in bad_days.items() if d}),
            "generation_size": len(slow_gen_hosts),
        },
        "straggler_daily": windows["24h"],
        "straggler_windows": windows,
        "slowed_stage_named": _share(st_hits, st_total),
        "by_cause": by_cause,
        "misses": misses,
        "timings_s": answers.get("timings_s", {}),
    }


def _day(manifest: dict[str, Any], iso: str) -> int:
    import datetime as dt

    ms = int(dt.datetime.fromisoformat(iso).timestamp() * 1000)
    return round((ms - manifest["t0_ms"]) / DAY_MS)


def _first_executor(ranking: dict[str, Any]) -> str | None:
    for key in ("executors", "ranking", "rows", "ranked"):
        rows = ranking.get(key)
        if isinstance(rows, list) and rows:
            row = rows[0]
            if isinstance(row, dict):
                for k in ("executor_id", "executor", "id"):
                    if row.get(k) is not None:
                        return str(row[k])
    return None


def _stage_named(answer: Any, run: dict[str, Any]) -> bool:
    """Whether the stage-anomalies answer names the run's injected stage first among the stages it lists the run
    as an outlier of (stages in the answer's order, most evidence first)."""
    if not isinstance(answer, dict):
        return False
    for loc in answer.get("localizations") or []:
        for category in loc.get("categories") or []:
            for stage in category.get("stages") or []:
                if not stage.get("anomalous"):
                    continue
                if any(o.get("app_id") == run["app_id"] for o in stage.get("outlier_runs") or []):
                    return str(stage.get("stage_id")) in {str(s) for s in run["slowed_stages"]}
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=Path, required=True, help="A directory generate.py wrote.")
    parser.add_argument("--database", default="gen2_eval")
    parser.add_argument("--json", type=Path, default=None, help="Write the results here.")
    parser.add_argument("--drop", action="store_true", help="Drop the database at the end (kept by default).")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--answers", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        inside(args.logs, args.answers)
        return
    result = run(args.logs, args.database, args.json, keep=not args.drop)
    print(json.dumps({k: result[k] for k in (*MEASURES, "population", "seconds")}, indent=1))


if __name__ == "__main__":
    main()
