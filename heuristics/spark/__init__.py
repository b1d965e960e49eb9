"""Built-in Spark heuristics. Importing a module registers its heuristic: the import order is the suite order."""

# isort: off
from heuristics.spark import configuration
from heuristics.spark import executor_balance
from heuristics.spark import job_failures
from heuristics.spark import stage_failures
from heuristics.spark import stage_runtime
from heuristics.spark import executor_gc
from heuristics.spark import memory_failures
from heuristics.spark import spill
from heuristics.spark import unified_memory
from heuristics.spark import jvm_memory
from heuristics.spark import driver
from heuristics.spark import task_skew
from heuristics.spark import small_tasks
from heuristics.spark import idle_cores
from heuristics.spark import large_partition
# isort: on

__all__ = [
    "configuration",
    "driver",
    "executor_balance",
    "executor_gc",
    "idle_cores",
    "job_failures",
    "jvm_memory",
    "large_partition",
    "memory_failures",
    "small_tasks",
    "spill",
    "stage_failures",
    "stage_runtime",
    "task_skew",
    "unified_memory",
]
