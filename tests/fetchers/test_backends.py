"""Declared backend parameters are validated the same way wherever a source is configured."""

from __future__ import annotations

from typing import Any

import pytest

from fetchers.backends import BACKENDS, Backend, Parameter, ParameterError, backend_for, register


class Example(Backend):
    name = "example-test"
    label = "Example"
    parameters = (
        Parameter("url", str, "Where", required=True),
        Parameter("retries", int, "How often", default=3),
        Parameter("timeout_s", float, "How long"),
        Parameter("verify", bool, "Check TLS", default=True),
        Parameter("queues", list, "Which queues"),
        Parameter("password", str, "Secret", sensitive=True),
    )


def test_defaults_fill_absent_parameters_and_values_are_typed() -> None:
    backend = Example(url="http://hs", retries="5", timeout_s="2.5")

    assert backend.params == {
        "url": "http://hs",
        "retries": 5,
        "timeout_s": 2.5,
        "verify": True,
        "queues": None,
        "password": None,
    }


def test_an_unknown_parameter_is_named_in_the_error() -> None:
    with pytest.raises(ParameterError, match=r"unknown parameter.*colour"):
        Example(url="http://hs", colour="red")


def test_a_missing_required_parameter_is_named_in_the_error() -> None:
    with pytest.raises(ParameterError, match=r"example-test\.url: required"):
        Example()


@pytest.mark.parametrize(
    ("name", "value"),
    [("retries", "many"), ("timeout_s", "soon"), ("retries", [1]), ("verify", "perhaps"), ("verify", 2)],
)
def test_a_value_of_the_wrong_type_is_named_in_the_error(name: str, value: Any) -> None:
    with pytest.raises(ParameterError, match=rf"example-test\.{name}: expected"):
        Example(url="http://hs", **{name: value})


@pytest.mark.parametrize(
    ("given", "expected"),
    [("true", True), ("Yes", True), ("1", True), ("false", False), ("NO", False), ("0", False), (False, False)],
)
def test_bool_parameters_accept_the_usual_spellings(given: Any, expected: bool) -> None:
    assert Example(url="http://hs", verify=given).params["verify"] is expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [("a, b,,c ", ["a", "b", "c"]), (["x", " y "], ["x", "y"]), (("q",), ["q"]), ("", [])],
)
def test_list_parameters_accept_comma_separated_text_or_a_list(given: Any, expected: list[str]) -> None:
    assert Example(url="http://hs", queues=given).params["queues"] == expected


def test_a_list_of_non_strings_is_refused() -> None:
    with pytest.raises(ParameterError, match="queues: expected a list of strings"):
        Example(url="http://hs", queues=[1, 2])


def test_describe_masks_sensitive_values_but_shows_the_rest() -> None:
    shown = Example(url="http://hs", password="hunter2").describe()

    assert shown["password"] == "********"
    assert shown["url"] == "http://hs"
    assert "hunter2" not in repr(shown)


def test_describe_shows_an_unset_sensitive_value_as_unset() -> None:
    assert Example(url="http://hs").describe()["password"] is None


def test_a_backend_name_registered_twice_is_an_error() -> None:
    class First(Backend):
        name = "duplicate-test"
        label = "First"

    class Second(Backend):
        name = "duplicate-test"
        label = "Second"

    register(First)
    try:
        with pytest.raises(ValueError, match="registered twice"):
            register(Second)
        assert BACKENDS["duplicate-test"] is First
    finally:
        del BACKENDS["duplicate-test"]


def test_backend_for_builds_a_registered_backend_with_validated_parameters() -> None:
    register(Example)
    try:
        backend = backend_for("example-test", url="http://hs", retries="7")
        assert isinstance(backend, Example)
        assert backend.params["retries"] == 7
    finally:
        del BACKENDS["example-test"]


def test_backend_for_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ParameterError, match="unknown fetcher backend 'nope'"):
        backend_for("nope")


def test_the_history_server_backend_declares_the_shared_http_parameters() -> None:
    from fetchers.http import HTTP_PARAMETERS
    from fetchers.spark_history import SparkHistoryBackend

    assert BACKENDS["spark-history"] is SparkHistoryBackend
    assert set(HTTP_PARAMETERS) <= set(SparkHistoryBackend.parameters)
    assert SparkHistoryBackend(url="http://hs:18080", password="pw").describe()["password"] == "********"


def test_every_built_in_backend_is_found_by_name() -> None:
    from fetchers.backends import BACKENDS, backend_for

    assert backend_for("spark-history", url="http://127.0.0.1:18080").name == "spark-history"
    assert backend_for("yarn-rm", urls=["http://127.0.0.1:8088"]).name == "yarn-rm"
    assert backend_for("eventlog-dir", paths=["/tmp"]).name == "eventlog-dir"
    assert {"spark-history", "yarn-rm", "eventlog-dir"} <= set(BACKENDS)


def test_an_unknown_backend_name_lists_the_known_ones() -> None:
    from fetchers.backends import ParameterError, backend_for

    with pytest.raises(ParameterError, match="known: eventlog-dir, mapreduce-jobhistory, spark-history, yarn-rm"):
        backend_for("nope")
