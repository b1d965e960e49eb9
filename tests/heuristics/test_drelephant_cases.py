"""Dr. Elephant's own heuristic unit tests, transcribed case by case (tests/heuristics/drelephant/*.yaml), run under
the drelephant severity profile: Hindsight must give Dr. Elephant's severity, or the case names a ``deviation`` (its
reason) and the severity Hindsight gives instead (``hindsight``), and docs/HEURISTICS.md lists it under "Dr.
Elephant profile: deviations".

A case file is a tests/heuristics/cases file (see test_heuristic_cases.py) whose cases may also carry ``deviation``
and ``hindsight``; ``expect`` is always Dr. Elephant's asserted severity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mapreduce_app_builder
import pytest
import spark_app_builder
import yaml

from heuristics import Severity, Suite, load_suite

CASES_DIR = Path(__file__).with_name("drelephant")
DOC = Path(__file__).parents[2] / "docs" / "HEURISTICS.md"
CASE_KEYS = frozenset({"name", "app", "template", "vars", "config", "expect", "hindsight", "deviation"})
BUILDERS = {"spark": spark_app_builder.build_app, "mapreduce": mapreduce_app_builder.build_app}


def load_cases() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        app_type = data.get("app_type") or data["heuristic"].split(".")[0]
        for case in data["cases"]:
            assert not set(case) - CASE_KEYS, f"{path.name}: {case['name']!r} has unknown keys"
            assert ("deviation" in case) == ("hindsight" in case), f"{path.name}: {case['name']!r}"
            params.append(
                pytest.param(data["heuristic"], app_type, case, data.get("templates") or {}, id=case["name"][:90])
            )
    return params


@pytest.fixture(scope="module")
def drelephant_suite() -> Suite:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
        return load_suite(profile="drelephant")


@pytest.mark.parametrize(("code", "app_type", "case", "templates"), load_cases())
def test_dr_elephant_case_agrees_under_the_drelephant_profile_or_is_a_documented_deviation(
    code: str,
    app_type: str,
    case: dict[str, Any],
    templates: dict[str, Any],
    drelephant_suite: Suite,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    suite = drelephant_suite
    if case.get("config"):  # the Dr. Elephant test's own parameters, over the profile's
        user_file = tmp_path / "heuristics.yaml"
        user_file.write_text(yaml.safe_dump({code: case["config"]}), encoding="utf-8")
        suite = load_suite(str(user_file), profile="drelephant")
    heuristic = suite.get(code)
    assert heuristic is not None, f"{code} is not enabled under the drelephant profile"
    template = templates.get(case.get("template", "default"))
    spec = case["app"] if "app" in case else spark_app_builder.substitute(template, case.get("vars", {}))
    result = heuristic.evaluate(BUILDERS[app_type](spec))

    shown = "\n".join(f"{k}: {v}" for k, v in result.details)
    expected = case.get("hindsight", case["expect"])
    assert result.severity == Severity[expected], f"got {result.severity.name}; details:\n{shown}"
    if "deviation" in case:
        assert case["name"] in DOC.read_text(encoding="utf-8"), "a deviation is listed in docs/HEURISTICS.md"
