"""Severity profiles (docs/HEURISTICS.md "Severity profiles"): HINDSIGHT_SEVERITY_PROFILE reaches the suite, the
``profiles:`` overlays apply in their order and are checked, and the rules the drelephant profile restores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import spark_app_builder
import yaml

import heuristics
from heuristics import ConfigError, Severity, load_suite

REPO = Path(__file__).resolve().parents[2]
KRYO = "org.apache.spark.serializer.KryoSerializer"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HINDSIGHT_HEURISTICS_FILE", raising=False)
    monkeypatch.delenv("HINDSIGHT_SEVERITY_PROFILE", raising=False)


def user_file(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "heuristics.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def spill_config(suite: heuristics.Suite) -> dict[str, Any]:
    spill = suite.get("spark.spill")
    assert spill is not None
    return spill.config_as_dict()


def test_the_impact_profile_is_the_default() -> None:
    assert load_suite().profile == "impact"


def test_the_environment_variable_chooses_the_profile_of_every_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_SEVERITY_PROFILE", " DrElephant ")
    assert load_suite().profile == "drelephant"
    assert heuristics.configured_suite().profile == "drelephant"
    assert spill_config(load_suite())["max_stage_processed_tib"] == 3


def test_an_unknown_profile_is_refused_naming_the_variable_and_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_SEVERITY_PROFILE", "strict")
    with pytest.raises(ConfigError, match="HINDSIGHT_SEVERITY_PROFILE: unknown severity profile 'strict'; known"):
        load_suite()
    with pytest.raises(ConfigError, match="unknown severity profile 'nope'"):
        load_suite(profile="nope")


def test_an_unknown_profile_stops_start_up() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env["HINDSIGHT_SEVERITY_PROFILE"] = "strict"
    run = subprocess.run(
        [sys.executable, "-c", "import config.settings.base"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert run.returncode != 0
    assert "HINDSIGHT_SEVERITY_PROFILE: unknown severity profile 'strict'" in run.stderr


def test_the_settings_carry_the_profile() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env["HINDSIGHT_SEVERITY_PROFILE"] = "drelephant"
    code = "import config.settings.base as s; print(s.HINDSIGHT_SEVERITY_PROFILE)"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "drelephant"


def test_overlays_apply_defaults_then_profile_then_user_file_then_its_profile(tmp_path: Path) -> None:
    path = user_file(
        tmp_path,
        {
            "spark.spill": {"min_stage_spill_mib": 64, "max_stage_processed_tib": 5},
            "profiles": {"drelephant": {"spark.spill": {"max_stage_processed_tib": 7}}},
        },
    )
    impact = spill_config(load_suite(path, profile="impact"))
    drelephant = spill_config(load_suite(path, profile="drelephant"))
    assert (impact["min_stage_spill_mib"], impact["max_stage_processed_tib"]) == (64, 5)  # user over defaults
    # the user's plain section wins over the defaults' drelephant overlay (min 0), its own drelephant overlay last
    assert (drelephant["min_stage_spill_mib"], drelephant["max_stage_processed_tib"]) == (64, 7)
    assert spill_config(load_suite(profile="drelephant"))["min_stage_spill_mib"] == 0


def test_a_heuristic_the_profile_disables_can_be_enabled_again(tmp_path: Path) -> None:
    assert load_suite(profile="drelephant").get("spark.small_tasks") is None
    path = user_file(tmp_path, {"spark.small_tasks": {"enabled": True}})
    assert load_suite(path, profile="drelephant").get("spark.small_tasks") is not None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"profiles": {"strict": {}}}, "profiles.strict: unknown severity profile"),
        ({"profiles": ["drelephant"]}, "profiles: expected a mapping"),
        ({"profiles": {"drelephant": {"spark.nope": {}}}}, "profiles.drelephant.spark.nope: unknown heuristic"),
        ({"profiles": {"drelephant": {"custom": []}}}, "profiles.drelephant.custom: unknown heuristic"),
        (
            {"profiles": {"drelephant": {"spark.spill": {"nope": 1}}}},
            "profiles.drelephant.spark.spill.nope: unknown key",
        ),
        ({"profiles": {"drelephant": {"spark.spill": {"max_stage_processed_tib": -1}}}}, "spark.spill.max_stage"),
    ],
)
def test_a_mistake_in_a_profile_overlay_is_named_even_under_another_profile(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    profile = "drelephant" if "-1" in repr(data) else "impact"  # a bad value is only built under its own profile
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        load_suite(user_file(tmp_path, data), profile=profile)


def evaluate(code: str, profile: str, spec: dict[str, Any]) -> Severity:
    heuristic = load_suite(profile=profile).get(code)
    assert heuristic is not None
    return heuristic.evaluate(spark_app_builder.build_app(spec)).severity


BIG_STAGE = {"stages": [{"tasks": {"input_bytes": 3 << 40, "memory_bytes_spilled": 3 << 39}, "n": 1}]}
JUST_UNDER = {"stages": [{"tasks": {"input_bytes": (3 << 40) - 1, "memory_bytes_spilled": 3 << 39}, "n": 1}]}


def test_a_stage_that_processed_3_tib_is_judged_under_impact_and_ignored_under_drelephant() -> None:
    assert evaluate("spark.spill", "impact", BIG_STAGE) == Severity.CRITICAL
    assert evaluate("spark.spill", "drelephant", BIG_STAGE) == Severity.NONE
    assert evaluate("spark.spill", "drelephant", JUST_UNDER) == Severity.CRITICAL


STATIC_NO_SERVICE = {"properties": {"spark.serializer": KRYO}}
JAVA_SERIALIZER = {"properties": {"spark.shuffle.service.enabled": "true"}}


def test_static_allocation_without_the_shuffle_service_is_a_finding_only_under_drelephant() -> None:
    assert evaluate("spark.configuration", "impact", STATIC_NO_SERVICE) == Severity.NONE
    assert evaluate("spark.configuration", "drelephant", STATIC_NO_SERVICE) == Severity.MODERATE


def test_the_java_serializer_is_low_under_impact_and_moderate_under_drelephant() -> None:
    assert evaluate("spark.configuration", "impact", JAVA_SERIALIZER) == Severity.LOW
    assert evaluate("spark.configuration", "drelephant", JAVA_SERIALIZER) == Severity.MODERATE


def test_skew_in_a_short_stage_is_judged_by_default_and_not_under_drelephant() -> None:
    from spark_app_builder import build_app

    app = build_app({"stages": [{"tasks": {"duration_ms": [300, 300, 300, 300, 9000]}}]})
    default = load_suite().get("spark.task_skew")
    drelephant = load_suite(profile="drelephant").get("spark.task_skew")
    assert default is not None
    assert drelephant is not None
    assert default.evaluate(app).severity == heuristics.Severity.CRITICAL
    assert drelephant.evaluate(app).severity == heuristics.Severity.NONE  # Dr. Elephant: longest task 150 s or more


def test_read_skew_alone_is_a_finding_by_default_and_not_under_drelephant() -> None:
    from spark_app_builder import build_app

    # even 60 s tasks, one of which read 10 x the median input: data skew, no time skew
    mib = 1 << 20
    tasks = {"duration_ms": [60000] * 5, "input_bytes": [50 * mib] * 4 + [500 * mib]}
    app = build_app({"stages": [{"duration_ms": 300000, "tasks": tasks}]})
    default = load_suite().get("spark.task_skew")
    drelephant = load_suite(profile="drelephant").get("spark.task_skew")
    assert default is not None
    assert drelephant is not None
    assert default.evaluate(app).severity == heuristics.Severity.SEVERE
    assert drelephant.evaluate(app).severity == heuristics.Severity.NONE  # Dr. Elephant: time skew only
