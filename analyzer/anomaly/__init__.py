"""Where is it slow? Anomaly views over one app's executors and over a template's recurring runs (issue 7).

Pure library (numpy, pandas; no Django, no analyzer.models), evaluated on its own in benchmarks/anomaly/:

* :mod:`analyzer.anomaly.executors` -- executor (or host) anomaly ranking inside one app (Basu et al. 2007):
  ``rank_executors(executor_features(app))`` ranks executors and, within each, features.
* :mod:`analyzer.anomaly.rpca` -- robust PCA (principal component pursuit, inexact ALM) in numpy.
* :mod:`analyzer.anomaly.stages` -- stage anomaly localization across recurring runs (CloudDiag, Mi et al.
  2013): ``localize(runs)`` finds the stage that is the outlier, and in which runs.

Results are frozen dataclasses with ``to_dict()`` giving JSON-ready dictionaries.
"""

# Names load on first use (PEP 562): importing one submodule, as the analysis pipeline does for every app, must not
# pay for the others (scipy.stats alone takes ~2 s to import).
from __future__ import annotations

from typing import TYPE_CHECKING

from analyzer.lazy_exports import lazy_getattr

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "ExecutorInputError": "analyzer.anomaly.executors",
    "ExecutorRanking": "analyzer.anomaly.executors",
    "ExecutorScore": "analyzer.anomaly.executors",
    "FEATURES": "analyzer.anomaly.executors",
    "Feature": "analyzer.anomaly.executors",
    "FeatureScore": "analyzer.anomaly.executors",
    "LeftOut": "analyzer.anomaly.executors",
    "RPCAResult": "analyzer.anomaly.rpca",
    "default_lambda": "analyzer.anomaly.rpca",
    "executor_features": "analyzer.anomaly.executors",
    "rank_executors": "analyzer.anomaly.executors",
    "robust_pca": "analyzer.anomaly.rpca",
    "CategoryResult": "analyzer.anomaly.stages",
    "LocalizationResult": "analyzer.anomaly.stages",
    "StageFinding": "analyzer.anomaly.stages",
    "StageInputError": "analyzer.anomaly.stages",
    "StageRank": "analyzer.anomaly.stages",
    "analyse_category": "analyzer.anomaly.stages",
    "coefficient_of_variation": "analyzer.anomaly.stages",
    "column_cosines": "analyzer.anomaly.stages",
    "localize": "analyzer.anomaly.stages",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


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
