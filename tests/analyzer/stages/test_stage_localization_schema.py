"""The stage localization's typed JSON (analyzer.stages.schema): checked on write, decoded on read, and a result
that does not decode said so by the history page and the API instead of a crash."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pandas as pd  # type: ignore[import-untyped]
import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from analysis.stages.localize import localize
from analyzer.models import StageLocalization
from analyzer.stages import schema
from analyzer.stages import selectors as stage_selectors
from analyzer.stages.services import localize_template
from analyzer.stored_results import ResultShapeError, typed
from tests.factories import make_recurring_runs, set_stage_hosts
from webui.presenters.stages import localization_views

pytestmark = pytest.mark.django_db

TEMPLATE = "spark:airflow:etl/aggregate"
NAMES = ("csv at NativeMethodAccessorImpl.java:0", "groupByKey at /jobs/etl.py:42", "count at etl.py:57")
HOSTS = ("node-1", "node-2", "node-3", "node-4")


def durations(n: int, *, slow: dict[int, float] | None = None) -> list[list[float]]:
    rng = np.random.default_rng(11)
    rows = []
    for run in range(n):
        size = rng.normal(0, 0.05)
        row = [b * float(np.exp(size + rng.normal(0, 0.025))) for b in (40_000.0, 80_000.0, 100_000.0)]
        row[2] *= (slow or {}).get(run, 1.0)
        rows.append(row)
    return rows


def with_defaults(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` (as stored: JSON) with the keys the service writes only where they apply, at their defaults: a
    finding's ``hosts`` (anomalous stages only) and the result's ``reason`` (only when nothing was localized)."""
    full: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(result))
    full.setdefault("reason", "")
    for category in full["categories"]:
        for finding in category["stages"]:
            finding.setdefault("hosts", [])
    return full


def localized() -> StageLocalization:
    """12 runs, stage 2 slowed 3x in runs 3 and 8, run 3 by one host: every kind of stored finding."""
    runs = make_recurring_runs(TEMPLATE, durations(12, slow={3: 3.0, 8: 3.0}), names=NAMES)
    for i, run in enumerate(runs):
        factor = {3: {"node-2": 4.0}, 8: dict.fromkeys(HOSTS, 3.0)}.get(i, {})
        set_stage_hosts(run, 2, {h: [1_000.0 * factor.get(h, 1.0)] * 3 for h in HOSTS})
    stored = localize_template(TEMPLATE, None)
    assert stored is not None
    return stored


def test_the_result_struct_round_trips_the_librarys_real_output_on_generated_runs() -> None:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        [
            {"template": "t", "signature": "s", "run_id": f"r{i}"}
            | {str(j): 1000.0 * (j + 1) * rng.lognormal(0, 0.1) for j in range(3)}
            for i in range(12)
        ]
    )
    frame.loc[frame["run_id"] == "r4", "2"] *= 4.0
    frame["run_time"] = frame[["0", "1", "2"]].sum(axis=1)
    result = localize(frame).to_dict()
    result["params"]["host_factor"] = 1.5  # what the service adds
    for category in result["categories"]:
        category["stage_names"] = {"0": "a", "1": "b", "2": "c"}
    data = msgspec.json.decode(msgspec.json.encode(result))  # as stored: JSON

    assert msgspec.to_builtins(typed(data, schema.LocalizationResult)) == with_defaults(data)
    assert data["categories"][0]["analysed"]


def test_a_stored_result_decodes_to_exactly_what_was_stored() -> None:
    row = localized()

    stored = stage_selectors.localization_of(row)

    assert msgspec.to_builtins(stored.result) == with_defaults(row.result)
    top = stored.result.categories[0].stages[0]
    assert (top.stage, top.anomalous) == ("2", True)
    assert {h.verdict for h in top.hosts} == {"hosts", "everywhere"}
    assert {run_id: run.pk for run_id, run in stored.runs.items()} == {k: v["pk"] for k, v in row.runs.items()}
    assert all(run.end is not None and run.end.tzinfo is not None for run in stored.runs.values())


def test_a_result_stored_before_host_findings_decodes_without_hosts_and_still_names_the_stage(client: Client) -> None:
    row = localized()
    older: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(row.result))
    del older["params"]["host_factor"]
    for category in older["categories"]:
        for finding in category["stages"]:
            finding.pop("hosts", None)
    StageLocalization.objects.filter(pk=row.pk).update(result=older)

    [view] = localization_views(templates=[TEMPLATE])

    assert view["params"]["host_factor"] == 1.5
    assert view["sentences"][0].startswith("stage 2 (count at etl.py:57) is the outlier in runs ")
    assert "host" not in view["sentences"][0]  # nothing said about hosts: no run has host findings
    html = client.get(reverse("webui:history"), {"template": TEMPLATE}).content.decode()
    assert "count at etl.py:57" in html


@pytest.mark.parametrize(
    "corrupt",
    [
        {"result": {"params": {"alpha": 0.15}, "categories": [], "ranking": []}},
        {"result": []},
        {"runs": {"1": {"pk": "one", "app_id": "a", "attempt_id": "", "end": None}}},
        {"runs": {"1": {"pk": 1, "app_id": "a", "attempt_id": "", "end": "yesterday"}}},
    ],
)
def test_a_result_that_does_not_decode_is_logged_and_the_page_and_api_say_to_compute_it_again(
    corrupt: dict[str, Any], client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    row = localized()
    StageLocalization.objects.filter(pk=row.pk).update(**corrupt)

    page = client.get(reverse("webui:history"), {"template": TEMPLATE})
    answer = APIClient().get("/api/v1/stage-anomalies", {"template": TEMPLATE})

    assert page.status_code == 200
    assert "Not analysed: the stored stage localization cannot be read (" in page.content.decode()
    assert f"manage.py localize_stages --template {TEMPLATE}" in page.content.decode()
    assert answer.status_code == 200
    [loc] = answer.json()["localizations"]
    assert loc["reason"].startswith("the stored stage localization cannot be read (")
    assert (loc["categories"], loc["sentences"], loc["params"]) == ([], [], None)
    assert "stage localization" in caplog.text


def test_a_category_with_a_key_the_schema_does_not_name_is_refused_before_it_is_stored() -> None:
    row = localized()
    result = msgspec.json.decode(msgspec.json.encode(row.result))
    result["categories"][0]["stages"][0]["hosts"][0]["novelty"] = True

    with pytest.raises(ResultShapeError, match=r"\$\.categories\[0\]\.stages\[0\]\.hosts\[0\]\.novelty"):
        typed(result, schema.LocalizationResult)
