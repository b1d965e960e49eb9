"""Where is it slow? Anomaly views over one app's executors and over a template's recurring runs (issue 7).

Pure library (numpy, pandas; no Django, no analyzer.models), evaluated on its own in benchmarks/anomaly/:

* :mod:`analyzer.anomaly.executors` -- executor (or host) anomaly ranking inside one app (Basu et al. 2007):
  ``rank_executors(executor_features(app))`` ranks executors and, within each, features.
* :mod:`analyzer.anomaly.rpca` -- robust PCA (principal component pursuit, inexact ALM) in numpy.
* :mod:`analyzer.anomaly.stages` -- stage anomaly localization across recurring runs (CloudDiag, Mi et al.
  2013): ``localize(runs)`` finds the stage that is the outlier, and in which runs.

Results are frozen dataclasses with ``to_dict()`` giving JSON-ready dictionaries.
"""

from analyzer.anomaly.executors import (
    FEATURES,
    ExecutorInputError,
    ExecutorRanking,
    ExecutorScore,
    Feature,
    FeatureScore,
    LeftOut,
    executor_features,
    rank_executors,
)
from analyzer.anomaly.rpca import RPCAResult, default_lambda, robust_pca
from analyzer.anomaly.stages import (
    CategoryResult,
    LocalizationResult,
    StageFinding,
    StageInputError,
    StageRank,
    analyse_category,
    coefficient_of_variation,
    column_cosines,
    localize,
)

__all__ = [
    "FEATURES",
    "CategoryResult",
    "ExecutorInputError",
    "ExecutorRanking",
    "ExecutorScore",
    "Feature",
    "FeatureScore",
    "LeftOut",
    "LocalizationResult",
    "RPCAResult",
    "StageFinding",
    "StageInputError",
    "StageRank",
    "analyse_category",
    "coefficient_of_variation",
    "column_cosines",
    "default_lambda",
    "executor_features",
    "localize",
    "rank_executors",
    "robust_pca",
]
