"""A MapReduce job's report speaks of its job configuration and phases, not of Spark properties or executors."""

from __future__ import annotations

import pytest
from django.test import Client
from factories import make_app

pytestmark = pytest.mark.django_db


def test_a_mapreduce_report_shows_its_job_configuration_and_no_executor_section(client: Client) -> None:
    job = make_app(
        app_type="MAPREDUCE",
        app_id="job_1700000000000_0042",
        job_type="Pig",
        spark_properties={"mapreduce.map.memory.mb": "4096"},
    )

    page = client.get(f"/apps/{job.pk}/").content.decode()

    assert "Job configuration" in page
    assert "mapreduce.map.memory.mb" in page
    assert "Spark properties" not in page
    assert 'id="executors"' not in page


def test_a_spark_report_keeps_its_spark_properties_and_executors(client: Client) -> None:
    app = make_app(spark_properties={"spark.executor.memory": "4g"})

    page = client.get(f"/apps/{app.pk}/").content.decode()

    assert "Spark properties" in page
    assert 'id="executors"' in page
