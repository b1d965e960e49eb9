import pickle

import numpy as np

import analysis.attribution as attr


def test_the_injected_cause_ranks_first_for_most_slow_runs_despite_distractors(model, history_and_test) -> None:
    _, test = history_and_test
    explained = test[test.truth != "none"]
    exps = attr.explain(model, explained.drop(columns=["injected", "truth"]))
    top1 = np.mean([e.top_cause == t for e, t in zip(exps, explained.truth, strict=True)])
    assert top1 >= 0.85


def test_a_gc_slowdown_is_explained_with_the_gc_share_against_its_baseline(model, history_and_test) -> None:
    _, test = history_and_test
    run = test[(test.injected == "gc_pressure") & (test.template == "tpl0003")]
    e = attr.explain(model, run.drop(columns=["injected", "truth"]))[0]
    top = e.causes[0]
    assert top.code == "memory_gc"
    assert top.effect_s > 0
    assert top.unusual
    gc = top.members[0]
    assert gc.name == "gc_time_share"
    assert gc.value > gc.baseline
    assert gc.z > 3
    assert e.actual_s > e.baseline_s


def test_slowdowns_outside_the_features_mostly_get_low_confidence(model, history_and_test) -> None:
    _, test = history_and_test
    outside = test[test.truth == "none"]
    exps = attr.explain(model, outside.drop(columns=["injected", "truth"]))
    assert np.mean([e.confidence.level == "low" for e in exps]) >= 0.8


def test_a_trained_model_pickles_and_explains_the_same_after(model, history_and_test) -> None:
    _, test = history_and_test
    runs = test.drop(columns=["injected", "truth"]).iloc[:5]
    again = pickle.loads(pickle.dumps(model))
    assert [e.causes[0].effect_s for e in attr.explain(again, runs)] == [
        e.causes[0].effect_s for e in attr.explain(model, runs)
    ]
    s = model.summary()
    assert s["features"] == model.features
    assert 0 < s["mare"] < 1
    assert s["size_bytes"] > 0
    assert 0 < s["confidence"]["low_error"] < s["confidence"]["high_error"]


def test_mare_is_normalized_by_the_template_baseline(model, history_and_test) -> None:
    history, _ = history_and_test
    own = history[~history.template.map(lambda t: model.baselines.borrowed[model.baselines.index[t]])]
    got = attr.mare(model, own.iloc[:50])
    X, rb = model.design(own.iloc[:50])
    want = np.mean(np.abs(model.forest.predict(X) * rb.runtime - own.runtime.iloc[:50]) / rb.runtime)
    assert got == __import__("pytest").approx(want)


def test_a_run_of_a_never_seen_template_borrows_a_baseline_and_is_flagged(model, history_and_test) -> None:
    _, test = history_and_test
    run = test.drop(columns=["injected", "truth"]).iloc[:1].assign(template="brand-new")
    e = attr.explain(model, run)[0]
    assert e.baseline_borrowed
    assert len(e.donors) == model.baselines.k


def test_an_explanation_serializes_to_plain_json_without_nan(model, history_and_test) -> None:
    import json

    _, test = history_and_test
    run = test.drop(columns=["injected", "truth"]).iloc[:1].assign(spill_bytes=float("nan"))
    d = attr.explain(model, run)[0].to_dict()
    text = json.dumps(d, allow_nan=False)
    assert '"confidence"' in text
    assert d["causes"][0]["members"][0]["name"] in attr.FEATURES


def test_training_reports_its_steps_for_a_progress_bar(history_and_test) -> None:
    history, _ = history_and_test
    steps: list[str] = []
    attr.train(history.iloc[:600], params={"n_estimators": 3}, n_jobs=1, progress=steps.append)
    assert steps == ["baselines", "fit", "holdout", "calibrate", "done"]
