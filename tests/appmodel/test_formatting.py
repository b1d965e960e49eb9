"""Numbers read the same wherever they are shown: in a finding's sentences, on the pages and in the terminal
(appmodel.formatting). The expected texts are what each place printed before the helpers moved here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from appmodel.formatting import (
    MISSING,
    format_bytes,
    format_duration,
    format_percent,
    format_ratio,
    json_text,
    page_bytes,
    page_count,
    page_duration,
    page_duration_s,
    page_gb_hours,
    page_mebibytes,
    page_percent,
    page_setting,
    page_share,
    page_value,
    page_z_score,
    terminal_decimal_size,
    terminal_duration,
    terminal_gb_hours,
)
from appmodel.units import GIB, MIB, TIB

NAN = float("nan")
INF = float("inf")

# ---- sentences -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.00 KiB"), (1.5 * GIB, "1.50 GiB"), (-2 * MIB, "-2.00 MiB"),
     (3 * TIB, "3.00 TiB"), (1 << 60, "1048576.00 TiB"), (np.int64(2048), "2.00 KiB")],
)  # fmt: skip
def test_a_sentence_writes_sizes_with_two_decimals(size: float, text: str) -> None:
    assert format_bytes(size) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0 ms"), (850, "850 ms"), (999.6, "1000 ms"), (-1500, "-1500 ms"), (12_000, "12 s"), (12_500, "12.5 s"),
     (59_990, "60 s"), (60_000, "1 min 0 s"), (192_000, "3 min 12 s"), (7_500_000, "2 h 5 min")],
)  # fmt: skip
def test_a_sentence_writes_durations_dropping_a_whole_seconds_decimal(ms: float, text: str) -> None:
    assert format_duration(ms) == text


def test_a_sentence_writes_ratios_and_percents_without_a_space() -> None:
    assert format_ratio(1.234) == "1.23"
    assert format_ratio(1.234, 1) == "1.2"
    assert format_ratio(INF) == "∞"
    assert format_ratio(-INF) == "∞"
    assert format_percent(0.125) == "12.5%"
    assert format_percent(-0.5) == "-50.0%"
    assert format_percent(12) == "1200.0%"


@pytest.mark.parametrize("formatter", [format_bytes, format_duration, format_ratio, format_percent])
def test_a_sentence_writes_a_missing_value_as_n_a(formatter: Any) -> None:
    assert formatter(None) == "n/a"
    assert formatter(NAN) == "n/a"


# ---- pages -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [(0, "0 ms"), (850, "850 ms"), (-999, "-999 ms"), (12_000, "12.0 s"), (12_500, "12.5 s"), (-1500, "-1.5 s"),
     (60_000, "1 min 0 s"), (192_000, "3 min 12 s"), (7_500_000, "2 h 5 min"), ("1500", "1.5 s")],
)  # fmt: skip
def test_a_page_writes_durations_keeping_the_decimal_so_columns_line_up(ms: Any, text: str) -> None:
    assert page_duration(ms) == text


def test_a_page_writes_seconds_as_it_writes_milliseconds() -> None:
    assert page_duration_s(8) == "8.0 s"
    assert page_duration_s(3725) == "1 h 2 min"
    assert page_duration_s("x") == MISSING


@pytest.mark.parametrize(
    "formatter", [page_duration, page_duration_s, page_gb_hours, page_percent, page_bytes, page_mebibytes, page_count]
)
@pytest.mark.parametrize("missing", [None, True, False, NAN, INF, -INF, "", "lots", "inf", [], {}, 10**400])
def test_a_page_writes_anything_but_a_finite_number_as_a_dash(formatter: Any, missing: Any) -> None:
    assert formatter(missing) == MISSING


def test_a_page_writes_percents_with_a_space_and_shares_only_of_a_whole() -> None:
    assert page_percent(0.125) == "12.5 %"
    assert page_percent("0.5") == "50.0 %"
    assert page_percent(0.125, 0) == "12 %"
    assert page_share(1, 8) == "12.5 %"
    assert page_share(1, 0) == ""
    assert page_share(None, 8) == ""
    assert page_share(1, NAN) == ""


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0 B"), (1023.9, "1023 B"), (1536, "1.5 KiB"), (1.5 * GIB, "1.5 GiB"), (-2 * MIB, "-2.0 MiB"),
     ("2048", "2.0 KiB"), (np.float64(3 * TIB), "3.0 TiB")],
)  # fmt: skip
def test_a_page_writes_sizes_with_one_decimal(value: Any, text: str) -> None:
    assert page_bytes(value) == text


def test_a_page_writes_yarn_megabytes_as_sizes() -> None:
    assert page_mebibytes(1024) == "1.0 GiB"
    assert page_mebibytes(0.5) == "512.0 KiB"


def test_a_page_writes_counts_whole_with_separators_else_three_digits() -> None:
    assert page_count(1234567) == "1,234,567"
    assert page_count(3.0) == "3"
    assert page_count(0.125) == "0.125"
    assert page_count(12345.6) == "1.23e+04"
    assert page_count(10**20) == "100,000,000,000,000,000,000"


def test_a_page_writes_gb_hours_with_three_decimals() -> None:
    assert page_gb_hours(1234.5) == "1,234.500 GB·h"
    assert page_gb_hours(-0.0004) == "-0.000 GB·h"


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, MISSING), ("", MISSING), (True, "yes"), (False, "no"), (1234, "1,234"), (2.0, "2"),
     (12345.678, "12,346"), (0.1234567, "0.1235"), (0.0001234, "1.23e-04"), (INF, "∞"), (-INF, "-∞"), (NAN, "n/a"),
     ("inf", "∞"), ("-inf", "-∞"), ("text", "text"), ([1, 2.5, None], "1, 2.5, —"), ({"a": 1, "b": True}, "a 1, b yes"),
     ({"a": [1]}, '{"a": [1]}'), ([{"é": 1}], '[{"é": 1}]'), (10**30, f"{10**30:,}")],
)  # fmt: skip
def test_a_page_writes_any_stored_json_value_as_one_line(value: Any, text: str) -> None:
    assert page_value(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "yes"), (False, "no"), (3.0, "3"), (0.125, "0.125"), (1234, "1234"), (12345.5, "12345.5"), ("1/8", "1/8"),
     ([2, 4.0, 0.5, 16], "2, 4, 0.5, 16"), ((True, "a"), "yes, a"), ([], ""), ([1, None], "[1, null]"),
     (None, "null"), ({"k": "é"}, '{"k": "é"}')],
)  # fmt: skip
def test_a_help_page_writes_a_setting_as_it_is_typed_without_separators_or_rounding(value: Any, text: str) -> None:
    assert page_setting(value) == text


def test_a_z_score_has_two_decimals_and_a_true_minus_sign() -> None:
    assert page_z_score(1.234) == "1.23"
    assert page_z_score(-0.5) == "\N{MINUS SIGN}0.50"
    assert page_z_score(0.0) == "0.00"
    assert page_z_score(None) == MISSING


def test_json_text_keeps_strings_and_writes_the_rest_as_compact_json() -> None:
    assert json_text("a b") == "a b"
    assert json_text({"k": ["ü", 1.5, None]}) == '{"k": ["ü", 1.5, null]}'
    assert json_text(12) == "12"
    assert json_text(object).startswith("\"<class 'object'>\"")  # what JSON cannot hold is its text


# ---- terminal --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [(None, "unknown"), (0, "0.0 s"), (850, "0.8 s"), (95_000, "95.0 s"), (119_999, "120.0 s"),
     (120_000, "2 min 0 s"), (3_600_000, "1 h 0 min"), (-5000, "-5.0 s")],
)  # fmt: skip
def test_the_terminal_writes_seconds_up_to_two_minutes(ms: int | None, text: str) -> None:
    assert terminal_duration(ms) == text


def test_the_terminal_writes_gb_hours_and_sizes_in_ascii() -> None:
    assert terminal_gb_hours(None) == "unknown"
    assert terminal_gb_hours(1.23456) == "1.235 GB-h"
    assert terminal_decimal_size(340_000) == "340 kB"
    assert terminal_decimal_size(12_345_678) == "12.3 MB"
