"""Slowdown attribution's typed results: what an ``AttributionModelVersion`` stores beside its model, and the
explanation of one app that ``/api/v1/apps/<id>/attribution`` answers.

Stored (``analysis.attribution.AttributionModel.summary()``, checked through ``analyzer.stored_results.validated``
by ``analyzer.attribution.services`` before a version is written): ``params`` (:class:`ForestParams`, the random
forest's parameters), ``features`` (a ``list[str]`` of registry feature names, in the model's order) and
``confidence`` (:class:`ConfidenceThresholds`, tuned on the held-out runs). Nothing reads them back yet: the model
itself (the blob) carries what explaining needs, and the versions page shows the row's own columns.

Not stored: :class:`Explanation` is ``analysis.attribution.Explanation.to_dict()``, converted strictly by
``analyzer.attribution.selectors`` before the answer is built, so a library change that breaks its shape fails in
tests rather than in the report. The API's serializers (``webui.api.serializers.Attribution*``) describe it with
the presenter's additions (descriptions, ranks); a test keeps them naming every field here.

Which fields have a default: those the library's types default (``ConfidenceThresholds.interval``, ``tuned_on``,
``min_explained_share`` and the calibration figures). NaN and infinities are null (``to_dict()``'s JSON-safe
floats): ``float | None``.
"""

from __future__ import annotations

from typing import Literal

import msgspec


class ForestParams(msgspec.Struct, frozen=True):
    """The random forest's parameters (``analysis.attribution.model.DEFAULT_PARAMS``, as trained)."""

    n_estimators: int
    max_depth: int | None
    min_samples_leaf: int
    max_features: float | int | str | None  # a share of the columns, a count, or sklearn's "sqrt" / "log2"
    max_samples: int | float | None  # runs per tree: a count once trained (a share of the training runs before)


class ConfidenceThresholds(msgspec.Struct, frozen=True):
    """``analysis.attribution.confidence.ConfidenceThresholds``: relative-error bounds of High and Medium."""

    low_error: float
    high_error: float
    interval: tuple[float, float] = (5.0, 95.0)  # percentiles of the per-tree predictions
    tuned_on: int = 0  # held-out runs
    min_explained_share: float = 0.5
    # Calibration of High (analysis.attribution.calibration); versions stored before it serve no High.
    high_allowed: bool = False
    calibration_runs: int = 0  # perturbed held-out runs slower than usual
    calibration_high: int = 0  # of those, rated High
    calibration_wrong_high: int = 0  # of the High ones, with the wrong top cause
    calibration_top1: float | None = None  # share of calibration runs whose top cause was the moved one

    @property
    def wrong_high_rate(self) -> float | None:
        return self.calibration_wrong_high / self.calibration_high if self.calibration_high else None


class FeatureEffect(msgspec.Struct, frozen=True):
    """One measured feature of a cause: this run's value against the template's usual one."""

    name: str
    unit: str
    value: float | str | None  # a number, a category's value, or null when absent
    baseline: float | str | None
    z: float | None  # robust z against the template's runs (categorical: 3 if changed, else 0)
    delta_s: float | None  # Saabas delta contribution, seconds (+ slower)


class CauseEffect(msgspec.Struct, frozen=True):
    """A cause (``analysis.attribution.CAUSES``) with what the model says it cost."""

    code: str
    label: str
    tag: Literal["user", "system"]  # user: data and code; system: the cluster
    effect_s: float | None  # seconds the cause added (+) or saved (-)
    unusual: bool  # a member is unusual for the template the slow way (z >= 3; a setting |z| >= 3 or changed)
    members: list[FeatureEffect]


class Confidence(msgspec.Struct, frozen=True):
    """How far to trust the explanation (``analysis.attribution.confidence.Confidence``)."""

    level: Literal["high", "medium", "low"]
    rel_error: float | None  # |predicted - actual| / actual
    interval_s: list[float | None]  # the per-tree prediction interval, seconds (low, high)
    inside_interval: bool
    message: str
    explained_share: float | None  # predicted / actual slowdown over the predicted baseline; null if not slower


class Explanation(msgspec.Struct, frozen=True):
    """``analysis.attribution.Explanation.to_dict()``: why one run was slower than its template's usual."""

    template: str
    mode: Literal["causes", "paper", "zscore"]
    actual_s: float
    predicted_s: float | None
    baseline_s: float | None  # the template's usual runtime
    predicted_baseline_s: float | None
    confidence: Confidence
    causes: list[CauseEffect]  # most likely first
    features: list[str]  # features by the mode's ranking
    baseline_borrowed: bool
    donors: list[str]  # templates the usual runtime is borrowed from
    context_delta_s: float | None  # delta credited to the template-context column (no cause)
