import numpy as np
import pandas as pd
import pytest

from analysis.attribution.baselines import band_mask, compute_baselines


def _template(name: str, runtimes: list[float], input_gb: float) -> pd.DataFrame:
    n = len(runtimes)
    return pd.DataFrame(
        {
            "template": name,
            "runtime": runtimes,
            "input_bytes": [input_gb * 1e9 * (1 + i / 100) for i in range(n)],
            "num_stages": 5.0,
            "gc_time_share": np.linspace(0.01, 0.2, n),
            "queue": ["a"] * (n - 1) + ["b"],
        }
    )


def test_the_baseline_runtime_is_the_mean_of_runs_between_the_45th_and_55th_percentile() -> None:
    df = _template("t", [float(x) for x in range(1, 22)], 1.0)  # 1..21: p45 = 10, p55 = 12
    b = compute_baselines(df, ["input_bytes", "num_stages", "gc_time_share"], ["queue"], min_runs=5)
    assert band_mask(df).sum() == 3
    assert b.runtime[0] == pytest.approx(11.0)
    band = df[(df.runtime >= 10) & (df.runtime <= 12)]
    assert b.values[0, 2] == pytest.approx(band.gc_time_share.mean())
    assert compute_baselines(df.assign(run_id=range(21)), ["input_bytes"], []).band_runs == {"t": [9, 10, 11]}
    assert b.modes[0, 0] == "a"
    assert not b.borrowed[0]


def test_slow_outliers_do_not_move_the_baseline() -> None:
    df = _template("t", [100.0] * 10 + [10_000.0], 1.0)
    b = compute_baselines(df, ["input_bytes"], [], min_runs=5)
    assert b.runtime[0] == pytest.approx(100.0)


def test_a_template_with_too_few_runs_borrows_from_the_most_similar_and_says_so() -> None:
    df = pd.concat(
        [
            _template("small", [float(x) for x in range(10, 20)], 1.0),
            _template("big", [float(x) for x in range(1000, 1010)], 1000.0),
            _template("new", [1005.0, 1006.0], 900.0),
        ],
        ignore_index=True,
    )
    b = compute_baselines(df, ["input_bytes", "num_stages"], ["queue"], min_runs=5, k=1)
    i = b.index["new"]
    assert b.borrowed[i]
    assert b.donors[i] == ("big",)
    assert b.runtime[i] == pytest.approx(b.runtime[b.index["big"]])
    assert not b.borrowed[b.index["small"]]
    assert b.donors[b.index["small"]] == ()


def test_an_unseen_template_borrows_by_its_own_run_signature() -> None:
    df = pd.concat(
        [
            _template("small", [float(x) for x in range(10, 20)], 1.0),
            _template("big", [float(x) for x in range(1000, 1010)], 1000.0),
        ],
        ignore_index=True,
    )
    b = compute_baselines(df, ["input_bytes", "num_stages"], [], min_runs=5, k=1)
    run = pd.DataFrame({"template": ["never"], "input_bytes": [1.1e9], "num_stages": [5.0]})
    rb = b.resolve(["never"], run)
    assert rb.borrowed[0]
    assert rb.donors[0] == ("small",)
    assert rb.template_index[0] == -1


def test_no_template_with_enough_runs_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="lend"):
        compute_baselines(_template("t", [1.0, 2.0], 1.0), ["input_bytes"], [], min_runs=5)
