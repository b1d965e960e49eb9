import copy

import numpy as np
import pandas as pd
import pytest

import analysis.attribution as attr
from analysis.attribution.confidence import ConfidenceThresholds
from analysis.attribution.explain import Decomposer, rank_causes, slow_way_z


def slow_path_walk(forest, X: np.ndarray) -> tuple[float, np.ndarray]:
    """Reference Saabas decomposition: walk every tree from the root, crediting each split's value change."""
    n_trees = len(forest.estimators_)
    bias = 0.0
    contrib = np.zeros((len(X), X.shape[1]))
    X32 = X.astype(np.float32)  # sklearn trees compare float32 values
    for est in forest.estimators_:
        t = est.tree_
        bias += t.value[0, 0, 0] / n_trees
        for i, x in enumerate(X32):
            node = 0
            while t.children_left[node] >= 0:
                f = t.feature[node]
                child = t.children_left[node] if x[f] <= t.threshold[node] else t.children_right[node]
                contrib[i, f] += (t.value[child, 0, 0] - t.value[node, 0, 0]) / n_trees
                node = child
    return bias, contrib


@pytest.fixture(scope="module")
def rows(model, history_and_test) -> np.ndarray:
    _, test = history_and_test
    X, _ = model.design(test.drop(columns=["injected", "truth"]).iloc[:40])
    return X


def test_bias_plus_contributions_equals_the_forest_prediction(model, rows) -> None:
    pred, contrib, _ = model.decomposer.decompose(rows)
    forest = model.forest.predict(rows)
    np.testing.assert_allclose(model.decomposer.bias + contrib.sum(axis=1), forest, rtol=1e-9, atol=0)
    np.testing.assert_allclose(pred, forest, rtol=1e-9, atol=0)


def test_the_vectorized_decomposition_equals_the_slow_path_walk(model, rows) -> None:
    bias, contrib = slow_path_walk(model.forest, rows[:10])
    _, fast, _ = model.decomposer.decompose(rows[:10])
    assert model.decomposer.bias == pytest.approx(bias, rel=1e-12)
    np.testing.assert_allclose(fast, contrib, rtol=1e-9, atol=1e-12)


def test_per_tree_predictions_are_each_trees_own_prediction(model, rows) -> None:
    _, _, per_tree = model.decomposer.decompose(rows[:5])
    want = np.stack([e.predict(rows[:5].astype(np.float32)) for e in model.forest.estimators_], axis=1)
    np.testing.assert_allclose(per_tree, want, rtol=1e-12)


def test_delta_contributions_are_the_run_minus_the_template_baseline_and_sum_to_the_prediction_gap(
    model, history_and_test
) -> None:
    _, test = history_and_test
    runs = test.drop(columns=["injected", "truth"]).iloc[:12]
    num, cat, rb = model.frames(runs)
    X_run = model.encoder.matrix(num, cat, rb)
    X_base = model.encoder.matrix(rb.values, rb.modes, rb)
    _, c_run, _ = model.decomposer.decompose(X_run)
    _, c_base, _ = model.decomposer.decompose(X_base)
    for i, e in enumerate(attr.explain(model, runs, "paper")):
        members = {m.name: m for c in e.causes for m in c.members}
        for f, m in members.items():
            cols = [j for j, owner in enumerate(model.encoder.column_feature) if owner == f]
            want = (c_run[i, cols].sum() - c_base[i, cols].sum()) * rb.runtime[i]
            assert m.delta_s == pytest.approx(want, rel=1e-9, abs=1e-9)
        total = sum(m.delta_s for m in members.values()) + e.context_delta_s
        assert total == pytest.approx(e.predicted_s - e.predicted_baseline_s, rel=1e-9, abs=1e-6)


def test_a_decomposer_works_on_any_fitted_forest() -> None:
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(0)
    X = rng.random((200, 4))
    y = 3 * X[:, 0] + X[:, 1] * X[:, 2]
    rf = RandomForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    pred, contrib, _ = Decomposer(rf).decompose(X[:20])
    np.testing.assert_allclose(pred, rf.predict(X[:20]), rtol=1e-9)
    assert np.abs(contrib[:, 3]).sum() < np.abs(contrib[:, 0]).sum()


