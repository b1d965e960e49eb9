"""The ``sources`` command: add, list, remove and load clusters; one-line errors, exit 2, secrets never shown."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from analyzer.ingestion.sources import cluster_add
from analyzer.models import AppClaim, ClaimState, Cluster, Source

pytestmark = pytest.mark.django_db

PASSWORD = "pa55-w0rd-from-env"
TOKEN = "t0ken-from-env"


def run(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``manage.py sources``."""
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        call_command("sources", *args, stdout=stdout, stderr=stderr)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture
def secrets_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HS_PASSWORD", PASSWORD)
    monkeypatch.setenv("RM_TOKEN", TOKEN)


def test_add_list_and_remove_a_cluster(tmp_path: Path) -> None:
    code, stdout, _ = run(
        "add",
        "prod",
        "--spark-history",
        "http://history:18080",
        "--resourcemanager",
        "http://rm1:8088",
        "http://rm2:8088",
        "--jobhistory",
        "http://jh:19888",
        "--eventlog-dir",
        str(tmp_path),
    )
    assert code == 0
    assert "prod" in stdout
    assert Source.objects.filter(cluster__name="prod").count() == 3

    code, stdout, _ = run("list")
    assert code == 0
    assert "prod (JobHistory http://jh:19888)" in stdout
    assert "urls=http://rm1:8088,http://rm2:8088" in stdout

    code, _, _ = run("remove", "prod")
    assert code == 0
    assert not Cluster.objects.exists()
    assert not Source.objects.exists()


def test_an_empty_list_says_how_to_add_a_cluster() -> None:
    assert run("list") == (0, "no clusters; add one with: manage.py sources add NAME ...\n", "")
    assert run("list", "--format", "json") == (0, "", "")


def test_repeated_options_add_up() -> None:
    args = ("--resourcemanager", "http://rm1:8088", "--resourcemanager", "http://rm2:8088", "http://rm3:8088")
    assert run("add", "prod", *args)[0] == 0
    assert Source.objects.get().params["urls"] == ["http://rm1:8088", "http://rm2:8088", "http://rm3:8088"]


def test_secrets_come_from_the_environment_and_are_never_listed(secrets_in_env: None) -> None:
    assert run("add", "a", "--spark-history", "http://h:18080", "--auth", "basic", "--username", "u",
               "--password-env", "HS_PASSWORD")[0] == 0  # fmt: skip
    assert run("add", "b", "--resourcemanager", "http://rm:8088", "--auth", "bearer", "--token-env", "RM_TOKEN")[0] == 0
    assert Source.objects.get(cluster__name="a").secrets == {"password": PASSWORD}

    _, text, _ = run("list")
    _, json_lines, _ = run("list", "--format", "json")
    for output in (text, json_lines):
        assert PASSWORD not in output
        assert TOKEN not in output
        assert "********" in output
    listed = [orjson.loads(line) for line in json_lines.splitlines()]
    assert [c["name"] for c in listed] == ["a", "b"]
    assert listed[0]["sources"][0]["params"]["password"] == "********"
    assert listed[0]["sources"][0]["params"]["username"] == "u"


