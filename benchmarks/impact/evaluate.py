"""Judge Hindsight's verdicts on the generated impact benchmark (``generate.py``): detection, headline rank, the
estimated cost against the true cost, and false alarms on clean runs.

Every log goes through Hindsight's contract, ``manage.py analyze --format json --no-store`` (in batches, two
processes at a time); its JSON lines are matched to the manifest by source path. Per problem:

- detection: one of the problem's heuristics (manifest ``expected_codes``) at MODERATE or worse;
- headline: that heuristic's rank in the record's ``headline`` (1 = leads it);
- impact: ``heuristics[].impact.wall_ms`` of that heuristic / the true cost (the run's runtime minus its clean
  twin's), and the share of runs within 0.5-2x;
- clean runs: the share with any finding SEVERE or worse, and which heuristics;
- fewer executors: ``what_if.runtime_ms_at`` at the usual executor count / the clean twin's real runtime.

``headline``, ``impact`` and ``what_if`` are issue 14's new fields (docs/IMPACT.md); a record without them is
counted as "not available", not as a miss.

    .venv/bin/python benchmarks/impact/evaluate.py [--logs benchmarks/out/impact]
        [--json benchmarks/impact/results.json]
        [--reuse]   # judge the reports.jsonl of an earlier run again without re-analyzing
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]
SEVERITIES = ("NONE", "LOW", "MODERATE", "SEVERE", "CRITICAL")
RANK = {name: i for i, name in enumerate(SEVERITIES)}
NOT_AVAILABLE = "not available"
TARGETS = {
    "detected_at_least_moderate": "every injected problem a heuristic covers",
    "leads_headline": "every injected problem a heuristic covers",
    "impact_within_0_5_to_2x": ">= 80%",
    "clean_with_any_severe": "<= 1%",
}


def analyze(paths: list[str], batch: int = 40, workers: int = 2) -> list[dict[str, Any]]:
    """Hindsight's JSON record of every log, through ``manage.py analyze`` (stderr lines kept as warnings)."""
    env = os.environ | {"DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings")}

    def run(chunk: list[str]) -> list[dict[str, Any]]:
        command = [sys.executable, str(REPO / "manage.py"), "analyze", "--format", "json", "--no-store", *chunk]
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, check=False)
        if done.returncode not in (0, 2):
            raise RuntimeError(f"manage.py analyze exited {done.returncode}: {done.stderr.decode()[-2000:]}")
        for line in done.stderr.decode().splitlines():
            print(line, file=sys.stderr)
        return [orjson.loads(line) for line in done.stdout.splitlines() if line.strip()]

    chunks = [paths[i : i + batch] for i in range(0, len(paths), batch)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return [record for records in pool.map(run, chunks) for record in records]


def severity_of(record: dict[str, Any], codes: list[str]) -> str:
    found = [h["severity"] for h in record.get("heuristics", []) if h["code"] in codes]
    return max(found, key=lambda s: RANK.get(s, 0), default="NONE")


def headline_rank(record: dict[str, Any], codes: list[str]) -> int | str | None:
    """1-based rank of the first of ``codes`` in the headline; None when absent from it; NOT_AVAILABLE when the
    record has no headline field."""
    headline = record.get("headline")
    if headline is None:
        return NOT_AVAILABLE
    for rank, entry in enumerate(headline, start=1):
        if entry.get("code") in codes:
            return rank
    return None


def estimated_wall_ms(record: dict[str, Any], codes: list[str]) -> float | str | None:
    """The largest ``impact.wall_ms`` among ``codes``' findings; NOT_AVAILABLE when no finding has the field."""
    findings = [h for h in record.get("heuristics", []) if h["code"] in codes]
    if not any("impact" in h for h in record.get("heuristics", [])):
        return NOT_AVAILABLE
    values = [h["impact"]["wall_ms"] for h in findings if h.get("impact") and h["impact"].get("wall_ms") is not None]
    return max(values) if values else None


def runtime_at(record: dict[str, Any], executors: int) -> float | str | None:
    """``what_if.runtime_ms_at`` at ``executors`` (a mapping by count, or a list of {executors, runtime_ms}),
    linear between the two counts around it when it is not one of them; None when outside them."""
    what_if = record.get("what_if")
    if not isinstance(what_if, dict) or "runtime_ms_at" not in what_if:
        return NOT_AVAILABLE
    at = what_if["runtime_ms_at"]
    points: dict[int, float] = {}
    if isinstance(at, dict):
        points = {int(k): float(v) for k, v in at.items() if v is not None and str(k).isdigit()}
    elif isinstance(at, list):
        for entry in at:
            if isinstance(entry, dict) and entry.get("runtime_ms") is not None:
                points[int(entry["executors"])] = float(entry["runtime_ms"])
            elif isinstance(entry, list | tuple) and len(entry) == 2:
                points[int(entry[0])] = float(entry[1])
    if executors in points:
        return points[executors]
    below = [n for n in points if n < executors]
    above = [n for n in points if n > executors]
    if not below or not above:
        return None
    lo, hi = max(below), min(above)  # the counts around it: linear between them
    return points[lo] + (points[hi] - points[lo]) * (executors - lo) / (hi - lo)


def share(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p10": round(pick(0.1), 3), "median": round(statistics.median(ordered), 3), "p90": round(pick(0.9), 3)}


def judge(runs: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, Any]:
    by_source = {str(Path(r["source"]).resolve()): r for r in records if r.get("source")}
    problems: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    missing = []
    for run in runs:
        record = by_source.get(str(Path(run["path"]).resolve()))
        if record is None:
            missing.append(run["path"])
            continue
        problems[run["problem"]].append((run, record))
    fields_present = {
        name: any(field in record for record in records)
        for name, field in (("headline", "headline"), ("what_if", "what_if"))
    } | {"impact": any("impact" in h for r in records for h in r.get("heuristics", []))}

    result: dict[str, Any] = {"apps": len(runs), "analyzed": len(records), "unmatched_logs": missing[:20],
                              "fields_present": fields_present, "targets": TARGETS, "problems": {}}  # fmt: skip
    for problem, pairs in sorted(problems.items()):
        entry: dict[str, Any] = {"runs": len(pairs)}
        costs = [run["true_cost_ms"] / run["clean_runtime_ms"] for run, _ in pairs]
        entry["true_cost_share_of_clean_runtime"] = quantiles(costs)
        severe_other: Counter[str] = Counter()
        for run, record in pairs:
            for h in record.get("heuristics", []):
                if RANK.get(h["severity"], 0) >= RANK["SEVERE"] and h["code"] not in run["expected_codes"]:
                    severe_other[h["code"]] += 1
        entry["other_codes_severe_or_worse"] = dict(severe_other.most_common())
        if problem == "clean":
            severe = [
                any(RANK.get(h["severity"], 0) >= RANK["SEVERE"] for h in r.get("heuristics", [])) for _, r in pairs
            ]
            moderate = [
                any(RANK.get(h["severity"], 0) >= RANK["MODERATE"] for h in r.get("heuristics", [])) for _, r in pairs
            ]
            entry["with_any_severe"] = share(severe)
            entry["with_any_moderate"] = share(moderate)
            entry["app_severity"] = dict(Counter(r.get("severity") for _, r in pairs))
            severe_codes = Counter(
                h["code"]
                for _, r in pairs
                for h in r.get("heuristics", [])
                if RANK.get(h["severity"], 0) >= RANK["SEVERE"]
            )
            entry["severe_codes"] = dict(severe_codes.most_common())
            if all("headline" in r for _, r in pairs):
                entry["with_a_headline"] = share([bool(r["headline"]) for _, r in pairs])
        if run_codes := pairs[0][0]["expected_codes"]:
            del run_codes
            severities = [severity_of(record, run["expected_codes"]) for run, record in pairs]
            entry["severity_of_expected"] = dict(Counter(severities))
            entry["detected_at_least_moderate"] = share([RANK[s] >= RANK["MODERATE"] for s in severities])
            entry["detected_at_least_low"] = share([RANK[s] >= RANK["LOW"] for s in severities])
            # The impact profile bounds severity by cost: a problem that cost little is rightly LOW. So also
            # per the true cost's share of the clean twin's runtime.
            for floor in (0.05, 0.1):
                costly = [RANK[s] >= RANK["MODERATE"] for (run, _), s in zip(pairs, severities, strict=True)
                          if run["true_cost_ms"] >= floor * run["clean_runtime_ms"]]  # fmt: skip
                entry[f"detected_at_least_moderate_when_cost_at_least_{int(floor * 100)}pct"] = share(costly)
                entry[f"runs_with_cost_at_least_{int(floor * 100)}pct"] = len(costly)
            ranks = [headline_rank(record, run["expected_codes"]) for run, record in pairs]
            if all(rank == NOT_AVAILABLE for rank in ranks):
                entry["headline_rank"] = NOT_AVAILABLE
            else:
                entry["headline_rank"] = dict(Counter(str(rank) for rank in ranks))
                entry["leads_headline"] = share([rank == 1 for rank in ranks])
                leaders = Counter(r["headline"][0]["code"] if r.get("headline") else "(empty)" for _, r in pairs)
                entry["headline_leader"] = dict(leaders.most_common())
            ratios, available = [], True
            for run, record in pairs:
                estimate = estimated_wall_ms(record, run["expected_codes"])
                if estimate == NOT_AVAILABLE:
                    available = False
                    break
                cost = run["true_cost_ms"]
                if cost > 0:
                    ratios.append((estimate or 0) / cost)
            if available:
                entry["impact_ratio"] = quantiles(ratios)
                entry["impact_within_0_5_to_2x"] = share([0.5 <= r <= 2 for r in ratios])
                entry["impact_runs_with_positive_true_cost"] = len(ratios)
            else:
                entry["impact_ratio"] = NOT_AVAILABLE
        if problem == "fewer_executors":
            ratios, available = [], True
            for run, record in pairs:
                predicted = runtime_at(record, run["usual_executors"])
                if predicted == NOT_AVAILABLE:
                    available = False
                    break
                if predicted is not None:
                    ratios.append(float(predicted) / run["clean_runtime_ms"])
            if available:
                entry["what_if_runtime_at_usual_vs_clean_twin"] = quantiles(ratios)
                entry["what_if_within_10_percent"] = share([abs(r - 1) <= 0.1 for r in ratios])
                entry["what_if_predictions"] = len(ratios)
            else:
                entry["what_if_runtime_at_usual_vs_clean_twin"] = NOT_AVAILABLE
        result["problems"][problem] = entry
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", type=Path, default=REPO / "benchmarks" / "out" / "impact")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--reuse", action="store_true", help="judge the reports.jsonl already beside the logs")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    manifest = orjson.loads((args.logs / "manifest.json").read_bytes())
    reports = args.logs / "reports.jsonl"
    if args.reuse and reports.exists():
        records = [orjson.loads(line) for line in reports.read_bytes().splitlines() if line.strip()]
    else:
        records = analyze([run["path"] for run in manifest["runs"]], workers=args.workers)
        reports.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n" for r in records))
    result = {"generator": manifest["summary"]} | judge(manifest["runs"], records)
    text = orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    if args.json:
        args.json.write_bytes(text + b"\n")
    print(text.decode())


if __name__ == "__main__":
    main()
