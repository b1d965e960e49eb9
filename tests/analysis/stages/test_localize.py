"""Stage anomaly localization across recurring runs (CloudDiag): CV gate, cosine flags, outlier runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.stages.localize import (
    StageInputError,
    analyse_category,
    coefficient_of_variation,
    column_cosines,
    localize,
)


def _runs(seed: int, n_runs: int = 40, n_stages: int = 8, slow_stage: int = 5, slow_runs=(3, 17), factor=3.0):
    rng = np.random.default_rng(seed)
    base = np.exp(rng.uniform(np.log(20_000), np.log(120_000), n_stages))
    size = rng.normal(0, 0.1, n_runs)
    log_d = np.log(base) + np.outer(size, rng.uniform(0.5, 1.2, n_stages)) + rng.normal(0, 0.05, (n_runs, n_stages))
    log_d[list(slow_runs), slow_stage] += np.log(factor)
    frame = pd.DataFrame(np.exp(log_d), columns=[str(s) for s in range(n_stages)])
    frame.insert(0, "run_id", [f"r{i}" for i in range(n_runs)])
    return frame


def test_the_slowed_stage_is_ranked_first_and_named_with_its_runs():
    result = analyse_category(_runs(0), force=True)
    top = result.stages[0]
    assert top.anomalous
    assert top.stage == "5"
    assert set(top.outlier_runs) == {"r3", "r17"}
    assert all(2.0 < s < 4.5 for s in top.slowdown)
    assert result.messages()[0] in (
        "stage 5 is the outlier in runs r3 and r17",
        "stage 5 is the outlier in runs r17 and r3",
    )
    assert result.rpca["converged"] is True


def test_healthy_stages_are_not_flagged():
    result = analyse_category(_runs(1), force=True)
    assert [s.stage for s in result.anomalous_stages] == ["5"]


def test_column_cosines_are_one_for_parallel_columns_and_low_for_a_deviating_one():
    m = np.array([[1.0, 1.0], [2.0, -1.0], [3.0, 1.0]])
    low = np.array([[2.0, 1.0], [4.0, 1.0], [6.0, 1.0]])
    cos = column_cosines(m, low)
    assert cos[0] == pytest.approx(1.0)
    assert cos[1] == pytest.approx(1 / 3)
    assert column_cosines(m, np.zeros_like(m)).tolist() == [0.0, 0.0]


def test_a_stage_whose_cosine_is_above_beta_is_not_anomalous_even_with_outlier_entries():
    result = analyse_category(_runs(0), force=True, beta=0.0)
    assert not result.anomalous_stages
    assert result.stages[0].count >= 1  # still counted, only not flagged


def test_the_cv_gate_leaves_a_steady_category_unanalysed():
    steady = _runs(2, slow_runs=())
    assert coefficient_of_variation(steady.drop(columns="run_id").sum(axis=1)) < 0.15
    result = analyse_category(steady)
    assert not result.anomalous
    assert not result.analysed
    assert "not above alpha" in result.reason
    assert result.stages == []


def test_the_cv_gate_opens_for_a_category_whose_run_times_vary_more_than_alpha():
    runs = _runs(3, slow_runs=(3, 17, 25), factor=8.0)
    runs["run_time"] = runs.drop(columns="run_id").sum(axis=1)
    cv = coefficient_of_variation(runs["run_time"])
    assert analyse_category(runs, alpha=cv - 0.01).analysed
    assert not analyse_category(runs, alpha=cv + 0.01).analysed


def test_coefficient_of_variation_is_zero_for_too_few_or_non_positive_values():
    assert coefficient_of_variation([5.0]) == 0.0
    assert coefficient_of_variation([0.0, 0.0]) == 0.0
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(np.std([1, 3], ddof=1) / 2)


def test_too_few_runs_are_not_analysed():
    result = analyse_category(_runs(0, n_runs=5, slow_runs=(1,)), force=True)
    assert not result.analysed
    assert "fewer than the 8 needed" in result.reason


def test_localize_groups_by_template_and_signature_and_ranks_stages_by_categories_flagged():
    a = _runs(4).assign(template="etl", signature="s1")
    b = _runs(5, slow_runs=(2, 9)).assign(template="etl", signature="s2")
    c = _runs(6, slow_stage=1, slow_runs=(4,)).assign(template="report", signature="s1")
    result = localize(pd.concat([a, b, c], ignore_index=True), force=True)
    assert [(x.template, x.signature) for x in result.categories] == [("etl", "s1"), ("etl", "s2"), ("report", "s1")]
    first = result.ranking[0]
    assert (first.template, first.stage, first.categories) == ("etl", "5", 2)
    assert ("report", "1") in {(r.template, r.stage) for r in result.ranking}
    json.dumps(result.to_dict())  # JSON-ready


def test_stages_missing_in_some_runs_are_dropped_and_named():
    runs = _runs(7)
    runs.loc[0, "2"] = np.nan
    result = analyse_category(runs, force=True)
    assert result.dropped_stages == ["2"]
    assert "2" not in {s.stage for s in result.stages}


def test_localize_without_template_or_signature_is_a_clear_error():
    with pytest.raises(StageInputError, match="template"):
        localize(_runs(0))


def test_one_clearly_slow_run_outranks_stages_with_marginal_noise_entries():
    runs = _runs(8, n_runs=60, n_stages=12, slow_stage=9, slow_runs=(30,), factor=3.0)
    rng = np.random.default_rng(80)
    for stage in ("2", "4"):  # two runs each just over the threshold: noise-like
        for run in rng.choice(60, size=2, replace=False):
            runs.loc[run, stage] *= 1.35
    result = analyse_category(runs, force=True)
    assert result.stages[0].stage == "9"
    evidence = [s.evidence for s in result.anomalous_stages]
    assert evidence == sorted(evidence, reverse=True)
