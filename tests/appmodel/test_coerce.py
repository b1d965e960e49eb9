"""Untrusted JSON values become the type a reader needs or its default, never an exception (appmodel.coerce)."""

from __future__ import annotations

from typing import Any

import pytest

from appmodel.coerce import (
    INT64_MAX,
    INT64_MIN,
    as_dict,
    as_float,
    as_int,
    as_list,
    as_str,
    as_text,
    is_number,
    opt_finite,
    opt_float,
    opt_int,
    opt_str,
)

NAN = float("nan")
INF = float("inf")


def test_a_json_boolean_is_never_a_number() -> None:
    for value in (True, False):
        assert not is_number(value)
        assert opt_float(value) is None
        assert as_float(value, -1.0) == -1.0
        assert opt_int(value) is None
        assert opt_int(value, strings=True, int64=True) is None
        assert as_int(value, 7) == 7
        assert opt_finite(value) is None


@pytest.mark.parametrize("value", [None, "", "12", [], {}, b"1"])
def test_what_is_not_a_json_number_is_none_or_the_default(value: Any) -> None:
    assert not is_number(value)
    assert opt_float(value) is None
    assert as_float(value) == 0.0
    assert as_float(value, 2.5) == 2.5


def test_ints_and_floats_are_numbers_nan_and_infinities_too_for_the_plain_readers() -> None:
    assert opt_float(3) == 3.0
    assert isinstance(opt_float(3), float)
    assert opt_float(INF) == INF
    assert opt_float(NAN) != opt_float(NAN)  # NaN stays NaN: the caller decides what it means


@pytest.mark.parametrize(
    ("value", "expected"), [(3, 3), (-7, -7), (3.0, 3), (-0.0, 0), (10**30, 10**30), (1e300, int(1e300))]
)
def test_an_int_or_a_whole_float_is_an_int(value: Any, expected: int) -> None:
    number = opt_int(value)
    assert type(number) is int
    assert number == expected


@pytest.mark.parametrize("value", [3.5, NAN, INF, -INF, None, [], {}, "12"])
def test_a_fraction_nan_an_infinity_or_a_string_is_no_int_by_default(value: Any) -> None:
    assert opt_int(value) is None
    assert as_int(value) == 0
    assert as_int(value, -1) == -1


@pytest.mark.parametrize(("text", "expected"), [("12", 12), (" -7 ", -7), ("+5", 5), ("1_000", 1000)])
def test_a_string_holding_an_integer_counts_only_when_strings_are_asked_for(text: str, expected: int) -> None:
    assert opt_int(text) is None
    assert opt_int(text, strings=True) == expected
    assert as_int(text, 0, strings=True) == expected


@pytest.mark.parametrize("text", ["", " ", "1.5", "1e3", "12ms", "inf", "nan", "0x10"])
def test_a_string_that_is_not_a_whole_number_is_none_even_with_strings(text: str) -> None:
    assert opt_int(text, strings=True) is None


def test_int64_keeps_the_64_bit_range_and_nothing_beyond() -> None:
    assert opt_int(INT64_MAX, int64=True) == INT64_MAX
    assert opt_int(INT64_MIN, int64=True) == INT64_MIN
    assert opt_int(INT64_MAX + 1, int64=True) is None
    assert opt_int(INT64_MIN - 1, int64=True) is None
    assert opt_int(float(2**63), int64=True) is None  # the float nearest INT64_MAX is 2**63, outside
    assert opt_int(-float(2**63), int64=True) == INT64_MIN
    assert opt_int(1e300, int64=True) is None
    assert opt_int(str(INT64_MAX + 1), strings=True, int64=True) is None
    assert as_int(10**30, 5, int64=True) == 5
    assert opt_int(10**30) == 10**30  # no range without int64


@pytest.mark.parametrize(
    ("value", "expected"),
    [(12, 12.0), (2.5, 2.5), ("12.5", 12.5), (" 1e3 ", 1000.0), ("-0", -0.0), (10**30, 1e30)],
)
def test_a_finite_number_or_numeric_string_is_a_finite_float(value: Any, expected: float) -> None:
    assert opt_finite(value) == expected


@pytest.mark.parametrize("value", [None, True, NAN, INF, -INF, "nan", "inf", "1e400", "12 ms", "", [], {}, object()])
def test_nan_infinities_bools_and_non_numbers_are_no_finite_number(value: Any) -> None:
    assert opt_finite(value) is None


def test_an_int_too_large_for_a_float_is_no_finite_number_and_no_error() -> None:
    assert opt_finite(10**400) is None


def test_objects_and_arrays_are_kept_and_anything_else_is_empty() -> None:
    obj, arr = {"a": 1}, [1, 2]
    assert as_dict(obj) is obj
    assert as_list(arr) is arr
    for value in (None, "x", 1, True, [], ()):
        assert as_dict(value) == {}
    for value in (None, "x", 1, True, {}, (1, 2)):
        assert as_list(value) == []


def test_strings_are_kept_and_anything_else_is_the_default_or_none() -> None:
    assert as_str("x") == "x"
    assert as_str("") == ""
    assert opt_str("") == ""
    for value in (None, 1, 1.5, True, [], {}):
        assert as_str(value) == ""
        assert as_str(value, "?") == "?"
        assert opt_str(value) is None


def test_text_of_a_value_stringifies_everything_but_none() -> None:
    assert as_text("x") == "x"
    assert as_text(None) == ""
    assert as_text(None, "UnknownReason") == "UnknownReason"
    assert as_text(12) == "12"
    assert as_text(1.5) == "1.5"
    assert as_text(True) == "True"
    assert as_text(NAN) == "nan"
    assert as_text([1, "a"]) == "[1, 'a']"
