"""Streaming byte layer of the Spark event-log reader: find logs on disk, decompress them, yield lines.

Spark writes one JSON event per line (refdata README section 6, facts 1 and 3-5). This package knows the file
layouts (single file, rolling ``eventlog_v2_*`` directory, Databricks ``eventlog`` + ``eventlog-*.gz``) and the
stream formats of every codec Spark writes; it knows nothing about the JSON inside the lines.

Usage::

    logs, errors = find_event_logs(Path("/data/spark-events"))
    for log in logs:
        with open_lines(log) as lines:
            for line in lines:
                ...  # bytes, without the trailing newline
            lines.partial, lines.warnings
"""

from fetchers.eventlog.layout import EventLog, EventLogError, EventLogPart, find_event_logs
from fetchers.eventlog.lines import LineStream, RawChunk, open_lines

__all__ = ("EventLog", "EventLogError", "EventLogPart", "LineStream", "RawChunk", "find_event_logs", "open_lines")
