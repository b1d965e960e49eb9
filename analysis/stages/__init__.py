"""Where in a recurring job is it slow? Stage anomaly localization across a template's runs (CloudDiag, Mi et al.
2013), by robust PCA.

Pure library (numpy, pandas; no Django), evaluated on its own in benchmarks/anomaly/evaluate_stages.py:

* :mod:`analysis.stages.rpca` -- robust PCA (principal component pursuit, inexact ALM) in numpy.
* :mod:`analysis.stages.localize` -- ``localize(runs)`` finds the stage that is the outlier, and in which runs.
* :mod:`analysis.stages.signature` -- the stage signature that says two runs ran the same stages.

Results are frozen dataclasses with ``to_dict()`` giving JSON-ready dictionaries.
"""

# Names load on first use (PEP 562): the analysis pipeline imports ``signature`` for every app and must not pay for
# pandas and the robust PCA.
from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.lazy_exports import lazy_getattr

if TYPE_CHECKING:
    from analysis.stages.localize import (
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
    from analysis.stages.rpca import RPCAResult, default_lambda, robust_pca

_LAZY: dict[str, str] = {
    "RPCAResult": "analysis.stages.rpca",
    "default_lambda": "analysis.stages.rpca",
    "robust_pca": "analysis.stages.rpca",
    "CategoryResult": "analysis.stages.localize",
    "LocalizationResult": "analysis.stages.localize",
    "StageFinding": "analysis.stages.localize",
    "StageInputError": "analysis.stages.localize",
    "StageRank": "analysis.stages.localize",
    "analyse_category": "analysis.stages.localize",
    "coefficient_of_variation": "analysis.stages.localize",
    "column_cosines": "analysis.stages.localize",
    "localize": "analysis.stages.localize",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "CategoryResult",
    "LocalizationResult",
    "RPCAResult",
    "StageFinding",
    "StageInputError",
    "StageRank",
    "analyse_category",
    "coefficient_of_variation",
    "column_cosines",
    "default_lambda",
    "localize",
    "robust_pca",
]
