"""The mapreduce-jobhistory backend against a STUB JobHistory Server (tests/jhs_stub.py): no real one can run here.

The stub renders its REST answers from the real .jhist jobs under refdata, read by fetchers.jhist, so the REST
model is checked against the file model of the same jobs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from jhs_stub import JhsStub, real_jobs, tiled_job

from appmodel.mapreduce import MR_TASK_COLUMNS, MapReduceApp, MRPhaseKind, MRTaskStatus
from fetchers.backends import AppRef, BackendError, ParameterError, backend_for
from fetchers.jobhistory import JobHistoryBackend, job_id_for, sample_tasks

# What REST does not carry: a map attempt's mapFinishTime. Hosts are compared by name, not index.
REST_COLUMNS = [name for name, _ in MR_TASK_COLUMNS if name not in ("map_finish_ms", "host")]
JOBS = real_jobs()


@pytest.fixture(scope="module")
def stub() -> Iterator[JhsStub]:
    with JhsStub(JOBS) as server:
        yield server


@pytest.fixture(autouse=True)
def clean(stub: JhsStub) -> Iterator[None]:
    yield
    stub.status, stub.fail, stub.hang, stub.delay_s, stub.jettison = None, {}, {}, 0.0, False
    stub.reset_log()


def backend(stub: JhsStub, **params: Any) -> JobHistoryBackend:
    params.setdefault("retries", 0)
    return JobHistoryBackend(url=stub.url, **params)


def hosts_of(app: MapReduceApp, kind: MRPhaseKind) -> list[str | None]:
    phase = app.maps if kind is MRPhaseKind.MAP else app.reduces
    return [app.hosts[i] if i >= 0 else None for i in phase.tasks.host]


def test_every_real_jhist_job_is_found() -> None:
    assert len(JOBS) == 9
    assert {job.status.value for job in JOBS} == {"SUCCEEDED", "FAILED"}


@pytest.mark.parametrize("job", JOBS, ids=[job.job_id for job in JOBS])
def test_the_rest_model_equals_the_file_model_of_the_same_real_job(stub: JhsStub, job: MapReduceApp) -> None:
    app = backend(stub, task_sample=0).fetch(AppRef(app_id=job.job_id.replace("job_", "application_")))

    for attr in ("job_id", "name", "user", "queue", "status", "submit_ms", "launch_ms", "finish_ms", "uberized"):
        assert getattr(app, attr) == getattr(job, attr), attr
    assert app.diagnostics == job.diagnostics
    assert app.conf == job.conf
    assert app.counters == job.counters
    assert (app.am_attempts, app.am_host) == (job.am_attempts, job.am_host)
    assert not app.sampled
    assert app.task_sample_limit is None
    for rest, file in zip(app.phases, job.phases, strict=True):
        assert (rest.kind, rest.total_tasks, len(rest.tasks)) == (file.kind, file.total_tasks, len(file.tasks))
        if file.reported_finished is not None:
            assert rest.reported_finished == file.reported_finished
        for name in REST_COLUMNS:
            assert np.array_equal(getattr(rest.tasks, name), getattr(file.tasks, name)), f"{rest.kind} {name}"
        assert hosts_of(app, rest.kind) == hosts_of(job, file.kind)
        assert rest.tasks.failure_reasons == file.tasks.failure_reasons
    assert not app.partial


def test_the_key_counters_of_a_real_job_come_through_per_task(stub: JhsStub) -> None:
    (sleep,) = (job for job in JOBS if job.job_id == "job_1329348432655_0001")
    app = backend(stub).fetch_job(sleep.job_id)

    assert app.maps.tasks.cpu_ms.sum() == sleep.maps.tasks.cpu_ms.sum() > 0
    assert app.maps.tasks.gc_time_ms.sum() == sleep.maps.tasks.gc_time_ms.sum() > 0
    assert app.reduces.tasks.reduce_shuffle_bytes.sum() == sleep.reduces.tasks.reduce_shuffle_bytes.sum()
    assert app.counter("org.apache.hadoop.mapreduce.TaskCounter", "CPU_MILLISECONDS") > 0


def test_zero_padded_ids_are_asked_for_and_an_application_id_maps_to_its_job(stub: JhsStub) -> None:
    backend(stub).fetch(AppRef(app_id="application_1329348432655_0001"))

    assert "/ws/v1/history/mapreduce/jobs/job_1329348432655_0001" in stub.requests
    assert "/ws/v1/history/mapreduce/jobs/job_1329348432655_0001/tasks/task_1329348432655_0001_m_000007/counters" in (
        stub.requests
    )
    assert job_id_for("job_1_0002") == "job_1_0002"
    with pytest.raises(BackendError) as error:
        job_id_for("container_1_0001_01_000001")
    assert error.value.permanent


def test_jettisons_empty_and_one_element_lists_give_the_same_model(stub: JhsStub) -> None:
    (job,) = (job for job in JOBS if job.job_id == "job_1526555215992_0001")  # one map, one reduce
    plain = backend(stub).fetch_job(job.job_id)
    stub.jettison = True
    quirky = backend(stub).fetch_job(job.job_id)

    assert quirky.counters == plain.counters
    assert quirky.conf == plain.conf
    for name in REST_COLUMNS:
        assert np.array_equal(getattr(quirky.maps.tasks, name), getattr(plain.maps.tasks, name))
    assert len(quirky.reduces.tasks) == 1


# Sampling


@pytest.fixture(scope="module")
def big_stub() -> Iterator[tuple[JhsStub, MapReduceApp]]:
    (sleep,) = (job for job in JOBS if job.job_id == "job_1329348432655_0001")
    large = tiled_job(sleep, maps=600, reduces=40, failed_every=50)
    with JhsStub([large]) as server:
        yield server, large


def test_a_sample_keeps_its_size_and_every_failed_task_and_is_recorded(
    big_stub: tuple[JhsStub, MapReduceApp],
) -> None:
    server, large = big_stub
    app = JobHistoryBackend(url=server.url, task_sample=100).fetch_job(large.job_id)

    failed = int(np.count_nonzero(large.maps.tasks.status == MRTaskStatus.FAILED))
    assert failed == 12
    assert len(app.maps.tasks) == 100
    assert app.maps.sampled
    assert app.maps.total_tasks == 600
    assert app.maps.num_failed == failed
    assert len(app.maps.tasks.failure_reasons) == failed
    assert len(app.reduces.tasks) == 40
    assert not app.reduces.sampled
    assert app.task_sample_limit == 100
    assert app.sampled
    assert np.all(np.diff(app.maps.tasks.index) > 0)  # rows in task order
    task_requests = {path.split("/tasks/")[1].split("/")[0] for path in server.requests if "/tasks/" in path}
    assert len(task_requests) == 140  # only the sampled tasks were asked for


def test_the_same_job_gives_the_same_sample_whatever_the_listing_order(
    big_stub: tuple[JhsStub, MapReduceApp],
) -> None:
    server, large = big_stub
    first = JobHistoryBackend(url=server.url, task_sample=50).fetch_job(large.job_id)
    second = JobHistoryBackend(url=server.url, task_sample=50).fetch_job(large.job_id)
    assert np.array_equal(first.maps.tasks.index, second.maps.tasks.index)

    tasks = [{"id": f"task_1_0001_m_{i:06d}", "state": "SUCCEEDED"} for i in range(300)]
    forward = sample_tasks(tasks, 30, "job_1_0001/map")
    backward = sample_tasks(list(reversed(tasks)), 30, "job_1_0001/map")
    assert sorted(t["id"] for t in forward) == sorted(t["id"] for t in backward)
    other_job = sample_tasks(tasks, 30, "job_1_0002/map")
    assert sorted(t["id"] for t in other_job) != sorted(t["id"] for t in forward)


def test_more_failed_tasks_than_the_sample_are_all_kept() -> None:
    tasks = [{"id": f"t_{i:06d}", "state": "FAILED" if i % 2 else "SUCCEEDED"} for i in range(100)]
    chosen = sample_tasks(tasks, 10, "seed")
    assert len(chosen) == 50
    assert all(task["state"] == "FAILED" for task in chosen)


def test_sampling_off_fetches_every_task(big_stub: tuple[JhsStub, MapReduceApp]) -> None:
    server, large = big_stub
    app = JobHistoryBackend(url=server.url, task_sample=0, max_concurrency=8).fetch_job(large.job_id)
    assert (len(app.maps.tasks), len(app.reduces.tasks)) == (600, 40)
    assert not app.sampled
    assert app.task_sample_limit is None
    assert np.array_equal(app.maps.tasks.status, large.maps.tasks.status)


# Concurrency


@pytest.mark.parametrize("bound", [1, 3])
def test_requests_in_flight_never_exceed_the_bound(big_stub: tuple[JhsStub, MapReduceApp], bound: int) -> None:
    server, large = big_stub
    server.reset_log()
    server.delay_s = 0.02  # long enough for requests to overlap whenever the client lets them
    try:
        JobHistoryBackend(url=server.url, task_sample=30, max_concurrency=bound).fetch_job(large.job_id)
    finally:
        server.delay_s = 0.0
    assert server.max_in_flight == bound  # reached, never passed


def test_the_concurrency_bound_is_validated() -> None:
    with pytest.raises(ParameterError, match="max_concurrency"):
        JobHistoryBackend(url="http://jhs:19888", max_concurrency=0)
    with pytest.raises(ParameterError, match="task_sample"):
        JobHistoryBackend(url="http://jhs:19888", task_sample=-1)


# Errors


def test_a_job_the_server_does_not_know_is_a_permanent_error(stub: JhsStub) -> None:
    with pytest.raises(BackendError) as error:
        backend(stub).fetch(AppRef(app_id="application_1329348432655_9999"))
    assert error.value.permanent
    assert error.value.status == 404
    assert "job_1329348432655_9999" in str(error.value)


def test_a_server_that_times_out_is_a_transient_error(stub: JhsStub) -> None:
    stub.hang = {"/tasks/": 2.0}
    with pytest.raises(BackendError) as error:
        backend(stub, timeout_s=0.3).fetch_job("job_1329348432655_0001")
    assert not error.value.permanent
    assert "timed out" in str(error.value)


def test_a_server_answering_500_is_a_transient_error_with_its_status(stub: JhsStub) -> None:
    stub.status = 500
    with pytest.raises(BackendError) as error:
        backend(stub).fetch_job("job_1329348432655_0001")
    assert not error.value.permanent
    assert error.value.status == 500


def test_missing_counters_and_conf_are_warnings_and_the_tasks_still_come(stub: JhsStub) -> None:
    stub.fail = {"/counters": 404, "/conf": 404}
    app = backend(stub).fetch_job("job_1329348432655_0001")

    assert app.counters == {}
    assert app.conf == {}
    assert len(app.maps.tasks) == 10
    assert not app.maps.tasks.has_counters.any()
    assert any(w.startswith("job counters not fetched") for w in app.warnings)
    assert any(w.startswith("job configuration not fetched") for w in app.warnings)
    assert any("task request(s) failed" in w for w in app.warnings)


def test_odd_json_becomes_warnings_never_a_crash(stub: JhsStub, monkeypatch: pytest.MonkeyPatch) -> None:
    original = stub.answer

    def odd(path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        status, body = original(path, query)
        if path.endswith("/counters") and "/tasks/" not in path:
            return 200, {"jobCounters": {"counterGroup": [{"counterGroupName": 7, "counter": "x"}, None]}}
        if path.endswith("/tasks"):
            body["tasks"]["task"].append({"id": None, "type": "MAP"})
            body["tasks"]["task"][0]["startTime"] = "not a time"
        if path.endswith("/conf"):
            return 200, ["not", "an", "object"]
        return status, body

    monkeypatch.setattr(stub, "answer", odd)
    app = backend(stub).fetch_job("job_1329348432655_0001")

    assert app.counters == {}
    assert len(app.maps.tasks) == 10
    assert app.maps.tasks.task_start_ms[0] == 0
    assert any("without an id" in w for w in app.warnings)
    assert any("returned no properties" in w for w in app.warnings)


def test_a_job_answer_that_is_not_json_is_permanent(stub: JhsStub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stub, "answer", lambda path, query: (200, {"unexpected": True}))
    with pytest.raises(BackendError) as error:
        backend(stub).fetch_job("job_1329348432655_0001")
    assert error.value.permanent


def test_a_job_still_running_is_incomplete_and_partial(stub: JhsStub, monkeypatch: pytest.MonkeyPatch) -> None:
    original = stub.answer

    def running(path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        status, body = original(path, query)
        if path.endswith("job_1329348432655_0001"):
            body["job"]["state"] = "RUNNING"
        return status, body

    monkeypatch.setattr(stub, "answer", running)
    app = backend(stub).fetch_job("job_1329348432655_0001")
    assert app.status.value == "INCOMPLETE"
    assert app.partial


def test_conf_secrets_from_rest_are_redacted(stub: JhsStub, monkeypatch: pytest.MonkeyPatch) -> None:
    original = stub.answer

    def with_secret(path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        status, body = original(path, query)
        if path.endswith("/conf"):
            body["conf"]["property"] += [
                {"name": "fs.s3a.secret.key", "value": "hunter2"},
                {"name": "my.db.url", "value": "jdbc:x://u:pw@db/${fs.s3a.secret.key}"},
                {"name": "team.internal.credential", "value": "abc"},
            ]
        return status, body

    monkeypatch.setattr(stub, "answer", with_secret)
    app = backend(stub, redaction_patterns=["credential"]).fetch_job("job_1329348432655_0001")
    assert "hunter2" not in str(app.conf)
    assert "abc" not in str(app.conf.get("team.internal.credential"))


# Registration and listing


def test_the_backend_is_registered_with_its_parameters(stub: JhsStub) -> None:
    configured = backend_for("mapreduce-jobhistory", url=stub.url + "/ws/v1/history/", password="s3cret")
    assert isinstance(configured, JobHistoryBackend)
    assert configured.url == stub.url
    assert configured.task_sample == 1000
    assert configured.max_concurrency == 4
    assert "s3cret" not in str(configured.describe())


def test_listing_gives_the_jobs_finished_in_the_window(stub: JhsStub) -> None:
    sleep = next(job for job in JOBS if job.job_id == "job_1329348432655_0001")
    assert sleep.finish_ms is not None
    refs = backend(stub).list_finished(sleep.finish_ms, sleep.finish_ms + 1)
    assert [ref.app_id for ref in refs] == [sleep.job_id]
    assert refs[0].user == sleep.user
    assert refs[0].finished_ms == sleep.finish_ms
