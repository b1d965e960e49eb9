"""High is calibrated on perturbed held-out runs at training time, and withheld when calibration cannot support it."""

from __future__ import annotations

import numpy as np
import pandas as pd

import analysis.attribution as attr
from analysis.attribution.calibration import calibrate, perturbed_runs
from analysis.attribution.confidence import MAX_WRONG_HIGH, MIN_CALIBRATION_HIGH
from analysis.attribution.model import split_runs


def held_out(model: attr.AttributionModel, history: pd.DataFrame) -> pd.DataFrame:
    _, ho = split_runs(history, 0.2, 7)
    own = [t in model.baselines.index and not model.baselines.borrowed[model.baselines.index[t]] for t in ho.template]
    return ho[own]


def test_a_trained_model_stores_its_calibration_and_serves_high_only_if_it_passes(model, history_and_test) -> None:
    c = model.confidence
    assert c.calibration_runs > 0
    assert 0 <= c.calibration_wrong_high <= c.calibration_high <= c.calibration_runs
    passes = (
        c.calibration_high >= MIN_CALIBRATION_HIGH and c.calibration_wrong_high <= MAX_WRONG_HIGH * c.calibration_high
    )
    assert c.high_allowed == passes
    assert model.summary()["confidence"]["calibration_high"] == c.calibration_high


def test_high_is_withheld_when_too_few_held_out_runs_can_be_checked(model, history_and_test) -> None:
    history, test = history_and_test
    few = calibrate(model, held_out(model, history).iloc[:5])
    assert not few.high_allowed
    assert few.calibration_high < MIN_CALIBRATION_HIGH
    model.confidence, kept = few, model.confidence
    try:
        levels = {e.confidence.level for e in attr.explain(model, test.drop(columns=["injected", "truth"]))}
    finally:
        model.confidence = kept
    assert "high" not in levels


def test_each_perturbed_run_moves_only_its_causes_features_the_slow_way_from_a_run_as_usual(
    model, history_and_test
) -> None:
    history, _ = history_and_test
    runs = held_out(model, history).reset_index(drop=True)
    _, _, rb = model.frames(runs)
    usual = runs[np.abs(runs["runtime"].to_numpy() / rb.runtime - 1) <= 0.05].iloc[:1]
    perturbed, truth = perturbed_runs(model, usual, np.random.default_rng(0))
    assert {"memory_gc", "data_volume", "failures"} <= set(truth)
    original = usual.iloc[0]
    by_cause = attr.FEATURES.by_cause(model.features)
    for (_, row), cause in zip(perturbed.iterrows(), truth, strict=True):
        for name in model.features:
            if attr.FEATURES[name].categorical:
                continue
            if name in by_cause[cause] and attr.FEATURES[name].direction == "higher":
                assert row[name] >= original[name] or np.isnan(original[name]), (cause, name)
            elif name not in by_cause[cause]:
                assert row[name] == original[name] or np.isnan(original[name]), (cause, name)
        assert row["runtime"] > 0
