"""Job types, scheduler linkage and template keys (analysis/jobinfo.py), driven by jobinfo_cases.yaml, then over
real Spark event logs and MapReduce job confs from the reference data."""

from __future__ import annotations

import unicodedata
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from analysis import jobinfo
from analysis.jobinfo import FIELDS, JobInfo, JobInfoConfigError, job_info, load_jobinfo_config, spark_conf
from fetchers import spark_eventlog

CASES = yaml.safe_load(Path(__file__).with_name("jobinfo_cases.yaml").read_text(encoding="utf-8"))
DEFAULTS: dict[str, str] = CASES["defaults"]


def build_value(spec: Any) -> Any:
    """A conf value or app name from the cases file: text, null, or {prefix, repeat, times, suffix}."""
    if isinstance(spec, dict):
        return f"{spec.get('prefix', '')}{spec['repeat'] * spec['times']}{spec.get('suffix', '')}"
    return spec if spec is None else str(spec)


def run(app: Mapping[str, Any], config: jobinfo.JobInfoConfig) -> JobInfo:
    conf = {str(key): build_value(value) for key, value in (app.get("conf") or {}).items()}
    return job_info(
        conf,
        app_name=build_value(app.get("app_name", DEFAULTS["app_name"])),
        user=str(app.get("user", DEFAULTS["user"])),
        app_type=str(app.get("app_type", DEFAULTS["app_type"])),
        config=config,
    )


def assert_safe(info: JobInfo, config: jobinfo.JobInfoConfig) -> None:
    """What every JobInfo guarantees, whatever the input: bounded, printable, links only to http(s)."""
    for name in FIELDS:
        value = getattr(info, name)
        assert all(not unicodedata.category(ch).startswith("C") for ch in value), name
        limit = jobinfo.MAX_URL_CHARS if name in jobinfo.URL_FIELDS else jobinfo.MAX_ID_CHARS
        assert len(value) <= limit, name
        if name in jobinfo.URL_FIELDS and value:
            parts = urllib.parse.urlsplit(value)
            assert parts.scheme in ("http", "https"), value
            assert parts.hostname, value
            assert "@" not in parts.netloc, value
    assert 0 < len(info.template) <= config.template_max_length
    assert info.template.isprintable()
    if info.scheduler is None:
        assert all(getattr(info, name) == "" for name in FIELDS), "an ad hoc app has no ids"


@pytest.fixture(scope="module")
def default_config() -> jobinfo.JobInfoConfig:
    return load_jobinfo_config(None)


@pytest.mark.parametrize("case", CASES["cases"], ids=[case["name"] for case in CASES["cases"]])
def test_job_info_case(case: dict[str, Any], default_config: jobinfo.JobInfoConfig) -> None:
    config = load_jobinfo_config(case["config"]) if "config" in case else default_config
    info = run(case, config)

    assert {name: getattr(info, name) for name in case["expect"]} == case["expect"]
    assert_safe(info, config)


@pytest.mark.parametrize("case", CASES["template_groups"], ids=[case["name"] for case in CASES["template_groups"]])
def test_template_groups(case: dict[str, Any], default_config: jobinfo.JobInfoConfig) -> None:
    config = load_jobinfo_config(case["config"]) if "config" in case else default_config
    keys_per_group = []
    for group in case["groups"]:
        apps = [item if isinstance(item, dict) else {"app_name": item} for item in group]
        keys = {run(app, config).template for app in apps}
        assert len(keys) == 1, f"runs of one job got several keys: {sorted(keys)}"
        keys_per_group.append(keys.pop())

    assert len(set(keys_per_group)) == len(keys_per_group), f"different jobs share a key: {keys_per_group}"


@pytest.mark.parametrize("case", CASES["config_errors"], ids=[case["name"] for case in CASES["config_errors"]])
def test_config_errors_name_the_key(case: dict[str, Any]) -> None:
    with pytest.raises(JobInfoConfigError) as raised:
        load_jobinfo_config(case["config"])

    message = str(raised.value)
    assert message.startswith(f"{case['key']}: "), message
    assert case.get("contains", "") in message


def test_a_user_file_overlays_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "jobinfo.yaml"
    path.write_text("schedulers:\n  oozie:\n    params: {base_url: 'https://oozie.example.com/oozie'}\n")
    config = load_jobinfo_config(path)

    info = job_info(
        {"oozie.job.id": "0000001-1-oozie-oozi-W"}, app_name="x", user="u", app_type="MAPREDUCE", config=config
    )

    assert info.flow_exec_url == "https://oozie.example.com/oozie/?job=0000001-1-oozie-oozi-W"
    assert [spec.name for spec in config.schedulers] == ["azkaban", "oozie", "airflow", "openlineage"]
    assert config.source == str(path)


