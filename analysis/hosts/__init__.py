"""Where is it slow? Node-level straggler ranking (Ouyang, Garraghan, Wang, Townend, Xu; IEEE SCC 2016).

Pure library (numpy, pandas, scipy; no Django) over a task frame (columns in ``frame``): task durations
become z-scores among sibling tasks, each host's z-scores are fitted by nine candidate distributions chosen
by Anderson-Darling, indicators are computed per host, and hosts are levelled by the paper's interval-graph
ranking; hosts significantly and materially (x1.3) slower than their hardware class are the stragglers.

    snapshot = rank_hosts(task_frame_from_arrays(host, group, duration_ms, finish_ms))
    snapshot.hosts; snapshot.stragglers; snapshot.n_levels; snapshot.to_dict()
"""

# The fitting and ranking names load on first use (PEP 562): the analysis pipeline imports ``frame`` for every app
# and must not pay for scipy.stats (~2 s to import). ``levels`` is both a submodule and a function: imported eagerly,
# the function wins, as it always did.
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.hosts.frame import (
    HOST_SAMPLE_MAX,
    REQUIRED_COLUMNS,
    HostTasks,
    TaskFrameError,
    host_task_samples,
    sibling_log_ratios,
    sibling_zscores,
    task_frame_from_app,
    task_frame_from_arrays,
    with_zscores,
)
from analysis.hosts.levels import levels, levels_reference
from analysis.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from analysis.hosts.fit import FAMILIES, fit_full
    from analysis.hosts.rank import (
        HOST_COLUMNS,
        INTERVALS,
        RankingConfig,
        StragglerSnapshot,
        hardware_classes,
        rank_hosts,
    )

_LAZY: dict[str, str] = {
    "FAMILIES": "analysis.hosts.fit",
    "HOST_COLUMNS": "analysis.hosts.rank",
    "INTERVALS": "analysis.hosts.rank",
    "RankingConfig": "analysis.hosts.rank",
    "StragglerSnapshot": "analysis.hosts.rank",
    "fit_full": "analysis.hosts.fit",
    "rank_hosts": "analysis.hosts.rank",
    "hardware_classes": "analysis.hosts.rank",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "FAMILIES",
    "HOST_COLUMNS",
    "HOST_SAMPLE_MAX",
    "INTERVALS",
    "REQUIRED_COLUMNS",
    "HostTasks",
    "RankingConfig",
    "StragglerSnapshot",
    "TaskFrameError",
    "fit_full",
    "hardware_classes",
    "host_task_samples",
    "levels",
    "levels_reference",
    "rank_hosts",
    "sibling_log_ratios",
    "sibling_zscores",
    "task_frame_from_app",
    "task_frame_from_arrays",
    "with_zscores",
]
