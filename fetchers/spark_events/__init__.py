"""Spark listener events -> the app model: ``builder`` (event semantics, app status) and ``tasks`` (TaskEnd rows).

Used through ``fetchers.spark_eventlog``.
"""
