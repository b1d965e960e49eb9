"""The generator of the shipped sample event logs (samples/), run through ``scripts/generate_samples.py``.

* ``scenarios``: the single-app scenarios (samples/<name>), each a PySpark workload run in its own JVM;
* ``recurring``: the recurring set (samples/recurring/), scheduled Airflow DAG runs with injected slowdowns;
* ``cluster``: the cluster set (samples/cluster/): its plan, conf and the work of its apps;
* ``cluster_runner``: the standalone cluster started and stopped around the cluster set's driver process;
* ``common``: where the repository and the entry script are, the app-name prefix, shipping the work to Spark.

The names below say what the samples are; tests/test_samples.py checks the shipped logs against them. Nothing
here imports pyspark until a set runs.
"""

from samplegen.cluster import CLUSTER_DIR, CLUSTER_HOSTS, SLOW_STAGE, cluster_plan
from samplegen.common import APP_NAME_PREFIX
from samplegen.recurring import (
    CAUSES,
    MORE_INPUT,
    RECURRING_DIR,
    RETRY,
    SKEW,
    SLOW_HOST,
    SPILL_CONFIG,
    TASK_FAILURE,
    recurring_plan,
)
from samplegen.scenarios import SCENARIOS, Scenario

__all__ = (
    "APP_NAME_PREFIX",
    "CAUSES",
    "CLUSTER_DIR",
    "CLUSTER_HOSTS",
    "MORE_INPUT",
    "RECURRING_DIR",
    "RETRY",
    "SCENARIOS",
    "SKEW",
    "SLOW_HOST",
    "SLOW_STAGE",
    "SPILL_CONFIG",
    "TASK_FAILURE",
    "Scenario",
    "cluster_plan",
    "recurring_plan",
)
