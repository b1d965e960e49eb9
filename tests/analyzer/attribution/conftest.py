"""A small seeded history and a model trained on it, shared by the attribution tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

import analyzer.attribution as attr

GENERATOR = Path(__file__).resolve().parents[3] / "benchmarks" / "attribution" / "generate_histories.py"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("attribution_generate_histories", GENERATOR)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def gen() -> ModuleType:
    return _load_generator()


@pytest.fixture(scope="session")
def history_and_test(gen: ModuleType) -> tuple[pd.DataFrame, pd.DataFrame]:
    return gen.generate(60, 40, 7, distractors=True)


@pytest.fixture(scope="session")
def model(history_and_test: tuple[pd.DataFrame, pd.DataFrame]) -> attr.AttributionModel:
    history, _ = history_and_test
    return attr.train(history, params={"n_estimators": 30}, seed=7, n_jobs=1)
