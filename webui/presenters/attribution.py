"""The "Why slower than usual?" answer as the report panel and ``/api/v1/apps/<id>/attribution`` show it."""

from __future__ import annotations

from typing import Any

import msgspec

from analyzer.attribution import selectors as attribution_selectors
from analyzer.attribution.schema import ConfidenceThresholds, Explanation
from analyzer.models import AnalyzedApp
from analyzer.stored_results import ResultShapeError, typed


def app_attribution(app: AnalyzedApp) -> dict[str, Any]:
    """Why ``app`` ran slower than usual, by the serving attribution model, as plain data for the panel and the API.

    ``available`` and the ``explanation`` (each cause and feature described, ranked as shown), or a ``reason`` when
    there is none (no model yet, no template, a failure), and the baseline runs it is compared with. Never raises:
    the selector turns any failure into a warning reason.
    """
    answer = attribution_selectors.app_attribution(app)
    data = answer.to_dict()
    if answer.explanation is not None:
        data["explanation"] = described(answer.explanation)
    return data


def described(explanation: Explanation) -> dict[str, Any]:
    """The explanation as plain data with each cause's and feature's description from the registry, the causes'
    ranks as shown and the slowdown in seconds (for people and the API: ``AttributionExplanationSerializer``)."""
    from analysis.attribution import CAUSES, FEATURES  # pandas and sklearn load on first use, not with the page
    from analysis.attribution.explain import Z_MOVED, fast_way_z, slow_way_z

    data: dict[str, Any] = msgspec.to_builtins(explanation)
    usual = explanation.baseline_s
    data["slowdown_s"] = explanation.actual_s - usual if usual is not None else None
    rank = 0
    for cause, typed_cause in zip(data["causes"], explanation.causes, strict=True):
        info = CAUSES.get(typed_cause.code)
        effect = typed_cause.effect_s
        cause["description"] = info.description if info else ""
        cause["effect_abs_s"] = abs(effect) if effect is not None else None
        names = [m.name for m in typed_cause.members if m.name in FEATURES]
        zs = [m.z or 0.0 for m in typed_cause.members if m.name in FEATURES]
        # A cause is shown as slower only when a value it lists moved the slow way (by a robust standard deviation
        # or more), and as faster only when one moved the time-saving way: a modelled effect credited to values
        # that went the other way (less data "making the run slower") is the forest's artefact, not a cause.
        slower = effect is not None and effect > 0 and slow_way_z(zs, names) >= Z_MOVED
        faster = effect is not None and effect < 0 and fast_way_z(zs, names) >= Z_MOVED
        cause["shown"] = bool(slower or faster)
        rank += cause["shown"]
        cause["rank"] = rank if cause["shown"] else None
        for member in cause["members"]:
            name = member["name"]
            member["description"] = FEATURES[name].description if name in FEATURES else name
    data["no_effect"] = [c["label"] for c in data["causes"] if not c["shown"]]
    return data


def attribution_chart(data: dict[str, Any]) -> dict[str, Any] | None:
    """The report's bar chart of cause effects (ms, + slower), for json_script; None when there is nothing to draw.

    ``data`` is :func:`app_attribution`'s answer."""
    exp = data["explanation"]
    if not exp or not exp["causes"]:
        return None
    causes = [c for c in exp["causes"] if c["shown"] and c["effect_s"] is not None]
    return {"labels": [c["label"] for c in causes], "effect_ms": [round(c["effect_s"] * 1000, 1) for c in causes]}


def versions_page() -> dict[str, Any]:
    """The model versions page's context: stored versions newest first (each with its calibration of High), the
    serving one, the MARE bar and the production bar."""
    from analysis.attribution.confidence import MAX_WRONG_HIGH, MIN_CALIBRATION_HIGH

    versions = attribution_selectors.attribution_versions()
    rows = []
    for v in versions.versions:
        calibration = typed_confidence(v.confidence)
        rows.append({"version": v, "calibration": calibration})
    return {
        "versions": versions.versions,
        "rows": rows,
        "serving_id": versions.serving_id,
        "max_mare": versions.max_mare,
        "production_mare": versions.production_mare,
        "max_wrong_high": MAX_WRONG_HIGH,
        "min_calibration_high": MIN_CALIBRATION_HIGH,
    }


def typed_confidence(stored: object) -> ConfidenceThresholds | None:
    """A version's stored confidence thresholds and calibration, or None when the stored JSON does not fit."""
    try:
        return typed(stored, ConfidenceThresholds)
    except ResultShapeError:
        return None
