"""The yarn-rm backend against a STUB ResourceManager (tests/rm_stub.py): no real RM can run here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rm_stub import RmStub, documented, rm_app, rm_stubs

from fetchers.backends import AppRef, BackendError, ParameterError, backend_for
from fetchers.yarn_rm import ResourceManagerBackend, apps_of, rm_app_summary

HOUR_MS = 3_600_000
T0 = 1_700_000_000_000  # the start of the window the tests list


@pytest.fixture
def apps() -> list[dict[str, object]]:
    return [
        rm_app(5, T0 - 1, final_status="SUCCEEDED"),  # just before the window
        rm_app(6, T0, final_status="SUCCEEDED"),  # on its start: inside
        rm_app(7, T0 + 10, final_status="FAILED"),
        rm_app(8, T0 + 20, final_status="KILLED"),
        rm_app(9, T0 + 30, final_status="SUCCEEDED", application_type="MAPREDUCE"),
        rm_app(10, T0 + HOUR_MS, final_status="SUCCEEDED"),  # on its end: outside
    ]


@pytest.fixture
def rm(apps: list[dict[str, object]]) -> Iterator[RmStub]:
    with RmStub(apps) as stub:
        yield stub


def ids(refs: list[AppRef]) -> list[str]:
    return [ref.app_id for ref in refs]


def test_the_backend_is_registered_under_its_name(rm: RmStub) -> None:
    assert isinstance(backend_for("yarn-rm", urls=rm.url), ResourceManagerBackend)


def test_listing_gives_the_succeeded_and_failed_spark_apps_that_finished_in_the_window_oldest_first(
    rm: RmStub,
) -> None:
    refs = ResourceManagerBackend(urls=[rm.url]).list_finished(T0, T0 + HOUR_MS)

    assert ids(refs) == ["application_1326821518301_0006", "application_1326821518301_0007"]
    assert [ref.finished_ms for ref in refs] == [T0, T0 + 10]
    assert [ref.extra["finalStatus"] for ref in refs] == ["SUCCEEDED", "FAILED"]


def test_the_window_is_asked_of_the_rm_with_inclusive_bounds(rm: RmStub) -> None:
    ResourceManagerBackend(urls=[rm.url]).list_finished(T0, T0 + HOUR_MS)

    path, query = rm.requests[-1]
    assert path == "/ws/v1/cluster/apps"
    assert query["finishedTimeBegin"] == [str(T0)]
    assert query["finishedTimeEnd"] == [str(T0 + HOUR_MS - 1)]
    assert query["applicationTypes"] == ["SPARK"]


def test_killed_apps_are_listed_only_when_configured(rm: RmStub) -> None:
    backend = ResourceManagerBackend(urls=[rm.url], final_statuses="SUCCEEDED,FAILED,KILLED")

    refs = backend.list_finished(T0, T0 + HOUR_MS)

    assert "application_1326821518301_0008" in ids(refs)
    assert len(refs) == 3


def test_other_application_types_are_listed_when_configured(rm: RmStub) -> None:
    backend = ResourceManagerBackend(urls=[rm.url], application_types=["spark", "MAPREDUCE"])

    assert "application_1326821518301_0009" in ids(backend.list_finished(T0, T0 + HOUR_MS))


def test_each_ref_carries_the_rm_view_of_the_app(rm: RmStub, apps: list[dict[str, object]]) -> None:
    (ref,) = ResourceManagerBackend(urls=[rm.url]).list_finished(T0 + 10, T0 + 11)
    served = apps[2]

    assert (ref.name, ref.user) == (served["name"], served["user"])
    for key in ("queue", "applicationType", "state", "startedTime", "elapsedTime", "memorySeconds", "vcoreSeconds"):
        assert ref.extra[key] == served[key], key
    assert ref.extra["trackingUrl"] == served["trackingUrl"]
    assert "resourceRequests" not in ref.extra


@pytest.mark.parametrize("empty", [None, "", {}, "absent"], ids=["null", "empty-string", "empty-map", "absent"])
def test_every_jersey_form_of_an_empty_list_gives_no_apps(rm: RmStub, empty: object) -> None:
    if empty == "absent":
        rm.leave_apps_key_out()
    else:
        rm.empty_apps = empty

    assert ResourceManagerBackend(urls=[rm.url]).list_finished(T0 - 10 * HOUR_MS, T0 - 9 * HOUR_MS) == []


@pytest.mark.parametrize("app_list", [None, "", {}, []])
def test_an_empty_app_list_in_any_form_gives_no_apps(app_list: object) -> None:
    assert apps_of({"apps": {"app": app_list}}) == []


def test_a_one_app_list_written_as_a_bare_object_gives_that_app() -> None:
    app = documented("05_")["apps"]["app"][0]

    assert apps_of({"apps": {"app": app}}) == [app]


def test_unknown_keys_are_ignored_and_missing_or_ill_typed_ones_are_none() -> None:
    app = rm_app(11, T0 + 5, resourceSecondsMap={"entry": {"key": "memory-mb", "value": "1"}}, timeouts={})
    for key in ("queue", "memorySeconds", "trackingUrl"):
        del app[key]
    app["vcoreSeconds"] = "not a number"

    with RmStub([app]) as rm:
        (ref,) = ResourceManagerBackend(urls=[rm.url]).list_finished(T0, T0 + HOUR_MS)

    assert ref.app_id == "application_1326821518301_0011"
    assert (ref.extra["queue"], ref.extra["memorySeconds"], ref.extra["vcoreSeconds"]) == (None, None, None)
    assert "resourceSecondsMap" not in ref.extra


def test_apps_without_an_id_or_of_the_wrong_shape_are_skipped_and_the_others_kept() -> None:
    good = rm_app(12, T0 + 5)
    no_id = rm_app(13, T0 + 6)
    del no_id["id"]
    body = {"apps": {"app": [good, no_id, "junk", 42]}}

    with RmStub() as rm:
        rm.apps = [good, no_id]
        refs = ResourceManagerBackend(urls=[rm.url]).list_finished(T0, T0 + HOUR_MS)

    assert ids(refs) == ["application_1326821518301_0012"]
    assert len(apps_of(body)) == 2


def test_the_first_active_rm_is_used_when_the_first_is_standby(apps: list[dict[str, object]]) -> None:
    with rm_stubs("STANDBY", "ACTIVE", apps=apps) as (standby, active):
        backend = ResourceManagerBackend(urls=[standby.url, active.url])

        refs = backend.list_finished(T0, T0 + HOUR_MS)

        assert len(refs) == 2
        assert backend.active_url == active.url
        assert [path for path, _ in standby.requests] == ["/ws/v1/cluster/info"]


def test_the_active_rm_is_remembered_between_listings(apps: list[dict[str, object]]) -> None:
    with rm_stubs("STANDBY", "ACTIVE", apps=apps) as (standby, active):
        backend = ResourceManagerBackend(urls=[standby.url, active.url])
        backend.list_finished(T0, T0 + HOUR_MS)
        backend.list_finished(T0, T0 + HOUR_MS)

        assert len(standby.requests) == 1
        assert [path for path, _ in active.requests].count("/ws/v1/cluster/info") == 1


def test_when_the_active_rm_goes_down_the_other_one_is_found_once_it_is_active(
    apps: list[dict[str, object]],
) -> None:
    with rm_stubs("STANDBY", "ACTIVE", apps=apps) as (first, second):
        backend = ResourceManagerBackend(urls=[first.url, second.url], timeout_s=5, retries=0)
        assert len(backend.list_finished(T0, T0 + HOUR_MS)) == 2

        second.stop()
        first.ha_state = "ACTIVE"
        refs = backend.list_finished(T0, T0 + HOUR_MS)

        assert len(refs) == 2
        assert backend.active_url == first.url


def test_an_rm_that_turned_standby_is_left_for_the_new_active_one(apps: list[dict[str, object]]) -> None:
    with rm_stubs("ACTIVE", "STANDBY", apps=apps) as (first, second):
        backend = ResourceManagerBackend(urls=[first.url, second.url])
        backend.list_finished(T0, T0 + HOUR_MS)

        first.ha_state, second.ha_state = "STANDBY", "ACTIVE"

        assert len(backend.list_finished(T0, T0 + HOUR_MS)) == 2
        assert backend.active_url == second.url


def test_a_non_ha_rm_without_ha_state_counts_as_active(rm: RmStub) -> None:
    rm.ha_state = None

    assert len(ResourceManagerBackend(urls=[rm.url]).list_finished(T0, T0 + HOUR_MS)) == 2


def test_no_active_rm_is_a_retryable_error_naming_each_rm(apps: list[dict[str, object]]) -> None:
    with rm_stubs("STANDBY", "ACTIVE", apps=apps) as (standby, down):
        down.stop()
        backend = ResourceManagerBackend(urls=[standby.url, down.url], timeout_s=5, retries=0)

        with pytest.raises(BackendError, match="no active ResourceManager") as raised:
            backend.list_finished(T0, T0 + HOUR_MS)

    assert not raised.value.permanent
    assert "haState STANDBY" in str(raised.value)
    assert down.url in str(raised.value)


def test_a_server_error_is_retryable_and_says_the_status(rm: RmStub) -> None:
    backend = ResourceManagerBackend(urls=[rm.url], retries=0)  # retrying is tested in test_http_policy
    backend.list_finished(T0, T0 + HOUR_MS)
    rm.status = 500

    with pytest.raises(BackendError, match=r"HTTP 500.*stub failure") as raised:
        backend.list_finished(T0, T0 + HOUR_MS)

    assert not raised.value.permanent


def test_fetch_refuses_and_points_to_the_history_server_or_log_directory(rm: RmStub) -> None:
    backend = ResourceManagerBackend(urls=[rm.url])
    (ref, *_) = backend.list_finished(T0, T0 + HOUR_MS)

    with pytest.raises(BackendError, match="History Server or event-log directory") as raised:
        backend.fetch(ref)

    assert raised.value.permanent


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "urls: required"),
        ({"urls": []}, "at least one"),
        ({"urls": "ftp://rm:8088"}, "not an http"),
        ({"urls": "rm:8088", "final_statuses": "SUCCEEDED,DONE"}, "unknown DONE"),
        ({"urls": "rm:8088", "timeout_s": 0}, "must be positive"),
    ],
)
def test_bad_parameters_are_rejected_with_the_parameter_named(params: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        ResourceManagerBackend(**params)


def test_a_bare_host_and_port_is_read_as_an_http_address() -> None:
    assert ResourceManagerBackend(urls="rm1:8088/, https://rm2:8090").urls == ["http://rm1:8088", "https://rm2:8090"]


def test_the_summary_gives_the_rm_facts_in_their_units(rm: RmStub) -> None:
    served = rm.apps[2]
    (ref,) = ResourceManagerBackend(urls=[rm.url]).list_finished(T0 + 10, T0 + 11)

    summary = rm_app_summary(ref.extra)

    assert summary["queue"] == served["queue"]
    assert summary["final_status"] == "FAILED"
    assert summary["memory_mb_seconds"] == served["memorySeconds"]  # the RM's memorySeconds are MB-seconds
    assert summary["memory_gb_hours"] == pytest.approx(served["memorySeconds"] / 1024 / 3600)
    assert summary["vcore_seconds"] == served["vcoreSeconds"]
    assert (summary["started_ms"], summary["finished_ms"]) == (served["startedTime"], T0 + 10)
    assert summary["elapsed_ms"] == served["elapsedTime"]


def test_the_summary_splits_tags_and_tolerates_a_damaged_view() -> None:
    summary = rm_app_summary({"applicationTags": "team:ads, nightly,,", "memorySeconds": "7", "queue": 3})

    assert summary["tags"] == ["team:ads", "nightly"]
    assert summary["memory_mb_seconds"] == 7
    assert summary["queue"] is None
    assert summary["vcore_seconds"] is None
    assert rm_app_summary({})["memory_gb_hours"] is None
