"""Runs every heuristic case in tests/heuristics/cases/*.yaml: compact app data in, expected severity out.

A case file names one heuristic and lists cases; each case gives an ``app`` (see spark_app_builder) or a
``template`` name plus ``vars`` to substitute, optional ``config`` overrides, and ``expect`` (a severity name),
optionally ``score`` and ``detail`` (text one detail row must contain).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from spark_app_builder import build_app, substitute

from heuristics import Severity, load_suite

CASES_DIR = Path(__file__).with_name("cases")


def load_cases() -> list[Any]:
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        templates = data.get("templates") or {}
        for case in data["cases"]:
            params.append(pytest.param(data["heuristic"], case, templates, id=f"{path.stem}: {case['name']}"))
    return params


@pytest.mark.parametrize(("code", "case", "templates"), load_cases())
def test_heuristic_case_gives_the_expected_severity(
    code: str, case: dict[str, Any], templates: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    user_file = None
    if case.get("config"):
        user_file = tmp_path / "heuristics.yaml"
        user_file.write_text(yaml.safe_dump({code: case["config"]}), encoding="utf-8")
    heuristic = load_suite(str(user_file) if user_file else None).get(code)
    assert heuristic is not None, f"{code} is not enabled"
    template = templates.get(case.get("template", "default"))
    spec = case["app"] if "app" in case else substitute(template, case.get("vars", {}))

    result = heuristic.evaluate(build_app(spec))

    shown = "\n".join(f"{k}: {v}" for k, v in result.details)
    assert result.severity == Severity[case["expect"]], f"got {result.severity.name}; details:\n{shown}"
    if "score" in case:
        assert result.score == case["score"]
    if "detail" in case:
        assert case["detail"] in shown
    assert (result.advice == "") == (result.severity == Severity.NONE)
