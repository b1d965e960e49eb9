"""What a ``HostRankingSnapshot`` stores, typed: ``snapshot`` and ``config``.

``snapshot`` is ``analysis.hosts.StragglerSnapshot.to_dict()`` plus the service's ``n_apps`` and ``n_tasks_total``
(apps covered and every task z-score they stored, before the per-host cap); ``config`` the ``RankingConfig`` the
snapshot was ranked with (also inside ``snapshot``). Written through ``analyzer.stored_results.validated`` by
``analyzer.hosts.services`` and decoded by ``analyzer.hosts.selectors``.

Which fields have a default: those the library's types default (every ``RankingConfig`` field, and
``StragglerSnapshot.histograms``). Every other field is in every snapshot ever stored, so it is required: a row
without it is unreadable, not silently empty. NaN and infinities were stored as null: ``float | None``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from analysis.hosts import rank

_LIBRARY = rank.RankingConfig()  # its defaults are the schema's


class RankingConfig(msgspec.Struct, frozen=True):
    """``analysis.hosts.RankingConfig``: the window and thresholds a snapshot was ranked with."""

    window_ms: int | None = _LIBRARY.window_ms  # tasks finishing in (end - window, end]; null: every task
    window_end_ms: int | None = _LIBRARY.window_end_ms  # null: the latest finish in the frame
    min_group_tasks: int = _LIBRARY.min_group_tasks
    min_host_tasks: int = _LIBRARY.min_host_tasks  # fewer tasks in the window: listed, not ranked
    interval: Literal["mean_ci", "fitted", "quantile"] = _LIBRARY.interval
    confidence: float = _LIBRARY.confidence
    cap_at_min_effect: bool = _LIBRARY.cap_at_min_effect
    min_effect: float = _LIBRARY.min_effect  # z units a straggler must be slower than the fleet
    alpha: float = _LIBRARY.alpha  # Benjamini-Hochberg false-discovery rate of the straggler test
    # Issue 16: a straggler is this many times slower than its hardware class; snapshots stored before judged
    # by the z floor alone, and read with the library's defaults here.
    min_slowdown: float = _LIBRARY.min_slowdown
    class_gap: float = _LIBRARY.class_gap
    min_class_hosts: int = _LIBRARY.min_class_hosts
    min_class_share: float = _LIBRARY.min_class_share
    extreme_z: float = _LIBRARY.extreme_z
    max_ad_tasks: int = _LIBRARY.max_ad_tasks
    seed: int = _LIBRARY.seed


class HostRecord(msgspec.Struct, frozen=True):
    """One host's indicators in a snapshot (``analysis.hosts.rank.HOST_COLUMNS``), z-scores among siblings."""

    host: str
    n_tasks: int  # its z-scores in the window
    mean: float | None  # mean z: sibling standard deviations slower
    std: float | None
    ci_low: float | None  # confidence interval of the mean
    ci_high: float | None
    q05: float | None
    q25: float | None
    q50: float | None
    q75: float | None
    q95: float | None
    family: str | None  # best-fitting candidate by Anderson-Darling (analysis.hosts.fit.FAMILIES)
    shape: float | None  # its scipy parameters (shape null for 2-parameter families)
    loc: float | None
    scale: float | None
    ad: float | None  # its Anderson-Darling A²
    fit_low: float | None  # central interval of the fitted distribution
    fit_high: float | None
    p_extreme_fitted: float | None  # P(z > extreme_z) under the fit
    p_extreme_empirical: float | None  # share of its tasks with z > extreme_z
    interval_low: float | None  # the interval that was levelled (after the cap)
    interval_high: float | None
    level: int  # 0 = slowest tier; -1 = too few tasks to rank
    effect: float | None  # mean - its class's centre (before issue 16: the fleet's)
    p_value: float | None
    p_adjusted: float | None  # Benjamini-Hochberg
    straggler: bool  # significantly and materially slower than its hardware class (before issue 16: the fleet)
    # Issue 16 (null in snapshots stored before, and for hosts whose speed is unknown):
    speed: float | None = None  # times the sibling median its tasks took
    hw_class: str | None = None  # its hardware class
    class_hosts: int = 0  # ranked hosts in the class (the whole fleet when the class was too small)
    class_speed: float | None = None  # the class's median speed
    slowdown: float | None = None  # speed / class_speed


class Snapshot(msgspec.Struct, frozen=True):
    """``StragglerSnapshot.to_dict()`` with the service's counts: one ranking of a cluster's hosts over a window."""

    config: RankingConfig
    window_start_ms: int | None
    window_end_ms: int | None
    n_tasks: int  # rows of the ranked frame (after the per-host cap)
    n_tasks_ranked: int  # with a z-score, inside the window
    groups_used: int
    groups_skipped: int
    n_hosts: int
    n_hosts_ranked: int
    n_levels: int
    fleet_centre: float | None  # the median of the ranked hosts' mean z
    hist_edges: list[float]  # z bins of the level-0 histograms
    hosts: list[HostRecord]  # slowest level first, unranked hosts last
    n_apps: int
    n_tasks_total: int  # every task z-score the covered apps stored
    histograms: dict[str, list[int]] = {}  # host -> counts over hist_edges, for the level-0 hosts
