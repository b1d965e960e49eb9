"""A small seeded history and a model trained on it, shared by the attribution tests."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest
from script_modules import load_script

import analysis.attribution as attr

GENERATOR = Path(__file__).resolve().parents[3] / "benchmarks" / "attribution" / "generate_histories.py"


@pytest.fixture(scope="session")
def gen() -> ModuleType:
    return load_script(GENERATOR, "attribution_generate_histories")


@pytest.fixture(scope="session")
def history_and_test(gen: ModuleType) -> tuple[pd.DataFrame, pd.DataFrame]:
    return gen.generate(60, 40, 7, distractors=True)


@pytest.fixture(scope="session")
def model(history_and_test: tuple[pd.DataFrame, pd.DataFrame]) -> attr.AttributionModel:
    history, _ = history_and_test
    return attr.train(history, params={"n_estimators": 30}, seed=7, n_jobs=1)
