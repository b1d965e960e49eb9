"""The "Why slower than usual?" answer as the report panel and ``/api/v1/apps/<id>/attribution`` show it."""

from __future__ import annotations

from typing import Any

from analyzer.attribution import selectors as attribution_selectors
from analyzer.models import AnalyzedApp


def app_attribution(app: AnalyzedApp) -> dict[str, Any]:
    """Why ``app`` ran slower than usual, by the serving attribution model, as plain data for the panel and the API.

    ``available`` and the ``explanation`` (each cause and feature described, ranked as shown), or a ``reason`` when
    there is none (no model yet, no template, a failure), and the baseline runs it is compared with. Never raises:
    the selector turns any failure into a warning reason.
    """
    data = attribution_selectors.app_attribution(app).to_dict()
    if data["explanation"] is not None:
        data["explanation"] = described(data["explanation"])
    return data


def described(data: dict[str, Any]) -> dict[str, Any]:
    """The explanation with each cause's and feature's description from the registry (for people and the API)."""
    from analysis.attribution import CAUSES, FEATURES  # pandas and sklearn load on first use, not with the page

    actual, usual = data.get("actual_s"), data.get("baseline_s")
    data["slowdown_s"] = actual - usual if isinstance(actual, float) and isinstance(usual, float) else None
    for cause in data.get("causes", []):
        info = CAUSES.get(cause["code"])
        cause["description"] = info.description if info else ""
        effect = cause.get("effect_s")
        cause["effect_abs_s"] = abs(effect) if isinstance(effect, int | float) else None
        cause["shown"] = bool(cause.get("unusual") or effect)
        for m in cause.get("members", []):
            m["description"] = FEATURES[m["name"]].description if m["name"] in FEATURES else m["name"]
    data["no_effect"] = [c["label"] for c in data.get("causes", []) if not c["shown"]]
    rank = 0
    for cause in data.get("causes", []):
        rank += cause["shown"]
        cause["rank"] = rank if cause["shown"] else None
    return data


def attribution_chart(data: dict[str, Any]) -> dict[str, Any] | None:
    """The report's bar chart of cause effects (ms, + slower), for json_script; None when there is nothing to draw."""
    exp = data.get("explanation")
    if not exp or not exp.get("causes"):
        return None
    causes = [c for c in exp["causes"] if c.get("shown", True) and isinstance(c.get("effect_s"), int | float)]
    return {"labels": [c["label"] for c in causes], "effect_ms": [round(c["effect_s"] * 1000, 1) for c in causes]}


def versions_page() -> dict[str, Any]:
    """The model versions page's context: stored versions newest first, the serving one and the MARE bar."""
    versions = attribution_selectors.attribution_versions()
    return {"versions": versions.versions, "serving_id": versions.serving_id, "max_mare": versions.max_mare}
