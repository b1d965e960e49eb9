"""Stage anomaly localization in words: the history page's "Which stage was the outlier?" section, the API's
answer and ``manage.py localize_stages``' report.

A stored result (``analyzer.stages.selectors``, typed by ``analyzer.stages.schema``) becomes plain data with
sentences: the CV against alpha in words, outlier runs with how much slower they were and which hosts were slow,
and whether newer runs are not in it yet. A result that cannot be read says so (its ``reason``) and how to compute
it again, with no categories.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import msgspec

from analyzer.models import StageLocalization
from analyzer.stages import schema
from analyzer.stages import selectors as stage_selectors
from analyzer.stored_results import UnreadableResult
from appmodel.formatting import page_percent


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    return value if value is None or value.tzinfo else value.replace(tzinfo=dt.UTC)


def stage_label(stage_id: str, name: str) -> str:
    """``stage 7 (count at job.py:42)``; ``stage 7`` when the name is unknown."""
    return f"stage {stage_id} ({name})" if name else f"stage {stage_id}"


def cv_phrase(cv: float, alpha: float) -> str:
    """The CV gate in words: "run times vary 6 %, under the 15 % that triggers a look"."""
    if cv > alpha:
        return f"run times vary {page_percent(cv, 0)}, over the {page_percent(alpha, 0)} that triggers a look"
    return f"run times vary {page_percent(cv, 0)}, under the {page_percent(alpha, 0)} that triggers a look"


def _reason(category: schema.Category, alpha: float, min_runs: int) -> str:
    runs = category.runs
    if category.analysed:
        return ""
    if runs < min_runs:
        return f"{runs} run{'' if runs == 1 else 's'}: at least {min_runs} are needed"
    if not category.anomalous:
        return cv_phrase(category.cv, alpha)
    return category.reason or "not analysed"


def _runs_text(runs: Sequence[dict[str, Any]]) -> str:
    def one(run: dict[str, Any]) -> str:
        end = run["end"].strftime("%Y-%m-%d %H:%M") if run["end"] else "end unknown"
        return f"{run['app_id']} ({end}, {run['slowdown']:.1f}x its usual)"

    texts = [one(r) for r in runs[:5]]
    more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
    if len(texts) == 1:
        return f"run {texts[0]}"
    if more:
        return "runs " + ", ".join(texts) + more
    return "runs " + ", ".join(texts[:-1]) + " and " + texts[-1]


HOSTS_SHOWN = 3


def _host_view(finding: schema.HostFinding | None) -> dict[str, Any]:
    """A stored :func:`host_findings` entry (None: the run has none) as the page, the API and the sentences read it."""
    slow = [msgspec.structs.asdict(host) for host in finding.hosts] if finding is not None else []
    verdict = finding.verdict if finding is not None else "unknown"
    if verdict == "hosts" and not slow:
        verdict = "unknown"
    return {
        "verdict": verdict,
        "n_hosts": finding.n_hosts if finding is not None else 0,
        "slow_hosts": slow if verdict == "hosts" else [],
        "shown": slow[:HOSTS_SHOWN] if verdict == "hosts" else [],
        "more": max(0, len(slow) - HOSTS_SHOWN) if verdict == "hosts" else 0,
    }


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _hosts_text(runs: Sequence[dict[str, Any]]) -> str:
    """The sentence's host clause: "; in run X its tasks on host h1 took 2.1x the others'", "; it was slow on every
    host"; "" when no run's hosts say anything (local mode, fewer than 3 hosts)."""
    shown = runs[:5]  # the runs _runs_text names
    known = [r for r in shown if r["hosts"]["verdict"] != "unknown"]
    if not known:
        return ""
    if len(known) == len(shown) and all(r["hosts"]["verdict"] == "everywhere" for r in known):
        return "; it was slow on every host" if len(shown) == 1 else "; in each it was slow on every host"
    clauses = []
    for r in known:
        hosts = r["hosts"]
        if hosts["verdict"] == "everywhere":
            clauses.append(f"in run {r['app_id']} it was slow on every host")
            continue
        names = [h["host"] for h in hosts["shown"]] + ([f"{hosts['more']} more"] if hosts["more"] else [])
        ratios = _and([f"{h['ratio']:.1f}x" for h in hosts["shown"]])
        usual = [f"{h['usual']:.1f}x" for h in hosts["shown"] if h["usual"] is not None and h["usual"] >= 1.2]
        usually = f" (usually {_and(usual)})" if usual and len(usual) == len(hosts["shown"]) else ""
        plural = "s" if len(hosts["slow_hosts"]) > 1 else ""
        clauses.append(
            f"in run {r['app_id']} its tasks on host{plural} {_and(names)} took {ratios} the others'{usually}"
        )
    return "; " + "; ".join(clauses)


