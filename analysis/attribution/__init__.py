"""Why was this run slower than usual? Slowdown attribution for recurring jobs (Griffin, Shao et al. 2019).

Pure library (numpy, pandas, scikit-learn; no Django) over a pandas DataFrame of runs: one row per finished
run with ``template`` (the recurring job's key), ``runtime`` (seconds) and feature columns named as in
:data:`FEATURES` (unknown columns are rejected; absent features allowed). Optional ``run_id``/``started_at``
columns are carried and ignored.

    model = train(runs)                      # global random forest + baselines + confidence thresholds
    explanations = explain(model, new_runs)  # ranked causes, effect in seconds, confidence, per run
    mare(model, held_out_runs)               # template-normalized error (paper Eq. 11)

The model pickles (``joblib.dump(model, path)``); ``model.summary()`` gives what to store with a version.
"""

from analysis.attribution.baselines import Baselines, compute_baselines
from analysis.attribution.confidence import Confidence, ConfidenceThresholds
from analysis.attribution.explain import MODES, CauseEffect, Explanation, FeatureEffect, Mode, explain
from analysis.attribution.features import CAUSES, FEATURES, Cause, Feature, FeatureError, feature_row
from analysis.attribution.model import AttributionModel, mare, train

__all__ = [
    "CAUSES",
    "FEATURES",
    "MODES",
    "AttributionModel",
    "Baselines",
    "Cause",
    "CauseEffect",
    "Confidence",
    "ConfidenceThresholds",
    "Explanation",
    "Feature",
    "FeatureEffect",
    "FeatureError",
    "Mode",
    "compute_baselines",
    "explain",
    "feature_row",
    "mare",
    "train",
]
