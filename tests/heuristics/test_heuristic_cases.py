"""Runs every heuristic case in tests/heuristics/cases/*.yaml: compact app data in, expected severity out.

A case file names one heuristic and lists cases; each case gives an ``app`` or a ``template`` name plus ``vars``
to substitute, optional ``config`` overrides, and ``expect`` (a severity name),
optionally ``score`` and ``detail`` (text one detail row must contain).

A finding records, under each four-level threshold key it judged, the worst value judged; the severities those
values reach must give the case's severity. A file's ``lesser_of`` lists threshold keys that cap each other (a
stage is as severe as the lesser of the two); a case with ``decided_by_rule: true`` gets its severity from a check
without four levels (a property that is simply wrong), so its recorded values may only reach less. A case's
``not_judged`` lists threshold keys a guard kept from judging anything: they must not be recorded.

The app is built by the builder of the file's app type: ``app_type`` if the file sets it, else the heuristic code's
prefix (``spark.*``: spark_app_builder, ``mapreduce.*``: mapreduce_app_builder).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import mapreduce_app_builder
import pytest
import spark_app_builder
import yaml

from heuristics import Heuristic, HeuristicResult, Severity, Suite, Thresholds, load_suite

CASES_DIR = Path(__file__).with_name("cases")
CASE_KEYS = frozenset(
    {"name", "app", "template", "vars", "config", "expect", "score", "detail", "decided_by_rule", "not_judged"}
)
FILE_KEYS = frozenset({"heuristic", "app_type", "templates", "lesser_of", "cases"})
BUILDERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "spark": spark_app_builder.build_app,
    "mapreduce": mapreduce_app_builder.build_app,
}


def load_cases() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        unknown_keys = set(data) - FILE_KEYS
        assert not unknown_keys, f"{path.name} has unknown keys {sorted(unknown_keys)}"
        app_type = data.get("app_type") or data["heuristic"].split(".")[0]
        assert app_type in BUILDERS, f"{path.name}: no app builder for app type {app_type!r}"
        templates = data.get("templates") or {}
        lesser_of = frozenset(data.get("lesser_of") or ())
        for case in data["cases"]:
            unknown = set(case) - CASE_KEYS
            assert not unknown, f"{path.name}: case {case.get('name')!r} has unknown keys {sorted(unknown)}"
            params.append(
                pytest.param(data["heuristic"], app_type, case, templates, lesser_of, id=f"{path.stem}: {case['name']}")
            )
    return params


@pytest.fixture(scope="module")
def default_suite() -> Suite:
    """The suite of defaults.yaml alone, parsed once for the module: parsing it per case was most of the folder's time.

    Heuristics keep no state between evaluations (only their config), so the cases can share one suite.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
        return load_suite()


def evaluate_case(
    code: str,
    app_type: str,
    case: dict[str, Any],
    templates: dict[str, Any],
    default_suite: Suite,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Heuristic, HeuristicResult]:
    """The case's heuristic and its finding; a case with ``config`` overrides gets its own suite loaded with them.

    Only such a case asks for a ``tmp_path`` (making one for each of the thousand cases took seconds).
    """
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    suite = default_suite
    if case.get("config"):
        user_file = request.getfixturevalue("tmp_path") / "heuristics.yaml"
        user_file.write_text(yaml.safe_dump({code: case["config"]}), encoding="utf-8")
        suite = load_suite(str(user_file))
    heuristic = suite.get(code)
    assert heuristic is not None, f"{code} is not enabled"
    template = templates.get(case.get("template", "default"))
    spec = case["app"] if "app" in case else spark_app_builder.substitute(template, case.get("vars", {}))
    assert app_type in heuristic.app_types, f"{code} does not judge {app_type} apps"
    app = BUILDERS[app_type](spec)
    return heuristic, heuristic.evaluate(app)


@pytest.mark.parametrize(("code", "app_type", "case", "templates", "lesser_of"), load_cases())
def test_heuristic_case_gives_the_expected_severity(
    code: str,
    app_type: str,
    case: dict[str, Any],
    templates: dict[str, Any],
    lesser_of: frozenset[str],
    default_suite: Suite,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, result = evaluate_case(code, app_type, case, templates, default_suite, request, monkeypatch)

    shown = "\n".join(f"{k}: {v}" for k, v in result.details)
    assert result.severity == Severity[case["expect"]], f"got {result.severity.name}; details:\n{shown}"
    if "score" in case:
        assert result.score == case["score"]
    if "detail" in case:
        assert case["detail"] in shown
    assert (result.advice == "") == (result.severity == Severity.NONE)


@pytest.mark.parametrize(("code", "app_type", "case", "templates", "lesser_of"), load_cases())
def test_a_finding_shows_the_values_its_thresholds_judged(
    code: str,
    app_type: str,
    case: dict[str, Any],
    templates: dict[str, Any],
    lesser_of: frozenset[str],
    default_suite: Suite,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    heuristic, result = evaluate_case(code, app_type, case, templates, default_suite, request, monkeypatch)
    four_levels = {
        key: value
        for key in heuristic.config.__struct_fields__
        if isinstance(value := getattr(heuristic.config, key), Thresholds)
    }
    recorded = {key: result.observed[key] for key in four_levels if key in result.observed}
    assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in recorded.values()), recorded
    for key in case.get("not_judged", ()):
        assert key in four_levels, f"{key} is not a four-level threshold of {code}"
        assert key not in result.observed, f"{key} was not judged, yet recorded as {result.observed[key]}"

    reached = {key: four_levels[key].severity_of(float(value)) for key, value in recorded.items()}
    capped = [reached.pop(key) for key in lesser_of if key in reached]
    levels = [*reached.values(), *([min(capped)] if capped else [])]
    assert all(level <= result.severity for level in levels), f"{recorded} reach more than {result.severity.name}"
    if four_levels and result.severity >= Severity.LOW and not case.get("decided_by_rule"):
        assert max(levels, default=Severity.NONE) == result.severity, f"{recorded} do not reach the severity"