def test_an_empty_user_file_means_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")

    assert load_jobinfo_config(path) == load_jobinfo_config(None)


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "cannot read"), ("schedulers: [\n", "not valid YAML"), ("- a list\n", "expected a mapping")],
    ids=["missing file", "broken YAML", "not a mapping"],
)
def test_an_unusable_user_file_is_refused_naming_the_file(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "jobinfo.yaml"
    if content is not None:
        path.write_text(content)

    with pytest.raises(JobInfoConfigError, match=expected) as raised:
        load_jobinfo_config(path)
    assert str(raised.value).startswith(str(path))


def test_job_info_is_frozen_and_gives_the_flow_as_a_dict(default_config: jobinfo.JobInfoConfig) -> None:
    info = job_info(
        {"airflow.ctx.dag_id": "d", "airflow.ctx.task_id": "t"},
        app_name="x",
        user="u",
        app_type="SPARK",
        config=default_config,
    )

    with pytest.raises(AttributeError):
        info.scheduler = None  # type: ignore[misc]
    assert info.flow_dict() == {
        "scheduler": "airflow",
        "flow_def_id": "d",
        "flow_def_url": "",
        "flow_exec_id": "",
        "flow_exec_url": "",
        "job_def_id": "d/t",
        "job_def_url": "",
        "job_exec_id": "",
        "job_exec_url": "",
        "job_name": "t",
    }
    assert not info.is_adhoc


def test_java_options_understand_quotes_and_keep_the_last_of_a_repeated_key() -> None:
    options = """-Xmx2g -Da=1 -Db="two words" '-Dc=3 4' -Da=5 -Dflag -D -Dk=v=w"""

    assert jobinfo.java_options(options) == {"a": "5", "b": "two words", "c": "3 4", "flag": "", "k": "v=w"}


# ------------------------------------------------------------------------------------------------ real reference data

SPARK_LOGS = {
    # log (relative to refdata) -> the job type a person reading its driver command would give it
    "spark/spark-events/app-20161116163331-0000": "Spark",  # spark-shell
    "spark/spark-events/local-1642039451826": "Spark",  # spark-shell, empty spark.submit.pyFiles
    "spark/sql-spark-events/local-1596020211915": "Spark",  # a Scala Structured Streaming example
    "spark/legacy-2019/spark-events/application_1536831636016_59384_1": "Spark",  # SparkPi in cluster mode
    "spark/legacy-2019/spark-events/application_1538416563558_0014": "PySpark",  # a .py example on YARN
    "spark-generated/spark-4.1.1/event-logs/local-1795326055348": "PySpark",  # written from pyspark
    "spark-rapids-tools/spark-events-qualification/python_udf_eventlog": "PySpark",  # pyspark-shell
    "spark-rapids-tools/spark-events-qualification/java_udf_eventlog": "PySpark",  # spark-submit job.py
    "spark-rapids-tools/spark-events-qualification/nds_q72_dataproc_2_2.zstd": "PySpark",  # YARN isPython
    "spark-rapids-tools/spark-events-qualification/multiple_attempts/attempt_1_eventlog.zstd": "PySpark",
}


@pytest.fixture(scope="module")
def spark_apps(refdata: Path) -> dict[str, Any]:
    apps = {}
    for relative in [*SPARK_LOGS, "spark-rapids-tools/spark-events-qualification/multiple_attempts"]:
        for outcome in spark_eventlog.read_apps(refdata / relative):
            if outcome.app is not None:
                apps.setdefault(relative, []).append(outcome.app)
    return apps


@pytest.mark.parametrize(("log", "job_type"), SPARK_LOGS.items(), ids=list(SPARK_LOGS))
def test_real_spark_logs_get_the_job_type_of_their_driver_program(
    spark_apps: dict[str, Any], default_config: jobinfo.JobInfoConfig, log: str, job_type: str
) -> None:
    (app,) = spark_apps[log]
    info = job_info(
        spark_conf(app.environment), app_name=app.name, user=app.user, app_type="SPARK", config=default_config
    )

    assert info.job_type == job_type
    assert info.is_adhoc  # none of these was scheduled
    assert info.template.startswith(f"spark:@{app.user}:")
    assert_safe(info, default_config)


def test_the_attempts_of_one_real_app_share_a_template_key(
    spark_apps: dict[str, Any], default_config: jobinfo.JobInfoConfig
) -> None:
    apps = spark_apps["spark-rapids-tools/spark-events-qualification/multiple_attempts"]
    infos = [
        job_info(spark_conf(app.environment), app_name=app.name, user=app.user, app_type="SPARK", config=default_config)
        for app in apps
    ]

    assert len(apps) == 4
    assert {info.template for info in infos} == {"spark:@hadoop:ProcessLargeDataset"}


def read_hadoop_conf(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    return {p.findtext("name", ""): p.findtext("value", "") for p in root.iter("property")}


def test_real_mapreduce_job_confs_are_ad_hoc_hadoop_java_jobs_grouped_by_name(
    refdata: Path, default_config: jobinfo.JobInfoConfig
) -> None:
    confs = sorted((refdata / "hadoop" / "jhist").rglob("*_conf.xml"))
    infos = {}
    for path in confs:
        conf = read_hadoop_conf(path)
        infos[path.name] = job_info(
            conf,
            app_name=conf.get("mapreduce.job.name", ""),
            user=conf.get("mapreduce.job.user.name", ""),
            app_type="MAPREDUCE",
            config=default_config,
        )

    assert len(infos) == 4
    assert {info.job_type for info in infos.values()} == {"HadoopJava"}
    assert all(info.is_adhoc for info in infos.values())
    monte_carlo = {info.template for name, info in infos.items() if name.startswith("job_1526555215992")}
    users = {read_hadoop_conf(path)["mapreduce.job.user.name"] for path in confs if path.name in infos}
    assert len(monte_carlo) == 1  # three runs of one job, one key
    assert monte_carlo <= {f"mapreduce:@{user}:QuasiMonteCarlo" for user in users}


def test_dr_elephants_sample_job_conf_links_to_azkaban(refdata: Path, default_config: jobinfo.JobInfoConfig) -> None:
    text = (refdata / "hadoop" / "dr-elephant-mrdata" / "sampleJobConf.properties").read_text()
    conf = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    info = job_info(conf, app_name="overwriter-reminder2", user="u", app_type="MAPREDUCE", config=default_config)

    assert info.scheduler == "azkaban"
    assert info.flow_exec_id == conf["azkaban.link.execution.url"]
    assert info.job_exec_url == conf["azkaban.link.attempt.url"]
    assert info.job_name == "overwriter-reminder2"
    assert info.template == f"mapreduce:azkaban:{conf['azkaban.link.job.url']}"
