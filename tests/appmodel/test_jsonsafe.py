"""Whatever an analysis computes becomes JSON that PostgreSQL and any JSON reader accept (appmodel.jsonsafe)."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

import numpy as np
import pytest

from appmodel.jsonsafe import json_safe, jsonb_safe, strip_nul

NAN = float("nan")
INF = float("inf")


class Level(enum.IntEnum):
    LOW = 1


class Mode(enum.Enum):
    FAST = "fast"
    RATIO = 1.5


@dataclasses.dataclass
class Point:
    x: float
    tags: tuple[str, ...]


def test_json_scalars_stay_as_they_are() -> None:
    for value in (None, True, False, 0, -3, 10**30, 1.5, "", "text"):
        result = json_safe(value)
        assert result == value
        assert type(result) is type(value)


def test_nan_is_null_whatever_is_asked_for_infinities() -> None:
    assert json_safe(NAN) is None
    assert json_safe(NAN, infinity="null") is None
    assert json_safe(np.float32("nan")) is None


def test_infinities_are_strings_by_default_so_a_stored_finding_keeps_them() -> None:
    assert json_safe(INF) == "inf"
    assert json_safe(-INF) == "-inf"
    assert json_safe(np.float64("-inf")) == "-inf"


def test_infinities_are_null_when_the_caller_asks() -> None:
    assert json_safe(INF, infinity="null") is None
    assert json_safe({"r": [-INF, 1.0]}, infinity="null") == {"r": [None, 1.0]}


def test_numpy_values_become_python_builtins() -> None:
    result = json_safe({"i": np.int64(5), "f": np.float32(2.5), "b": np.bool_(True), "a": np.array([1, 2])})
    assert result == {"i": 5, "f": 2.5, "b": True, "a": [1, 2]}
    assert [type(result[k]) for k in ("i", "f", "b")] == [int, float, bool]


def test_huge_numpy_and_python_numbers_are_kept_exactly() -> None:
    assert json_safe(np.uint64(2**64 - 1)) == 2**64 - 1
    assert json_safe(10**400) == 10**400
    assert json_safe(1e308) == 1e308


def test_enums_become_their_values_and_dataclasses_objects() -> None:
    assert json_safe(Level.LOW) == 1
    assert type(json_safe(Level.LOW)) is int
    assert json_safe(Mode.FAST) == "fast"
    assert json_safe(Mode.RATIO) == 1.5
    assert json_safe(Point(INF, ("a", "b"))) == {"x": "inf", "tags": ["a", "b"]}
    assert json_safe(Point(INF, ()), infinity="null") == {"x": None, "tags": []}


def test_keys_become_strings_and_tuples_sets_and_arrays_lists() -> None:
    assert json_safe({1: "one", None: 2, 2.5: (1, 2)}) == {"1": "one", "None": 2, "2.5": [1, 2]}
    assert json_safe(frozenset({3})) == [3]
    assert json_safe({3}) == [3]


def test_anything_else_becomes_its_text() -> None:
    assert json_safe(b"x") == "b'x'"
    assert json_safe(object)[:7] == "<class "


@pytest.mark.parametrize("infinity", ["string", "null"])
def test_the_result_is_strict_json(infinity: Any) -> None:
    value = {"a": [NAN, INF, -INF, np.float64(1.5)], "b": Point(NAN, ("x",)), "c": {1, 2}}
    json.dumps(json_safe(value, infinity=infinity), allow_nan=False)


def test_jsonb_safe_removes_nul_from_strings_and_keys_at_any_depth() -> None:
    value = {"k\x00ey": ["a\x00b", {"in\x00ner": "\x00"}], "n": INF}
    assert jsonb_safe(value) == {"key": ["ab", {"inner": ""}], "n": "inf"}


def test_jsonb_safe_is_json_safe_otherwise() -> None:
    value = {"i": np.int64(3), "t": (1.0, NAN), 2: Level.LOW}
    assert jsonb_safe(value) == json_safe(value) == {"i": 3, "t": [1.0, None], "2": 1}


def test_strip_nul_returns_clean_text_unchanged() -> None:
    text = "no nul here"
    assert strip_nul(text) is text
    assert strip_nul("a\x00b\x00") == "ab"
