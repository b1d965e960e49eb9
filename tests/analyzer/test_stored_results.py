"""analyzer.stored_results: strict conversion and unknown keys refused on write, defaults and UnreadableResult on
read."""

from __future__ import annotations

from typing import Annotated

import msgspec
import pytest

from analyzer.stored_results import ResultShapeError, UnreadableResult, decode, typed, validated


class Leaf(msgspec.Struct, frozen=True):
    n: int
    note: str = ""


class Tree(msgspec.Struct, frozen=True):
    leaves: list[Leaf]
    by_name: dict[str, Leaf]
    values: list[float]
    first: Leaf | None = None


def test_validated_hands_the_data_back_unchanged_so_what_is_stored_is_what_the_library_made() -> None:
    data = {"leaves": [{"n": 1}], "by_name": {"a": {"n": 2, "note": "x"}}, "values": [1, 2.5]}

    assert validated(data, Tree) is data
    assert typed(data, Tree).values == [1.0, 2.5]


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"leaves": [{"n": 1, "extra": 0}], "by_name": {}, "values": []}, r"\$\.leaves\[0\]\.extra"),
        ({"leaves": [], "by_name": {"a": {"n": 1, "extra": 0}}, "values": []}, r"\$\.by_name\['a'\]\.extra"),
        ({"leaves": [], "by_name": {}, "values": [], "first": {"n": 1, "extra": 0}}, r"\$\.first\.extra"),
        ({"leaves": [], "by_name": {}, "values": [], "extra": 0}, r"\$\.extra"),
    ],
)
def test_a_key_the_schema_does_not_name_is_refused_on_write_with_its_path(data: dict, path: str) -> None:
    with pytest.raises(ResultShapeError, match=path + " not in the schema"):
        validated(data, Tree)


def test_a_number_given_as_a_string_or_a_boolean_is_refused_on_write() -> None:
    with pytest.raises(ResultShapeError, match=r"\$\.leaves\[0\]\.n"):
        validated({"leaves": [{"n": "1"}], "by_name": {}, "values": []}, Tree)
    with pytest.raises(ResultShapeError, match=r"\$\.values\[0\]"):
        validated({"leaves": [], "by_name": {}, "values": [True]}, Tree)


def test_on_read_missing_defaulted_keys_take_their_defaults_and_unknown_keys_are_ignored() -> None:
    tree = decode({"leaves": [{"n": 1, "newer": 2}], "by_name": {}, "values": []}, Tree, what="tree")

    assert tree.leaves == [Leaf(1, "")]
    assert tree.first is None


def test_a_stored_value_that_does_not_decode_is_logged_and_raised_as_unreadable(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(UnreadableResult) as raised:
        decode({"leaves": "none"}, Tree, what="tree", row="row 7")

    assert str(raised.value).startswith("the stored tree cannot be read (Expected `array`")
    assert raised.value.sentence("Compute it again.").endswith("). Compute it again.")
    assert "the stored tree of 'row 7' cannot be read" in caplog.text


class Described(msgspec.Struct, frozen=True):
    leaves: Annotated[list[Leaf], msgspec.Meta(description="described")]
    counts: dict[str, list[int]] = {}


def test_unknown_keys_are_found_below_a_described_field_and_a_dict_of_number_lists_is_kept_as_is() -> None:
    with pytest.raises(ResultShapeError, match=r"\$\.leaves\[0\]\.extra not in the schema"):
        validated({"leaves": [{"n": 1, "extra": 0}]}, Described)
    assert validated({"leaves": [], "counts": {"a": [1, 2]}}, Described)["counts"] == {"a": [1, 2]}
