"""MapReduce job-history files (``.jhist`` + ``_conf.xml``) -> ``MapReduceApp`` models, in one streaming pass.

Format (Hadoop 0.23 to 3.x, refdata README section 4.2): line 1 ``Avro-Json``, line 2 the Avro schema, then one
event per line, ``{"type":"MAP_ATTEMPT_FINISHED","event":{"org.apache.hadoop.mapreduce.jobhistory.X":{...}}}``.
Optional fields are Avro unions, written either bare (``"locality":"NODE_LOCAL"``, older writers) or wrapped
(``"locality":{"string":"NODE_LOCAL"}``), or null; both are read. Counters are
``{"name":"COUNTERS","groups":[{"name":<group>,"displayName":..,"counts":[{"name","displayName","value"}]}]}``.
Binary Avro history (``mapreduce.jobhistory.jhist.format=binary``) is refused with a clear error.

Nothing is loaded whole: lines are read in bounded chunks and fed to the builder as they come.

The modules, each importable on its own; callers import the names below from ``fetchers.jhist``:

* ``files``: where the JobHistory Server keeps a job's files and what a done file's name says;
* ``reading``: every job under a path, one job from its files, a stream or lines;
* ``builder``: the builder that turns the lines of one history into the model (how it is built is said there);
* ``events``: the event vocabulary, the typed decoder of the per-task events and the coercion of Avro values.
"""

from fetchers.jhist.builder import JhistError
from fetchers.jhist.files import (
    CONF_SUFFIX,
    JHIST_SUFFIX,
    JobHistoryFiles,
    JobIndex,
    done_day_directory,
    find_history_files,
    history_subdirectory,
    locate_history_files,
    parse_index_name,
    serial_directory,
)
from fetchers.jhist.reading import MapReduceReadOutcome, build_job, read_job, read_job_stream, read_jobs

__all__ = (
    "CONF_SUFFIX",
    "JHIST_SUFFIX",
    "JhistError",
    "JobHistoryFiles",
    "JobIndex",
    "MapReduceReadOutcome",
    "build_job",
    "done_day_directory",
    "find_history_files",
    "history_subdirectory",
    "locate_history_files",
    "parse_index_name",
    "read_job",
    "read_job_stream",
    "read_jobs",
    "serial_directory",
)
