"""Rank hosts by how their tasks run against sibling tasks, and flag straggler hosts (Ouyang et al., SCC 2016).

    snapshot = rank_hosts(tasks, RankingConfig(window_ms=24 * 3600_000))
    snapshot.hosts            # one row per host (columns in HOST_COLUMNS), slowest level first
    snapshot.to_dict()        # JSON-safe; StragglerSnapshot.from_dict() reads it back

Steps: z-scores among siblings (``frame.sibling_zscores``), the window filter on ``finish_ms``, per-host
statistics from host-sorted z-scores, nine candidate families fitted and chosen by Anderson-Darling
(``fit``), indicators, then the paper's interval-graph levels (``levels``).

**Which hosts are stragglers: slower than their peers, by a margin an owner acts on.** A fleet mixes hardware
generations; a host of an older generation 15% slower than the fleet's median is working as bought, and
calling a tenth of the fleet "stragglers" every day (issue 16: 10 hosts of a 15% slower generation flagged in
21-33 of 47 daily snapshots, precision 0.15 on a fleet with two truly bad hosts) hides the two that are broken.
So each ranked host is compared with its **hardware class**:

* its *speed* is ``exp(mean log_ratio)`` over its tasks in the window: how many times longer than the median
  of their siblings its tasks ran (1.0 typical; the frame's ``log_ratio``);
* its class comes from ``classes`` (a host -> label mapping, e.g. from host-name patterns in the source
  config) or, for hosts it does not name, is learned from the window (``hardware_classes``): hosts sorted by
  speed split where two neighbours differ by more than ``class_gap`` (x1.10: generations closer than that are
  one class, and the floor below absorbs the difference), and a group smaller than ``min_class_hosts`` or
  ``min_class_share`` of the ranked hosts (one or two broken hosts, not a procurement batch) joins its nearest
  neighbour group. A class too small to compare with is replaced by the whole fleet;
* a straggler has at least ``min_host_tasks`` tasks, a speed at least ``min_slowdown`` (x1.3) times its class's
  median speed, and a mean z significantly above its class's median host mean z (one-sided t-test,
  Benjamini-Hochberg over all ranked hosts at ``alpha``; BH rather than Holm: with 12.5k hosts Holm's
  family-wise control would cost recall for little gain, since the floor bounds what a false discovery can be).

Why x1.3: tasks of a host 30% slower than its peers finish 30% later than their siblings, so the stages they
end are that much longer, beyond the 10-20% run-to-run spread of recurring jobs and the 5-15% between
hardware generations; below it, replacing or draining a host buys less than the spread an owner already lives
with. A host whose speed is unknown (samples stored before ``log_ratio`` existed) is never a straggler: silence
rather than a guess. The level (below) is the paper's fleet-wide tier and is shown, not required: a broken host of
a fast generation may sit below a whole slow generation in the fleet's order.

**The interval decides the levels.** The default, the 95% confidence interval of the host mean, is narrow
(hundreds of tasks per host): hosts 1.3x and 3x slow get disjoint intervals, so the 1.3x host lands a level
below the 3x one and level 0 holds only the very slowest (measured: recall 0.13, docs/benchmarks/
stragglers.md). The paper's grouping of all weak hosts into level 0 needs differences *among* clearly slow
hosts to stop counting. So by default
(``cap_at_min_effect``) every interval is clipped at ``centre + min_effect``: hosts certainly slower than the
floor tie at the top, and the order below is unchanged (an edge into a clipped host survives because the
clip stays above the lower host's interval). ``cap_at_min_effect=False`` gives the literal paper; the
alternatives ``interval="fitted"`` (central interval of the fitted distribution) and ``"quantile"``
(empirical quantiles) collapse to one or two levels on realistic data, since task noise dwarfs host
differences. ``n_levels`` is reported with every snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]
from scipy import stats  # type: ignore[import-untyped]

from analysis.hosts import fit as fitting
from analysis.hosts.frame import ZScores, sibling_log_ratios, sibling_zscores, validate
from analysis.hosts.levels import levels
from appmodel.jsonsafe import json_safe

Interval = Literal["mean_ci", "fitted", "quantile"]
INTERVALS: Final = ("mean_ci", "fitted", "quantile")
HOUR_MS: Final = 3_600_000
HIST_EDGES: Final = tuple(float(v) for v in np.linspace(-4.0, 8.0, 49))  # z bins of the level-0 histograms

# Columns of StragglerSnapshot.hosts, in order.
HOST_COLUMNS: Final = (
    "host",  # the task frame's host key
    "n_tasks",  # tasks of the host in the window with a z-score
    "mean",  # mean z-score: how much slower than siblings, in sibling standard deviations
    "std",
    "ci_low",  # confidence interval of the mean (t, ``confidence``)
    "ci_high",
    "q05",
    "q25",
    "q50",
    "q75",
    "q95",
    "family",  # best-fitting candidate by A² (fit.FAMILIES)
    "shape",  # its scipy parameters (shape NaN for 2-parameter families)
    "loc",
    "scale",
    "ad",  # its Anderson-Darling A² (on at most about max_ad_tasks sampled tasks)
    "fit_low",  # central ``confidence`` interval of the fitted distribution
    "fit_high",
    "p_extreme_fitted",  # P(z > extreme_z) under the fitted distribution
    "p_extreme_empirical",  # share of the host's tasks with z > extreme_z
    "interval_low",  # the interval that was levelled (after the cap)
    "interval_high",
    "level",  # 0 = slowest tier; -1 = too few tasks to rank
    "effect",  # mean - its class's centre (median host mean z of the class)
    "p_value",  # one-sided t-test of the mean against its class's centre
    "p_adjusted",  # Benjamini-Hochberg
    "speed",  # exp(mean log_ratio): times the sibling median its tasks took; NaN when unknown
    "hw_class",  # its hardware class (a label from ``classes``, or "speed class k" learned), None when unranked
    "class_hosts",  # ranked hosts in that class
    "class_speed",  # the class's median speed
    "slowdown",  # speed / class_speed
    "straggler",  # significantly and materially slower than its class (see the module docstring)
)


@dataclass(frozen=True, slots=True)
class RankingConfig:
    window_ms: int | None = 24 * HOUR_MS  # tasks finishing in (end - window, end]; None: every task
    window_end_ms: int | None = None  # None: the latest finish in the frame
    min_group_tasks: int = 5  # sibling groups smaller than this are skipped
    min_host_tasks: int = 30  # hosts with fewer tasks in the window are listed but not ranked
    interval: Interval = "mean_ci"
    confidence: float = 0.95  # of the mean CI, the fitted central interval and the quantile interval
    cap_at_min_effect: bool = True
    min_effect: float = 0.25  # z units: how much slower than the fleet a straggler must be
    alpha: float = 0.01  # BH false-discovery rate of the straggler test
    min_slowdown: float = 1.3  # a straggler's speed / its class's median speed (see the module docstring)
    class_gap: float = 1.1  # learned classes split where neighbouring hosts' speeds differ by more than this
    min_class_hosts: int = 5  # a learned class holds at least this many ranked hosts...
    min_class_share: float = 0.05  # ...and this share of them; smaller groups join their nearest neighbour
    extreme_z: float = 1.5  # "extreme value": a task slower than its siblings' mean by 1.5 of their std
    max_ad_tasks: int = 300  # fast path: A² on a per-host sample of about this many tasks
    seed: int = 0  # of that sample

    def validate(self) -> None:
        if self.interval not in INTERVALS:
            raise ValueError(f"interval must be one of {INTERVALS}, got {self.interval!r}")
        if not 0.5 < self.confidence < 1.0:
            raise ValueError("confidence must be in (0.5, 1)")
        if self.window_ms is not None and self.window_ms <= 0:
            raise ValueError("window_ms must be positive")
        if self.min_host_tasks < 3 or self.min_group_tasks < 2 or self.max_ad_tasks < 20:
            raise ValueError("min_host_tasks >= 3, min_group_tasks >= 2 and max_ad_tasks >= 20 are required")
        if not 0.0 < self.alpha < 1.0 or self.min_effect < 0:
            raise ValueError("alpha must be in (0, 1) and min_effect >= 0")
        if self.min_slowdown < 1.0 or self.class_gap <= 1.0 or self.min_class_hosts < 2:
            raise ValueError("min_slowdown >= 1, class_gap > 1 and min_class_hosts >= 2 are required")
        if not 0.0 <= self.min_class_share < 1.0:
            raise ValueError("min_class_share must be in [0, 1)")


@dataclass(slots=True)
class StragglerSnapshot:
    """One ranking: what the product stores per window and shows."""

    config: RankingConfig
    window_start_ms: int | None
    window_end_ms: int | None
    n_tasks: int  # rows of the input frame
    n_tasks_ranked: int  # with a z-score, inside the window
    groups_used: int  # both 0 when the frame came with z-scores (normalized upstream)
    groups_skipped: int
    n_hosts: int
    n_hosts_ranked: int
    n_levels: int
    fleet_centre: float
    hosts: pd.DataFrame
    # host -> counts over HIST_EDGES, for the hosts of level 0 (the page draws them with the fitted density)
    histograms: dict[str, list[int]] = field(default_factory=dict)

    @property
    def stragglers(self) -> pd.DataFrame:
        return self.hosts[self.hosts["straggler"]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe (NaN and inf become None; hosts as a list of records)."""
        records = [
            {k: json_safe(v, infinity="null") for k, v in row.items()}  # numbers, strings, bools and None only
            for row in self.hosts.to_dict(orient="records")
        ]
        for r in records:
            r["host"] = str(r["host"])
            r["hw_class"] = None if r["hw_class"] is None else str(r["hw_class"])
        return {
            "config": asdict(self.config),
            "window_start_ms": self.window_start_ms,
            "window_end_ms": self.window_end_ms,
            "n_tasks": self.n_tasks,
            "n_tasks_ranked": self.n_tasks_ranked,
            "groups_used": self.groups_used,
            "groups_skipped": self.groups_skipped,
            "n_hosts": self.n_hosts,
            "n_hosts_ranked": self.n_hosts_ranked,
            "n_levels": self.n_levels,
            "fleet_centre": json_safe(self.fleet_centre, infinity="null"),
            "hist_edges": list(HIST_EDGES),
            "histograms": self.histograms,
            "hosts": records,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StragglerSnapshot:
        hosts = pd.DataFrame.from_records(data["hosts"], columns=list(HOST_COLUMNS)).astype(
            {"straggler": bool, "level": np.int64, "n_tasks": np.int64}
        )
        text = ("host", "family", "straggler", "level", "hw_class")
        hosts = hosts.fillna({c: np.nan for c in HOST_COLUMNS if c not in text})
        return cls(
            config=RankingConfig(**data["config"]),
            window_start_ms=data["window_start_ms"],
            window_end_ms=data["window_end_ms"],
            n_tasks=data["n_tasks"],
            n_tasks_ranked=data["n_tasks_ranked"],
            groups_used=data["groups_used"],
            groups_skipped=data["groups_skipped"],
            n_hosts=data["n_hosts"],
            n_hosts_ranked=data["n_hosts_ranked"],
            n_levels=data["n_levels"],
            fleet_centre=float("nan") if data["fleet_centre"] is None else data["fleet_centre"],
            hosts=hosts,
            histograms={k: list(v) for k, v in data["histograms"].items()},
        )


def benjamini_hochberg(p: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """BH-adjusted p-values (NaN stays NaN and does not count towards m)."""
    pv = np.asarray(p, dtype=np.float64)
    out = np.full(pv.shape, np.nan)
    ok = np.isfinite(pv)
    m = int(ok.sum())
    if m == 0:
        return out
    vals = pv[ok]
    order = np.argsort(vals)
    adj = vals[order] * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(adj[::-1])[::-1]
    res = np.empty(m)
    res[order] = np.minimum(adj, 1.0)
    out[ok] = res
    return out


def hardware_classes(
    log_speed: npt.ArrayLike, gap: float = 1.1, min_hosts: int = 5, min_share: float = 0.05
) -> npt.NDArray[np.int64]:
    """Robust 1-D clustering of hosts by speed: class index per host (0 = fastest), -1 where the speed is NaN.

    Sorted speeds split where neighbours differ by more than ``gap`` (a ratio); a group with fewer than
    ``max(min_hosts, min_share * n)`` hosts joins the neighbour group it is closer to (a broken host or two is
    not a hardware class), until every group is big enough or one is left.
    """
    x = np.asarray(log_speed, dtype=np.float64)
    out = np.full(x.shape[0], -1, dtype=np.int64)
    ok = np.flatnonzero(np.isfinite(x))
    if ok.size == 0:
        return out
    order = ok[np.argsort(x[ok], kind="stable")]
    xs = x[order]
    cuts = np.flatnonzero(np.diff(xs) > np.log(gap)) + 1
    groups = [list(g) for g in np.split(np.arange(xs.shape[0]), cuts)]
    need = max(min_hosts, int(np.ceil(min_share * xs.shape[0])))
    while len(groups) > 1:
        sizes = [len(g) for g in groups]
        small = min(range(len(groups)), key=lambda k: (sizes[k], k))
        if sizes[small] >= need:
            break
        left = xs[groups[small][0]] - xs[groups[small - 1][-1]] if small > 0 else np.inf
        right = xs[groups[small + 1][0]] - xs[groups[small][-1]] if small + 1 < len(groups) else np.inf
        into = small - 1 if left <= right else small + 1
        lo, hi = min(small, into), max(small, into)
        groups[lo : hi + 1] = [groups[lo] + groups[hi]]
    for k, g in enumerate(groups):
        out[order[g]] = k
    return out


def rank_hosts(
    tasks: pd.DataFrame, config: RankingConfig | None = None, classes: Mapping[str, str] | None = None
) -> StragglerSnapshot:
    """Rank the hosts of a task frame (see ``analysis.hosts.frame`` for its columns).

    ``classes`` names hosts' hardware classes (host key as a string -> label); hosts it does not name are
    classed by speed (``hardware_classes``).
    """
    cfg = config or RankingConfig()
    cfg.validate()
    validate(tasks)
    if "z" in tasks.columns:  # normalized upstream, app by app (frame.with_zscores)
        zs = ZScores(tasks["z"].to_numpy(dtype=np.float64), 0, 0, 0)
        ratio = (
            tasks["log_ratio"].to_numpy(dtype=np.float64)
            if "log_ratio" in tasks.columns
            else np.full(len(tasks), np.nan)
        )
    else:
        zs = sibling_zscores(tasks["group"].to_numpy(), tasks["duration_ms"].to_numpy(), cfg.min_group_tasks)
        ratio = sibling_log_ratios(tasks["group"].to_numpy(), tasks["duration_ms"].to_numpy(), cfg.min_group_tasks)
    finish = tasks["finish_ms"].to_numpy()
    mask = np.isfinite(zs.z)
    start_ms: int | None = None
    end_ms: int | None = None
    if cfg.window_ms is not None and len(tasks):
        end_ms = int(cfg.window_end_ms if cfg.window_end_ms is not None else np.nanmax(finish))
        start_ms = end_ms - cfg.window_ms
        mask &= (finish > start_ms) & (finish <= end_ms)
    z = zs.z[mask]
    codes, names = pd.factorize(tasks["host"].to_numpy()[mask])
    ratio = ratio[mask]
    del mask
    known = np.isfinite(ratio)
    ratio_n = np.bincount(codes[known], minlength=len(names)).astype(np.float64)
    ratio_sum = np.bincount(codes[known], weights=ratio[known], minlength=len(names))
    with np.errstate(invalid="ignore", divide="ignore"):
        # Known for most of the host's tasks, or not at all: a mean over a few apps would stand for all.
        log_speed = np.where(ratio_n > 0, ratio_sum / np.maximum(ratio_n, 1.0), np.nan)
    del ratio, known
    nh = len(names)
    # Host-sorted, then z-sorted within each host: sort z, then a stable sort by host.
    order = np.argsort(z)
    order = order[np.argsort(codes[order], kind="stable")]
    sz = z[order]
    seg = codes[order].astype(np.int64)
    del order, z, codes
    n = np.bincount(seg, minlength=nh).astype(np.int64)
    start = np.concatenate(([0], np.cumsum(n)[:-1])).astype(np.int64)
    hosts = _host_table(sz, seg, start, n, names, cfg)
    ranked = hosts["n_tasks"].to_numpy() >= cfg.min_host_tasks
    centre = float(np.median(hosts["mean"].to_numpy()[ranked])) if ranked.any() else float("nan")
    with np.errstate(invalid="ignore"):
        half_known = ratio_n >= 0.5 * hosts["n_tasks"].to_numpy()
    log_speed = np.where(half_known, log_speed, np.nan)
    _classify(hosts, ranked, log_speed, [str(h) for h in names], classes or {}, cfg)
    _level_and_flag(hosts, ranked, centre, cfg)
    hosts = hosts[list(HOST_COLUMNS)]
    level0 = np.flatnonzero(hosts["level"].to_numpy() == 0)
    edges = np.asarray(HIST_EDGES)
    histograms = {
        str(names[i]): np.histogram(sz[start[i] : start[i] + n[i]], bins=edges)[0].tolist() for i in level0[:500]
    }
    hosts = hosts.sort_values(["level", "mean"], ascending=[True, False], key=_levels_last).reset_index(drop=True)
    lv = hosts["level"].to_numpy()
    return StragglerSnapshot(
        config=cfg,
        window_start_ms=start_ms,
        window_end_ms=end_ms,
        n_tasks=len(tasks),
        n_tasks_ranked=int(sz.shape[0]),
        groups_used=zs.groups_used,
        groups_skipped=zs.groups_skipped,
        n_hosts=nh,
        n_hosts_ranked=int(ranked.sum()),
        n_levels=int(lv.max() + 1) if (lv >= 0).any() else 0,
        fleet_centre=centre,
        hosts=hosts,
        histograms=histograms,
    )


def _levels_last(col: pd.Series) -> pd.Series:
    # Unranked hosts (level -1) after every ranked level.
    return col.where(col >= 0, np.iinfo(np.int64).max) if col.name == "level" else col


def _host_table(
    sz: npt.NDArray[np.float64],
    seg: npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
    n: npt.NDArray[np.int64],
    names: Any,
    cfg: RankingConfig,
) -> pd.DataFrame:
    nh = n.shape[0]
    summary = fitting.summarize(sz, seg, start, n)
    params = fitting.fast_params(summary)
    # Fast path: A² on a Bernoulli sample of about max_ad_tasks per host; sorted order is preserved.
    rng = np.random.default_rng(cfg.seed)
    keep = rng.random(sz.shape[0]) < (cfg.max_ad_tasks / n)[seg]
    ssz, sseg = sz[keep], seg[keep]
    del keep
    sn = np.bincount(sseg, minlength=nh).astype(np.int64)
    sstart = np.concatenate(([0], np.cumsum(sn)[:-1])).astype(np.int64)
    srank = np.arange(1, ssz.shape[0] + 1, dtype=np.int64) - sstart[sseg]
    ad = np.vstack([fitting.anderson_darling(f, ssz, sseg, srank, sn, params[f]) for f in fitting.FAMILIES])
    del ssz, sseg, srank
    best = np.argmin(ad, axis=0)
    best_ad = ad[best, np.arange(nh)]
    shape, loc, scale = np.full(nh, np.nan), np.full(nh, np.nan), np.full(nh, np.nan)
    fit_low, fit_high, p_fit = np.full(nh, np.nan), np.full(nh, np.nan), np.full(nh, np.nan)
    tail = (1.0 - cfg.confidence) / 2.0
    for k, family in enumerate(fitting.FAMILIES):
        idx = np.flatnonzero((best == k) & np.isfinite(best_ad))
        if idx.size == 0:
            continue
        p = params[family].take(idx)
        shape[idx], loc[idx], scale[idx] = p.shape, p.loc, p.scale
        dist = fitting.SCIPY[family]
        args = (p.shape, p.loc, p.scale) if family in fitting.SHAPED else (p.loc, p.scale)
        with np.errstate(all="ignore"):
            fit_low[idx] = dist.ppf(tail, *args)
            fit_high[idx] = dist.ppf(1.0 - tail, *args)
            p_fit[idx] = dist.sf(cfg.extreme_z, *args)
    family_names = np.array(fitting.FAMILIES, dtype=object)[best]
    family_names[~np.isfinite(best_ad)] = None
    nf = n.astype(np.float64)
    half = stats.t.ppf(1.0 - tail, np.maximum(nf - 1, 1)) * summary.std / np.sqrt(nf)
    table: dict[str, Any] = {
        "host": names,
        "n_tasks": n,
        "mean": summary.mean,
        "std": summary.std,
        "ci_low": summary.mean - half,
        "ci_high": summary.mean + half,
    }
    for label, q in (("q05", 0.05), ("q25", 0.25), ("q50", 0.5), ("q75", 0.75), ("q95", 0.95)):
        table[label] = fitting.segment_quantile(sz, start, n, q)
    table |= {
        "family": family_names,
        "shape": shape,
        "loc": loc,
        "scale": scale,
        "ad": best_ad,
        "fit_low": fit_low,
        "fit_high": fit_high,
        "p_extreme_fitted": p_fit,
        "p_extreme_empirical": np.bincount(seg, weights=(sz > cfg.extreme_z).astype(np.float64), minlength=nh) / nf,
    }
    if cfg.interval == "quantile":
        table["interval_low"] = fitting.segment_quantile(sz, start, n, tail)
        table["interval_high"] = fitting.segment_quantile(sz, start, n, 1.0 - tail)
    elif cfg.interval == "fitted":
        table["interval_low"], table["interval_high"] = fit_low, fit_high
    else:
        table["interval_low"], table["interval_high"] = table["ci_low"], table["ci_high"]
    return pd.DataFrame(table)


def _classify(
    hosts: pd.DataFrame,
    ranked: npt.NDArray[np.bool_],
    log_speed: npt.NDArray[np.float64],
    names: list[str],
    classes: Mapping[str, str],
    cfg: RankingConfig,
) -> None:
    """Each host's class, the class's centre (median mean z) and median speed, and the host's slowdown."""
    nh = len(hosts)
    label: list[str | None] = [None] * nh
    usable = ranked & np.isfinite(log_speed)
    learn = np.flatnonzero(usable & np.array([n not in classes for n in names], dtype=bool))
    learned = hardware_classes(log_speed[learn], cfg.class_gap, cfg.min_class_hosts, cfg.min_class_share)
    for i, k in zip(learn.tolist(), learned.tolist(), strict=True):
        label[i] = f"speed class {k + 1}"
    for i in np.flatnonzero(ranked).tolist():
        if names[i] in classes:
            label[i] = str(classes[names[i]])
    mean = hosts["mean"].to_numpy()
    class_centre, class_speed, class_n = np.full(nh, np.nan), np.full(nh, np.nan), np.zeros(nh, dtype=np.int64)
    members: dict[str, list[int]] = {}
    for i, lab in enumerate(label):
        if lab is not None:
            members.setdefault(lab, []).append(i)
    fleet = np.flatnonzero(usable)
    for rows in members.values():
        idx = np.asarray(rows)
        peers = idx[usable[idx]]
        if peers.size < cfg.min_class_hosts:  # too few to compare with: the whole fleet is the reference
            peers = fleet
        class_n[idx] = peers.size
        if peers.size:
            class_centre[idx] = float(np.median(mean[peers]))
            class_speed[idx] = float(np.exp(np.median(log_speed[peers])))
    speed = np.exp(log_speed)
    hosts["speed"] = speed
    hosts["hw_class"] = np.array(label, dtype=object)
    hosts["class_hosts"] = class_n
    hosts["class_speed"] = class_speed
    hosts["slowdown"] = speed / class_speed
    hosts["_class_centre"] = class_centre


def _level_and_flag(hosts: pd.DataFrame, ranked: npt.NDArray[np.bool_], centre: float, cfg: RankingConfig) -> None:
    nh = len(hosts)
    lo = hosts["interval_low"].to_numpy(dtype=np.float64, copy=True)
    hi = hosts["interval_high"].to_numpy(dtype=np.float64, copy=True)
    usable = ranked & np.isfinite(lo) & np.isfinite(hi)
    if cfg.cap_at_min_effect and np.isfinite(centre):
        cap = centre + cfg.min_effect
        lo, hi = np.minimum(lo, cap), np.minimum(hi, cap)
    level = np.full(nh, -1, dtype=np.int64)
    if usable.any():
        level[usable] = levels(lo[usable], hi[usable])
    mean = hosts["mean"].to_numpy()
    std = hosts["std"].to_numpy()
    nf = hosts["n_tasks"].to_numpy().astype(np.float64)
    class_centre = hosts.pop("_class_centre").to_numpy(dtype=np.float64)
    effect = mean - np.where(np.isfinite(class_centre), class_centre, centre)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = effect / (std / np.sqrt(nf))
        p = np.where(usable & (std > 0), stats.t.sf(t, np.maximum(nf - 1, 1)), np.nan)
    p_adj = benjamini_hochberg(p)
    hosts["interval_low"], hosts["interval_high"] = np.where(usable, lo, np.nan), np.where(usable, hi, np.nan)
    hosts["level"] = level
    hosts["effect"] = effect
    hosts["p_value"] = p
    hosts["p_adjusted"] = p_adj
    slowdown = hosts["slowdown"].to_numpy(dtype=np.float64)
    material = np.nan_to_num(slowdown, nan=0.0) >= cfg.min_slowdown
    significant = (effect > 0) & (np.nan_to_num(p_adj, nan=1.0) <= cfg.alpha)
    hosts["straggler"] = usable & material & significant
