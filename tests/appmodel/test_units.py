"""Size strings as Spark and Hadoop write them become bytes, and nothing else does (appmodel.units)."""

from __future__ import annotations

import pytest

from appmodel.units import GIB, KIB, MIB, PIB, TIB, parse_hadoop_size, parse_size, parse_size_or_none


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4g", 4 * GIB),
        ("512m", 512 * MIB),
        ("1t", TIB),
        ("100k", 100 * KIB),
        ("2p", 2 * PIB),
        (" 8GB ", 8 * GIB),
        ("8 gb", 8 * GIB),
        ("1.5g", 3 * GIB // 2),
        ("12b", 12),
        ("0", 0),
    ],
)
def test_spark_size_strings_with_a_unit_are_bytes_whatever_the_default(text: str, expected: int) -> None:
    assert parse_size(text, "b") == expected
    assert parse_size(text, "m") == expected


def test_a_bare_number_is_in_the_unit_the_caller_names() -> None:
    assert parse_size("2048", "m") == 2048 * MIB  # spark.executor.memory
    assert parse_size("2048", "b") == 2048  # spark.memory.offHeap.size
    assert parse_size("2048", "k") == 2048 * KIB


def test_the_default_unit_is_a_required_argument() -> None:
    with pytest.raises(TypeError):
        parse_size("2048")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "garbage", ["", " ", "lots", "-5", "-1g", "4 x", "4gib", "g", "1e3", "0x10", "1_000", "4g4", "9" * 400]
)
def test_anything_but_a_spark_size_is_a_value_error(garbage: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(garbage, "m")


def test_an_unknown_default_unit_is_a_value_error_for_a_bare_number_only() -> None:
    with pytest.raises(ValueError, match="unknown size unit"):
        parse_size("12", "q")
    assert parse_size("12m", "q") == 12 * MIB


def test_a_size_too_large_to_be_finite_is_a_value_error_not_an_infinity() -> None:
    with pytest.raises(ValueError, match="finite"):
        parse_size("9" * 400 + "p", "b")


def test_a_huge_finite_size_is_a_whole_number_of_bytes() -> None:
    size = parse_size("99999999999p", "b")
    assert isinstance(size, int)
    assert size == int(99999999999.0 * PIB)


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [("4g", "m", 4 * GIB), ("512", "m", 512 * MIB), ("2GB", "b", 2 * GIB), ("x", "m", None), ("-3", "b", None)],
)
def test_the_optional_variant_reads_alike_and_is_none_for_garbage(text: str, unit: str, expected: int | None) -> None:
    assert parse_size_or_none(text, unit) == expected


def test_the_optional_variant_is_none_for_an_absent_value() -> None:
    assert parse_size_or_none(None, "m") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("134217728", 128 * MIB),
        ("128m", 128 * MIB),
        ("128M", 128 * MIB),
        (" 64 k ", 64 * KIB),
        ("1g", GIB),
        ("2t", 2 * TIB),
        ("1p", PIB),
        ("0", 0),
        ("-1", -1),
        ("-2g", -2 * GIB),
    ],
)
def test_hadoop_sizes_are_whole_numbers_with_one_suffix_and_keep_their_sign(text: str, expected: int) -> None:
    assert parse_hadoop_size(text) == expected


@pytest.mark.parametrize("garbage", ["", "1.5g", "128mb", "lots", "g", "1e3", "12 q"])
def test_anything_but_a_hadoop_size_is_a_value_error(garbage: str) -> None:
    with pytest.raises(ValueError, match="not a Hadoop size"):
        parse_hadoop_size(garbage)


def test_the_multiples_are_binary() -> None:
    assert (KIB, MIB, GIB, TIB, PIB) == (1024, 1024**2, 1024**3, 1024**4, 1024**5)
