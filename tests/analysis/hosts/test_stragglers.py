"""analysis.hosts on its own: normalization, fits, A², leveling and straggler recovery (no database)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from script_modules import load_script

import analysis.hosts as st
from analysis.hosts import fit as fitting
from appmodel import SparkApp, StageAttempt, TaskColumns, TaskStatus

GENERATOR = Path(__file__).resolve().parents[3] / "benchmarks" / "stragglers" / "generate_tasks.py"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return load_script(GENERATOR, "stragglers_generate_tasks")


def healthy_frame(rng: np.random.Generator, hosts: int = 200, groups: int = 400, size: int = 100) -> pd.DataFrame:
    group = np.repeat(np.arange(groups), size)
    base = rng.lognormal(np.log(10_000), 1.0, groups)[group]
    return st.task_frame_from_arrays(
        host=rng.integers(0, hosts, group.size),
        group=group,
        duration_ms=base * rng.lognormal(0.0, 0.4, group.size),
        finish_ms=1_000_000 + rng.integers(0, 3_600_000, group.size),
    )


# --- z-scores among siblings -------------------------------------------------------------------------------


def test_zscores_are_skipped_for_small_and_constant_groups() -> None:
    group = np.array([1] * 6 + [2] * 4 + [3] * 5 + [4] * 5)
    duration = np.array([1, 2, 3, 4, 5, 6] + [1, 2, 3, 4] + [7] * 5 + [1, 2, 3, 4, 500], dtype=float)
    zs = st.sibling_zscores(group, duration, min_group_tasks=5)
    assert np.isfinite(zs.z[:6]).all()
    assert np.isnan(zs.z[6:15]).all()  # group 2 too small, group 3 constant
    assert np.isfinite(zs.z[15:]).all()
    assert (zs.groups_used, zs.groups_skipped, zs.tasks_skipped) == (2, 2, 9)


def test_zscores_equal_a_pandas_groupby_transform() -> None:
    rng = np.random.default_rng(0)
    group = rng.choice(np.array(["a", "b", "c", "d"]), 2000)
    duration = rng.lognormal(8, 1, 2000)
    df = pd.DataFrame({"g": group, "t": duration})
    expected = (df.t - df.groupby("g").t.transform("mean")) / df.groupby("g").t.transform("std")
    np.testing.assert_allclose(st.sibling_zscores(group, duration).z, expected.to_numpy(), rtol=1e-10, atol=1e-12)


def test_unfinished_tasks_are_neither_scored_nor_counted_as_siblings() -> None:
    zs = st.sibling_zscores(np.zeros(6, dtype=int), np.array([1.0, 2.0, 3.0, 4.0, 5.0, np.nan]))
    assert np.isnan(zs.z[5])
    np.testing.assert_allclose(zs.z[:5], stats.zscore([1.0, 2.0, 3.0, 4.0, 5.0], ddof=1))


def test_a_task_frame_needs_equal_arrays_and_its_four_columns() -> None:
    with pytest.raises(st.TaskFrameError):
        st.task_frame_from_arrays([1, 2], [1, 1], [1.0], [5, 6])
    with pytest.raises(st.TaskFrameError, match="lacks columns"):
        st.rank_hosts(pd.DataFrame({"host": [1], "group": [1], "duration_ms": [1.0]}))


# --- distributions and Anderson-Darling ----------------------------------------------------------------------


def test_ad_statistic_equals_scipys_anderson_for_the_normal_case() -> None:
    x = np.random.default_rng(1).normal(3.0, 2.0, 500)
    _, a2 = fitting.best_fit(x)
    assert a2["norm"] == pytest.approx(stats.anderson(x, "norm", method="interpolate").statistic, abs=1e-9)


def test_ad_statistic_is_computed_per_host_as_for_each_host_alone() -> None:
    rng = np.random.default_rng(2)
    samples = [rng.gumbel(0, 1, n) for n in (30, 200, 75)]
    x = np.concatenate([np.sort(s) for s in samples])
    n = np.array([s.size for s in samples], dtype=np.int64)
    seg = np.repeat(np.arange(3), n)
    start = np.concatenate(([0], np.cumsum(n)[:-1]))
    rank = np.arange(1, x.size + 1) - start[seg]
    params = fitting.fast_params(fitting.summarize(x, seg, start, n))
    together = fitting.anderson_darling("gumbel_r", x, seg, rank, n, params["gumbel_r"])
    alone = [fitting.best_fit(s)[1]["gumbel_r"] for s in samples]
    np.testing.assert_allclose(together, alone, rtol=1e-10)


@pytest.mark.parametrize("family", fitting.FAMILIES)
def test_closed_form_log_cdf_and_sf_equal_scipys(family: str) -> None:
    x = np.linspace(-4.0, 30.0, 3001)
    shape = {"fisk3": 3.0, "lognorm3": 0.6, "weibull3": 1.7, "gamma3": 2.5, "fisk2": 4.0}.get(family, np.nan)
    loc = 0.0 if family == "fisk2" else -2.0
    p = fitting.Params(np.full(x.size, shape), np.full(x.size, loc), np.full(x.size, 1.5))
    lf, ls = fitting.log_cdf_sf(family, x, p)
    dist, args = fitting.SCIPY[family], fitting.scipy_args(family, shape, loc, 1.5)
    with np.errstate(divide="ignore"):
        ref_f = np.maximum(np.nan_to_num(dist.logcdf(x, *args), neginf=fitting.LOG_FLOOR), fitting.LOG_FLOOR)
        ref_s = np.maximum(np.nan_to_num(dist.logsf(x, *args), neginf=fitting.LOG_FLOOR), fitting.LOG_FLOOR)
    np.testing.assert_allclose(lf, ref_f, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ls, ref_s, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    ("family", "dist"),
    [
        ("fisk3", stats.fisk(3.0, -2.0, 2.0)),
        ("lognorm3", stats.lognorm(0.8, -1.0, 1.0)),
        ("norm", stats.norm(0.0, 1.0)),
        ("expon2", stats.expon(-1.0, 1.0)),
    ],
)
def test_the_generating_family_is_chosen_on_a_large_sample(family: str, dist: stats.rv_continuous) -> None:
    x = dist.rvs(3000, random_state=np.random.default_rng(11))
    assert fitting.best_fit(x)[0] == family


@pytest.mark.parametrize(
    ("family", "limit", "dist"),
    [("gumbel_r", "lognorm3", stats.gumbel_r(0.0, 1.0)), ("gumbel_l", "weibull3", stats.gumbel_l(0.0, 1.0))],
)
def test_a_gumbel_sample_is_fitted_by_its_family_or_the_3_parameter_family_it_is_a_limit_of(
    family: str, limit: str, dist: stats.rv_continuous
) -> None:
    x = dist.rvs(3000, random_state=np.random.default_rng(11))
    best, a2 = fitting.best_fit(x)
    assert best in {family, limit}
    assert sorted(a2, key=lambda f: a2[f])[:2] == sorted([family, limit], key=lambda f: a2[f])


def test_a_point_outside_a_fitted_support_gives_a_large_finite_statistic() -> None:
    x = np.array([-5.0, 1.0, 2.0, 3.0])
    value = fitting.anderson_darling_one(x, lambda v: (stats.expon.logcdf(v), stats.expon.logsf(v)))
    assert np.isfinite(value)
    assert value > 100


def test_the_full_reference_fit_agrees_with_the_fast_path_on_a_clear_case() -> None:
    x = stats.fisk(3.0, -2.0, 2.0).rvs(800, random_state=np.random.default_rng(5))
    full = st.fit_full(x)
    assert min(full, key=lambda f: full[f][0]) in {"fisk3", "lognorm3"}
    assert full["fisk3"][0] <= fitting.best_fit(x)[1]["fisk3"] + 1e-9


# --- levels ----------------------------------------------------------------------------------------------


def test_levels_of_a_chain_count_up_from_the_slowest() -> None:
    # [0,1] < [2,3] < [4,5] disjoint: slowest is level 0; the overlapping [2.5, 4.5] ties with both neighbours.
    lo = np.array([0.0, 2.0, 4.0, 2.5])
    hi = np.array([1.0, 3.0, 5.0, 4.5])
    assert st.levels(lo, hi).tolist() == [2, 1, 0, 0]


@pytest.mark.parametrize("seed", range(40))
def test_levels_equal_the_literal_peel_on_random_intervals(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    # Rounded bounds make ties (A_j == B_i: no edge) common.
    mid = np.round(rng.normal(0, 1, n), 1)
    half = np.round(rng.exponential(rng.uniform(0.01, 0.5), n), 1)
    lo, hi = mid - half, mid + half
    np.testing.assert_array_equal(st.levels(lo, hi), st.levels_reference(lo, hi))


def test_levels_reject_inverted_or_missing_intervals() -> None:
    with pytest.raises(ValueError, match="lower <= upper"):
        st.levels([1.0], [0.0])
    with pytest.raises(ValueError, match="NaN"):
        st.levels([np.nan], [0.0])
    assert st.levels([], []).size == 0


# --- ranking ---------------------------------------------------------------------------------------------


def test_a_healthy_fleet_has_a_level_zero_but_no_stragglers() -> None:
    snap = st.rank_hosts(healthy_frame(np.random.default_rng(3)), st.RankingConfig(window_ms=None))
    assert (snap.hosts["level"] == 0).sum() >= 1
    assert not snap.hosts["straggler"].any()
    assert snap.n_levels >= 1


def test_injected_slow_hosts_are_recovered_as_level_zero_stragglers(gen: ModuleType) -> None:
    frame, slow_factor = gen.generate_frame(gen.Spec(n_tasks=300_000, n_hosts=500, seed=4, slow_fraction=0.02))
    snap = st.rank_hosts(frame, st.RankingConfig(window_ms=None))
    flagged = set(snap.stragglers["host"].tolist())
    assert flagged == set(np.flatnonzero(slow_factor > 1.0).tolist())
    assert (snap.stragglers["level"] == 0).all()
    # The literal paper (uncapped CI) levels the slow hosts apart: level 0 then holds only the slowest.
    literal = st.rank_hosts(frame, st.RankingConfig(window_ms=None, cap_at_min_effect=False))
    assert literal.n_levels > snap.n_levels
    assert set(literal.hosts.loc[literal.hosts["level"] == 0, "host"]) < flagged


def test_hosts_with_too_few_tasks_are_listed_but_not_ranked() -> None:
    frame = healthy_frame(np.random.default_rng(6), hosts=50)
    extra = frame.iloc[:10].assign(host=999)
    snap = st.rank_hosts(pd.concat([frame, extra]), st.RankingConfig(window_ms=None, min_host_tasks=30))
    row = snap.hosts.set_index("host").loc[999]
    assert row["level"] == -1
    assert not row["straggler"]
    assert snap.hosts["level"].iloc[-1] == -1  # unranked hosts come last


def test_the_window_keeps_only_tasks_that_finished_in_it() -> None:
    frame = healthy_frame(np.random.default_rng(7))
    end = int(frame["finish_ms"].max())
    snap = st.rank_hosts(frame, st.RankingConfig(window_ms=600_000))
    inside = (frame["finish_ms"] > end - 600_000).sum()
    assert snap.n_tasks_ranked <= inside
    assert snap.window_start_ms == end - 600_000
    assert snap.window_end_ms == end


def test_a_snapshot_round_trips_through_json() -> None:
    snap = st.rank_hosts(healthy_frame(np.random.default_rng(8)), st.RankingConfig(window_ms=None))
    data = json.loads(json.dumps(snap.to_dict()))
    back = st.StragglerSnapshot.from_dict(data)
    assert back.n_levels == snap.n_levels
    assert list(back.hosts.columns) == list(st.HOST_COLUMNS)
    np.testing.assert_allclose(back.hosts["mean"], snap.hosts["mean"])
    assert back.hosts["host"].tolist() == [str(h) for h in snap.hosts["host"]]
    assert set(data["histograms"]) == {str(h) for h in snap.hosts.loc[snap.hosts["level"] == 0, "host"]}


@pytest.mark.parametrize("interval", st.INTERVALS)
def test_every_interval_choice_ranks_and_reports_its_level_count(interval: str) -> None:
    snap = st.rank_hosts(
        healthy_frame(np.random.default_rng(9)),
        st.RankingConfig(window_ms=None, interval=interval),  # type: ignore[arg-type]
    )
    assert snap.n_levels >= 1
    ranked = snap.hosts[snap.hosts["level"] >= 0]
    assert (ranked["interval_low"] <= ranked["interval_high"]).all()


def test_a_bad_configuration_is_refused_with_a_message() -> None:
    with pytest.raises(ValueError, match="interval must be one of"):
        st.rank_hosts(healthy_frame(np.random.default_rng(1)), st.RankingConfig(interval="median"))  # type: ignore[arg-type]


# --- from the app model -----------------------------------------------------------------------------------


def test_an_apps_task_frame_keeps_successful_tasks_grouped_by_stage_attempt_with_host_names() -> None:
    tasks = TaskColumns.from_columns(
        {
            "task_id": [1, 2, 3, 4],
            "host": [0, 1, 1, 0],
            "status": [TaskStatus.SUCCESS, TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.SUCCESS],
            "launch_ms": [0, 0, 0, 0],
            "finish_ms": [100, 250, 40, 120],
            "duration_ms": [100, 250, 40, 120],
        }
    )
    app = SparkApp(app_id="app-1", hosts=["h1", "h2"], stages={(3, 1): StageAttempt(3, 1, tasks=tasks)})
    frame = st.task_frame_from_app(app)
    assert frame["host"].tolist() == ["h1", "h2", "h1"]
    assert set(frame["group"]) == {"app-1:3:1"}
    assert frame["duration_ms"].tolist() == [100.0, 250.0, 120.0]
    assert st.task_frame_from_app(SparkApp(app_id="empty")).columns.tolist() == list(st.REQUIRED_COLUMNS)


def test_ranking_z_scores_kept_per_app_equals_ranking_the_raw_tasks() -> None:
    frame = healthy_frame(np.random.default_rng(10))
    halves = [frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2 :]]  # groups do not span the halves
    assert not set(halves[0]["group"]) & set(halves[1]["group"])
    kept = pd.concat([st.with_zscores(h) for h in halves], ignore_index=True)
    cfg = st.RankingConfig(window_ms=None)
    a, b = st.rank_hosts(frame, cfg).hosts, st.rank_hosts(kept, cfg).hosts
    pd.testing.assert_frame_equal(
        a.drop(columns=["ad", "family", "shape", "loc", "scale"]),
        b.drop(columns=["ad", "family", "shape", "loc", "scale"]),
    )


def _fleet(gen: ModuleType, generations: tuple[float, ...], shares: tuple[float, ...], **kw: object) -> tuple:
    spec = gen.Spec(
        200_000,
        50,
        seed=300,
        slow_fraction=0.0,
        bad_hosts=2,
        generations=generations,
        generation_shares=shares,
        task_sigma=(0.1, 0.3),
        **kw,
    )
    frame, slow_factor = gen.generate_frame(spec)
    return frame, slow_factor, gen.hardware(spec)


def test_a_generation_of_fifteen_percent_slower_hardware_is_not_flagged_but_two_broken_hosts_are(
    gen: ModuleType,
) -> None:
    # Issue 16: 10 hosts of an older generation 15% slower than the fleet's median were flagged every day.
    frame, slow_factor, hardware = _fleet(gen, (1.0, 1.05, 1.15), (0.4, 0.4, 0.2))
    snap = st.rank_hosts(frame, st.RankingConfig(window_ms=None))
    assert set(snap.stragglers["host"].tolist()) == set(np.flatnonzero(slow_factor > 1.0).tolist())
    older = snap.hosts[snap.hosts["host"].isin(np.flatnonzero((hardware == 1.15) & (slow_factor == 1.0)))]
    assert len(older) >= 8
    assert not older["straggler"].any()
    broken = snap.stragglers
    assert (broken["slowdown"] >= 1.3).all()


def test_a_generation_further_apart_than_the_floor_is_a_class_of_its_own(gen: ModuleType) -> None:
    frame, slow_factor, hardware = _fleet(gen, (1.0, 1.4), (0.5, 0.5))
    snap = st.rank_hosts(frame, st.RankingConfig(window_ms=None))
    assert set(snap.stragglers["host"].tolist()) == set(np.flatnonzero(slow_factor > 1.0).tolist())
    ranked = snap.hosts[snap.hosts["level"] >= 0].set_index("host")
    healthy = ranked.index[slow_factor[ranked.index.to_numpy(dtype=int)] == 1.0]
    by_generation = ranked.loc[healthy].groupby(hardware[healthy.to_numpy(dtype=int)])["hw_class"].nunique()
    assert (by_generation == 1).all()
    assert ranked.loc[healthy, "hw_class"].nunique() == 2


def test_one_or_two_broken_hosts_never_make_a_hardware_class_of_their_own() -> None:
    speeds = np.log(np.r_[np.full(20, 1.0), np.full(20, 1.02), [1.8, 1.9]])
    classes = st.hardware_classes(speeds, gap=1.1, min_hosts=5)
    assert set(classes.tolist()) == {0}
    two = st.hardware_classes(np.log(np.r_[np.full(20, 1.0), np.full(20, 1.4), [2.5]]), gap=1.1, min_hosts=5)
    assert two[:20].tolist() == [0] * 20
    assert two[20:].tolist() == [1] * 21


def test_a_host_slower_than_its_class_by_less_than_the_floor_is_not_a_straggler(gen: ModuleType) -> None:
    frame, slow_factor, _hw = _fleet(gen, (1.0, 1.05), (0.5, 0.5), bad_factor=1.15)
    snap = st.rank_hosts(frame, st.RankingConfig(window_ms=None))
    assert snap.stragglers.empty
    mild = snap.hosts.set_index("host").loc[np.flatnonzero(slow_factor > 1.0)]
    assert (mild["p_adjusted"] < 0.01).all()  # significant, yet not material: not flagged
    strict = st.rank_hosts(frame, st.RankingConfig(window_ms=None, min_slowdown=1.05))
    assert set(strict.stragglers["host"]) >= set(np.flatnonzero(slow_factor > 1.0).tolist())


def test_classes_named_by_the_source_config_replace_the_learned_ones(gen: ModuleType) -> None:
    frame, slow_factor, hardware = _fleet(gen, (1.0, 1.4), (0.5, 0.5))
    names = {str(h): ("new" if hardware[h] == 1.0 else "old") for h in range(50)}
    snap = st.rank_hosts(frame, st.RankingConfig(window_ms=None), classes=names)
    assert set(snap.hosts.loc[snap.hosts["level"] >= 0, "hw_class"]) == {"new", "old"}
    assert set(snap.stragglers["host"].tolist()) == set(np.flatnonzero(slow_factor > 1.0).tolist())


def test_a_host_whose_speed_is_unknown_is_never_a_straggler(gen: ModuleType) -> None:
    frame, slow_factor, _hw = _fleet(gen, (1.0,), (1.0,))
    kept = st.with_zscores(frame).drop(columns=["log_ratio"])  # samples stored before speeds existed
    snap = st.rank_hosts(kept, st.RankingConfig(window_ms=None))
    assert snap.stragglers.empty
    assert snap.hosts["speed"].isna().all()
    assert (snap.hosts.set_index("host").loc[np.flatnonzero(slow_factor > 1.0), "level"] == 0).all()
