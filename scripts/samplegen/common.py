"""What every sample set's generator shares: where the repository and the entry script are, the app-name
prefix, and how the PySpark work reaches Spark's Python workers."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Each set runs its Spark apps in child processes: the entry script again, with a hidden option (--run-one, ...).
SCRIPT = REPO / "scripts" / "generate_samples.py"
APP_NAME_PREFIX = "hindsight-sample: "


def pickle_by_value() -> None:
    """Ship this package's functions to Spark's Python workers by value, not by module name.

    Spark's workers do not have scripts/ on their path, so they cannot import ``samplegen``; cloudpickle sends a
    module-level function the work uses (``_fail_partition_one``, ``_host_factor``) by value once its package is
    registered, as it did when the workloads lived in the script run as ``__main__``. Call it in the driver
    process, before the first job.
    """
    from pyspark import cloudpickle

    import samplegen

    cloudpickle.register_pickle_by_value(samplegen)