def test_an_unset_secret_variable_is_an_error_naming_the_variable() -> None:
    code, _, stderr = run("add", "a", "--spark-history", "http://h:18080", "--auth", "basic", "--username", "u",
                          "--password-env", "HS_NOT_SET_ANYWHERE")  # fmt: skip
    assert code == 2
    assert stderr.strip() == "hindsight: --password-env: environment variable HS_NOT_SET_ANYWHERE is not set"
    assert not Cluster.objects.exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--spark-history", "ftp://history"), "spark-history.url"),
        (("--resourcemanager", "mailto:rm"), "yarn-rm.urls"),
        (("--spark-history", "http://h:18080", "--auth", "basic"), "username and password are required"),
        (("--spark-history", "http://h:18080", "--ca-bundle", "/no/such/bundle.pem"), "ca_bundle"),
        ((), "at least one"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_problem(args: tuple[str, ...], named: str) -> None:
    code, _, stderr = run("add", "prod", *args)
    assert code == 2
    assert stderr.startswith("hindsight: ")
    assert named in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert not Cluster.objects.exists()


def test_adding_an_existing_name_is_an_error_naming_it() -> None:
    assert run("add", "prod", "--spark-history", "http://h:18080")[0] == 0
    code, _, stderr = run("add", "prod", "--spark-history", "http://h2:18080")
    assert code == 2
    assert "'prod' already exists" in stderr
    assert Source.objects.get().params["url"] == "http://h:18080"


def test_removing_an_unknown_cluster_is_an_error_naming_it() -> None:
    code, _, stderr = run("remove", "nope")
    assert code == 2
    assert "'nope'" in stderr


def test_load_applies_a_file_idempotently_and_prunes_on_request(tmp_path: Path, secrets_in_env: None) -> None:
    assert run("add", "old", "--spark-history", "http://old:18080")[0] == 0
    path = tmp_path / "sources.yaml"
    path.write_text(
        "clusters:\n"
        "  prod:\n"
        "    spark_history: http://history:18080\n"
        "    http: {auth: basic, username: u, password_env: HS_PASSWORD}\n"
    )
    code, stdout, _ = run("load", str(path))
    assert (code, stdout.strip()) == (0, "created: prod")
    code, stdout, _ = run("load", str(path), "--prune")
    assert (code, stdout.strip()) == (0, "unchanged: prod\nremoved: old")
    assert list(Cluster.objects.values_list("name", flat=True)) == ["prod"]
    _, listed, _ = run("list", "--format", "json")
    assert PASSWORD not in listed


def test_load_rejects_an_unknown_key_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "sources.yaml"
    path.write_text("clusters:\n  prod:\n    history: http://history:18080\n")
    code, _, stderr = run("load", str(path))
    assert code == 2
    assert "unknown key(s) history" in stderr
    assert not Cluster.objects.exists()


def test_retry_gives_the_clusters_failed_apps_a_fresh_budget_and_leaves_the_others(tmp_path: Path) -> None:
    cluster = cluster_add("prod", eventlog_dirs=[str(tmp_path)])
    other = cluster_add("other", eventlog_dirs=[str(tmp_path)])
    for app_id, state in [("app-1", ClaimState.FAILED), ("app-2", ClaimState.FAILED), ("app-3", ClaimState.DONE)]:
        AppClaim.objects.create(cluster=cluster, app_id=app_id, state=state, tries=5, last_error="refused")
    AppClaim.objects.create(cluster=other, app_id="app-1", state=ClaimState.FAILED, tries=5)

    code, out, _err = run("retry", "prod", "app-1")
    assert (code, out.strip()) == (0, "1 app(s) of prod to analyze again")
    code, out, _err = run("retry", "prod")
    assert (code, out.strip()) == (0, "1 app(s) of prod to analyze again")

    states = {(c.cluster.name, c.app_id): (c.state, c.tries) for c in AppClaim.objects.select_related("cluster")}
    assert states == {
        ("prod", "app-1"): (ClaimState.RETRY, 0),
        ("prod", "app-2"): (ClaimState.RETRY, 0),
        ("prod", "app-3"): (ClaimState.DONE, 5),
        ("other", "app-1"): (ClaimState.FAILED, 5),
    }
    assert Cluster.objects.count() == 2
    code, _out, err = run("retry", "nowhere")
    assert code == 2
    assert "no cluster named 'nowhere'" in err


def test_add_sets_the_polling_interval_and_safety_margin_and_list_shows_them(tmp_path: Path) -> None:
    code, _out, _err = run(
        "add", "fast", "--eventlog-dir", str(tmp_path), "--poll-interval", "2", "--safety-margin", "5"
    )
    assert code == 0
    assert Source.objects.get(cluster__name="fast").poll_interval_s == 2
    _code, out, _err = run("list")
    assert "every 2 s, margin 5 s" in out
    code, _out, err = run("add", "slow", "--eventlog-dir", str(tmp_path), "--poll-interval", "0")
    assert code == 2
    assert "slow.poll_interval_s" in err


def test_an_hdfs_event_log_directory_gets_its_namenodes_user_and_auth(secrets_in_env: None) -> None:
    code, _out, err = run(
        "add",
        "hdfs",
        "--eventlog-dir",
        "hdfs://nameservice1/spark-history",
        "--webhdfs-url",
        "http://nn1:9870",
        "http://nn2:9870",
        "--hdfs-user",
        "spark",
        "--auth",
        "bearer",
        "--token-env",
        "RM_TOKEN",
    )
    assert code == 0, err
    source = Source.objects.get(cluster__name="hdfs")
    assert source.params["webhdfs_url"] == ["http://nn1:9870", "http://nn2:9870"]
    assert source.params["hdfs_user"] == "spark"
    assert source.secrets == {"token": TOKEN}
    code, _out, err = run("add", "local", "--eventlog-dir", "/tmp", "--hdfs-user", "spark")
    assert code == 2
    assert "apply only to hdfs://" in err


def test_the_history_servers_fetch_mode_is_set_from_the_command_line() -> None:
    code, _out, err = run("add", "restonly", "--spark-history", "http://hs:18080", "--spark-history-fetch-mode", "rest")
    assert code == 0, err
    assert Source.objects.get(cluster__name="restonly").params["fetch_mode"] == "rest"
    code, _out, err = run("add", "nohs", "--eventlog-dir", "/tmp", "--spark-history-fetch-mode", "log")
    assert code == 2
    assert "needs a Spark History Server" in err