def localization_view(row: StageLocalization, newest_end: dt.datetime | None = None) -> dict[str, Any]:
    """A stored result as plain data for the page, the API and the command; one that cannot be read says so in its
    ``reason``, with no categories."""
    cluster_name = row.cluster.name if row.cluster else ""
    stale = newest_end is not None and row.latest_end is not None and newest_end > row.latest_end
    facts = {
        "template": row.template,
        "cluster": cluster_name,
        "computed_at": row.computed_at,
        "latest_end": row.latest_end,
        "newest_run_end": newest_end,
        "stale": stale,
        "n_runs": row.n_runs,
        "n_categories": row.n_categories,
        "n_anomalous": row.n_anomalous,
    }
    try:
        stored = stage_selectors.localization_of(row)
    except UnreadableResult as error:
        again = f"compute it again with manage.py localize_stages --template {row.template}"
        return {
            **facts,
            "n_analysed": 0,
            "params": None,
            "reason": f"{error}; {again}",
            "sentences": [],
            "categories": [],
            "ranking": [],
        }
    result, runs_map = stored.result, stored.runs
    alpha, min_runs = result.params.alpha, result.params.min_runs

    def run(run_id: str, slowdown: float, hosts: schema.HostFinding | None) -> dict[str, Any]:
        known = runs_map.get(run_id)
        return {
            "run_id": run_id,
            "pk": known.pk if known is not None else None,
            "app_id": (known.app_id if known is not None else "") or run_id,
            "attempt_id": known.attempt_id if known is not None else "",
            "end": _aware(known.end) if known is not None else None,
            "slowdown": slowdown,
            "cluster": cluster_name,
            "hosts": _host_view(hosts),
        }

    categories: list[dict[str, Any]] = []
    sentences: list[str] = []
    names_by_template_stage: dict[str, str] = {}
    for category in result.categories:
        stages: list[dict[str, Any]] = []
        for finding in category.stages:
            stage_id = finding.stage
            name = category.stage_names.get(stage_id, "")
            names_by_template_stage.setdefault(stage_id, name)
            outliers = finding.outlier_runs
            slowdowns = [*finding.slowdown, *[1.0] * (len(outliers) - len(finding.slowdown))]
            hosts_by_run = {h.run: h for h in finding.hosts}
            outlier_runs = [run(r, s, hosts_by_run.get(r)) for r, s in zip(outliers, slowdowns, strict=False)]
            verdicts = [r["hosts"]["verdict"] for r in outlier_runs]
            stage: dict[str, Any] = {
                "stage_id": stage_id,
                "name": name,
                "label": stage_label(stage_id, name),
                "cosine": finding.cosine,
                "anomalous": finding.anomalous,
                "evidence": finding.evidence,
                "outlier_runs": outlier_runs,
                # The page's host clause: every outlier run slow on every host, or the runs whose hosts say something.
                "slow_everywhere": bool(verdicts) and all(v == "everywhere" for v in verdicts),
                "host_runs": [r for r in outlier_runs[:6] if r["hosts"]["verdict"] != "unknown"],
            }
            stages.append(stage)
        anomalous = [s for s in stages if s["anomalous"]]
        category_sentences = [
            f"{s['label']} is the outlier in {_runs_text(s['outlier_runs'])}{_hosts_text(s['outlier_runs'])}"
            for s in anomalous
        ]
        sentences += category_sentences
        categories.append(
            {
                "signature": category.signature,
                "runs": category.runs,
                "cv": category.cv,
                "alpha": alpha,
                "cv_text": cv_phrase(category.cv, alpha) if category.runs > 1 else "a single run: nothing to compare",
                "gate": category.anomalous,
                "analysed": category.analysed,
                "reason": _reason(category, alpha, min_runs),
                "stages": stages,
                "anomalous_stages": anomalous,
                "sentences": category_sentences,
                "dropped_stages": list(category.dropped_stages),
            }
        )
    ranking = []
    for rank in result.ranking:
        name = names_by_template_stage.get(rank.stage, "")
        ranking.append(
            {
                "stage_id": rank.stage,
                "name": name,
                "label": stage_label(rank.stage, name),
                "categories": rank.categories,
                "outlier_runs": rank.outlier_runs,
                "min_cosine": rank.min_cosine,
            }
        )
    analysed = sum(1 for c in categories if c["analysed"])
    reason = result.reason
    if not reason and categories and not analysed:  # say why, by its largest category, not "nothing stands out"
        largest = max(categories, key=lambda c: c["runs"])
        of = f" (its largest of {len(categories)} categories)" if len(categories) > 1 else ""
        reason = f"{largest['reason']}{of}"
    return {
        **facts,
        "n_analysed": analysed,
        "params": msgspec.structs.asdict(result.params),
        "reason": reason,
        "sentences": sentences,
        "categories": categories,
        "ranking": ranking,
    }


def localization_views(*, templates: Sequence[str], cluster: str = "") -> list[dict[str, Any]]:
    """:func:`localization_view` of every stored result of ``templates``, each knowing whether newer runs exist."""
    stored = stage_selectors.stored_with_newest_ends(templates=templates, cluster=cluster)
    return [localization_view(s.row, s.newest_end) for s in stored]


def history_section(by: str, value: str, cluster: str) -> dict[str, Any]:
    """The history's "Which stage was the outlier?" section: the stored localization of each template of the runs
    (a flow's: one line per job's template), and the templates not computed yet with their successful runs."""
    templates = stage_selectors.templates_for_history(by, value, cluster)
    views = localization_views(templates=templates, cluster=cluster)
    computed = {view["template"] for view in views}
    missing = [t for t in templates if t not in computed]
    counts = stage_selectors.qualifying_run_counts(templates=missing, cluster=cluster) if missing else {}
    config = stage_selectors.localization_settings()
    return {
        "views": views,
        "missing": [{"template": t, "runs": counts.get(t, 0)} for t in missing],
        "min_runs": config.min_runs,
        "alpha": config.alpha,
        "compact": by == "flow_def_id",
    }
