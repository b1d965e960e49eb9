"""Spark listener events -> the app model: ``builder`` (feeding, tasks, app status), ``handlers`` (the app-level
events: application, jobs and stages, executors, SQL), ``tasks`` (TaskEnd rows), ``digest`` (whole chunks of lines
at once) and ``parallel`` (a big log on two cores).

Used through ``fetchers.spark_eventlog``.
"""
