import numpy as np
import pytest

from analysis.attribution.confidence import ConfidenceThresholds, assess, tune

TH = ConfidenceThresholds(
    low_error=0.1,
    high_error=0.3,
    high_allowed=True,
    calibration_runs=500,
    calibration_high=300,
    calibration_wrong_high=3,
)


def test_a_small_error_inside_the_tree_interval_is_high() -> None:
    c = assess(100.0, 95.0, np.linspace(80, 120, 50), TH)
    assert c.level == "high"
    assert c.inside_interval
    assert c.rel_error == pytest.approx(0.05)


def test_a_small_error_outside_the_tree_interval_is_medium() -> None:
    assert assess(100.0, 95.0, np.linspace(60, 90, 50), TH).level == "medium"


def test_an_error_between_the_thresholds_is_medium() -> None:
    assert assess(100.0, 80.0, np.linspace(60, 120, 50), TH).level == "medium"


def test_an_error_beyond_the_upper_threshold_is_low_and_says_the_cause_is_elsewhere() -> None:
    c = assess(200.0, 100.0, np.linspace(60, 220, 50), TH)
    assert c.level == "low"
    assert "outside" in c.message


def test_thresholds_are_quantiles_of_held_out_errors() -> None:
    err = np.concatenate([np.full(800, 0.05), np.linspace(0.5, 1.0, 200)])
    th = tune(err)
    assert th.low_error == pytest.approx(np.quantile(err, 0.75))
    assert th.tuned_on == 1000
    assert th.high_error == pytest.approx(np.quantile(err, 0.95))
    assert tune(np.array([0.1] * 10)).high_error == pytest.approx(0.15)  # never closer than 1.5x
    with pytest.raises(ValueError, match="no held-out runs"):
        tune(np.array([np.nan]))


def test_a_large_error_is_only_medium_when_the_features_explain_most_of_the_slowdown() -> None:
    trees = np.linspace(60, 420, 50)
    # Baseline predicted at 100 s, actual 400 s: 300 s of slowdown to explain; every error here is >= 0.3.
    c = assess(400.0, 260.0, trees, TH, predicted_baseline_s=100.0)
    assert c.explained_share == pytest.approx(160 / 300)
    assert c.level == "medium"
    assert assess(400.0, 220.0, trees, TH, predicted_baseline_s=100.0).level == "low"
    assert assess(400.0, 110.0, trees, TH, predicted_baseline_s=100.0).level == "low"


def test_high_is_withheld_when_the_calibration_found_too_many_wrong_high_answers() -> None:
    # 9 of 300 High answers (3%) named the wrong cause on perturbed held-out runs: over the 2% bar.
    th = ConfidenceThresholds(
        low_error=0.1, high_error=0.3, calibration_runs=500, calibration_high=300, calibration_wrong_high=9
    )
    c = assess(100.0, 95.0, np.linspace(80, 120, 50), th)
    assert c.level == "medium"
    assert "High is withheld" in c.message
    assert "9 of 300 High answers (3.0%) named the wrong top cause" in c.message


def test_high_is_withheld_when_the_calibration_checked_too_few_high_answers() -> None:
    th = ConfidenceThresholds(low_error=0.1, high_error=0.3, calibration_runs=60, calibration_high=40)
    c = assess(100.0, 95.0, np.linspace(80, 120, 50), th)
    assert c.level == "medium"
    assert "checked 40 High answers" in c.message


def test_an_uncalibrated_model_never_says_high() -> None:
    assert assess(100.0, 99.0, np.linspace(80, 120, 50), ConfidenceThresholds(0.1, 0.3)).level == "medium"


def test_high_says_the_measured_wrong_high_rate_not_that_the_causes_are_reliable() -> None:
    c = assess(100.0, 95.0, np.linspace(80, 120, 50), TH)
    assert "reliable" not in c.message
    assert "3 (1.0%) named the wrong top cause" in c.message