def test_every_mode_ranks_every_cause_once_and_a_bad_mode_is_refused(model, history_and_test) -> None:
    _, test = history_and_test
    runs = test.drop(columns=["injected", "truth"]).iloc[:3]
    for mode in attr.MODES:
        for e in attr.explain(model, runs, mode):
            codes = [c.code for c in e.causes]
            assert sorted(codes) == sorted(set(codes))
            assert len(codes) == len({f.cause for f in attr.FEATURES})
    with pytest.raises(ValueError, match="mode"):
        attr.explain(model, runs, "shap")  # type: ignore[arg-type]


def test_unknown_columns_and_bad_runtimes_are_refused(model) -> None:
    with pytest.raises(attr.FeatureError):
        attr.explain(model, pd.DataFrame({"template": ["t"], "runtime": [1.0], "inptu_bytes": [1.0]}))
    with pytest.raises(ValueError, match="runtime"):
        attr.explain(model, pd.DataFrame({"template": ["t"], "runtime": [-1.0]}))


def test_an_unusual_cause_that_costs_almost_nothing_ranks_below_a_moved_cause_that_costs_much() -> None:
    effects = {"skew": 40.0, "code": 0.5, "data_volume": 3.0}
    slow_z = {"skew": 2.0, "code": 3.0, "data_volume": 0.2}  # user changed (a category: 3), skew moved 2 sigma
    order = rank_causes(effects, slow_z, slowdown_s=50.0, baseline_s=100.0)
    assert order[0] == "skew"
    assert order.index("code") > order.index("skew")


def test_a_cause_whose_values_went_the_harmless_way_never_leads_however_large_its_modelled_effect() -> None:
    # "More data" +30 s by the model, but input and shuffle were below usual (z < 0): it ranks after skew.
    members = ["input_bytes", "shuffle_read_bytes", "num_tasks"]
    data_z = slow_way_z([-0.8, -1.5, 0.0], members)
    assert data_z == 0.0
    effects = {"data_volume": 30.0, "skew": 12.0}
    slow_z = {"data_volume": data_z, "skew": 4.0}
    assert rank_causes(effects, slow_z, slowdown_s=45.0, baseline_s=60.0) == ["skew", "data_volume"]


def test_a_setting_that_changed_either_way_counts_as_moved_the_slow_way() -> None:
    assert slow_way_z([-4.0], ["num_executors"]) == 4.0  # fewer executors can slow a run
    assert slow_way_z([-4.0], ["input_bytes"]) == 0.0  # less input cannot


def test_unusual_causes_lead_and_rank_among_themselves_by_effect() -> None:
    effects = {"failures": 8.0, "memory_gc": 20.0, "contention": 25.0}
    slow_z = {"failures": 5.0, "memory_gc": 3.5, "contention": 1.2}
    order = rank_causes(effects, slow_z, slowdown_s=40.0, baseline_s=100.0)
    assert order == ["memory_gc", "failures", "contention"]


def test_a_slower_run_whose_measured_features_all_stayed_usual_is_rated_low_confidence(model) -> None:
    b = model.baselines
    i = next(k for k, t in enumerate(b.templates) if not b.borrowed[k])
    row: dict[str, object] = {"template": b.templates[i], "runtime": 3.0 * float(b.runtime[i])}
    row.update({f: float(v) for f, v in zip(b.numeric, b.center[i], strict=True)})  # every value at its median
    row.update({f: str(v) for f, v in zip(b.categorical, b.modes[i], strict=True)})
    # Thresholds so loose that the prediction error alone would never say Low: the missing evidence must.
    lenient = copy.copy(model)
    lenient.confidence = ConfidenceThresholds(low_error=50.0, high_error=100.0)
    [explanation] = attr.explain(lenient, pd.DataFrame([row]))
    assert explanation.confidence.level == "low"
    assert "outside the measured features" in explanation.confidence.message
    [same_run_paper] = attr.explain(lenient, pd.DataFrame([row]), "paper")  # the paper's mode keeps its own rule
    assert same_run_paper.confidence.level != "low"
