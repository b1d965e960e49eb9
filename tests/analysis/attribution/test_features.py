import math

import pytest

from analysis.attribution.features import CAUSES, FEATURES, Feature, FeatureError, FeatureRegistry, feature_row


def test_the_registry_covers_job_machine_and_cluster_features_each_in_a_known_cause() -> None:
    assert len(FEATURES) >= 25
    assert {f.level for f in FEATURES} == {"job", "machine", "cluster"}
    assert {f.tag for f in FEATURES} == {"user", "system"}
    assert all(f.cause in CAUSES and f.unit is not None and f.description for f in FEATURES)
    assert {f.name for f in FEATURES if f.categorical} >= {"user", "queue", "job_type", "framework_version"}


def test_an_unknown_feature_name_is_rejected_with_its_name() -> None:
    with pytest.raises(FeatureError, match="'input_byte'"):
        FEATURES.check(["input_bytes", "input_byte"])
    with pytest.raises(FeatureError, match="unknown feature"):
        FEATURES["nope"]


def test_check_returns_known_names_in_registry_order() -> None:
    assert FEATURES.check(["queue_wait_s", "input_bytes"]) == ["input_bytes", "queue_wait_s"]


def test_a_duplicate_or_causeless_feature_cannot_be_registered() -> None:
    f = FEATURES["input_bytes"]
    with pytest.raises(FeatureError, match="duplicate"):
        FeatureRegistry([f, f])
    bad = Feature("x", "", "d", "user", "job", "no_such_cause")
    with pytest.raises(FeatureError, match="unknown cause"):
        FeatureRegistry([bad])


def test_causes_group_the_correlated_data_metrics_together() -> None:
    groups = FEATURES.by_cause()
    assert {"input_bytes", "shuffle_read_bytes", "spill_bytes", "num_tasks"} <= set(groups["data_volume"])
    assert {"queue_wait_s", "concurrent_apps"} <= set(groups["contention"])


def test_a_feature_row_marks_absent_values_and_rejects_unknown_keys_and_bad_values() -> None:
    row = feature_row({"input_bytes": 10, "queue": "etl", "gc_time_share": None})
    assert row["input_bytes"] == 10.0
    assert row["queue"] == "etl"
    assert math.isnan(row["gc_time_share"])
    assert math.isnan(row["spill_bytes"])
    assert row["user"] == ""
    with pytest.raises(FeatureError, match="unknown"):
        feature_row({"input_bytez": 1})
    with pytest.raises(FeatureError, match="input_bytes"):
        feature_row({"input_bytes": -1})
    with pytest.raises(FeatureError, match="expected a number"):
        feature_row({"input_bytes": "10"})
