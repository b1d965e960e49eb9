"""Built-in MapReduce heuristics (Dr. Elephant's 13). Importing a module registers its heuristic: the import order
is the suite order."""

# isort: off
from heuristics.mapreduce import mapper_skew
from heuristics.mapreduce import mapper_gc
from heuristics.mapreduce import mapper_memory
from heuristics.mapreduce import mapper_speed
from heuristics.mapreduce import mapper_spill
from heuristics.mapreduce import mapper_time
from heuristics.mapreduce import reducer_skew
from heuristics.mapreduce import reducer_gc
from heuristics.mapreduce import reducer_memory
from heuristics.mapreduce import reducer_time
from heuristics.mapreduce import shuffle_sort
from heuristics.mapreduce import exception
from heuristics.mapreduce import distributed_cache
# isort: on

__all__ = [
    "distributed_cache",
    "exception",
    "mapper_gc",
    "mapper_memory",
    "mapper_skew",
    "mapper_speed",
    "mapper_spill",
    "mapper_time",
    "reducer_gc",
    "reducer_memory",
    "reducer_skew",
    "reducer_time",
    "shuffle_sort",
]
