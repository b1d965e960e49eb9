"""Executor anomalies (Basu et al.): each app's report stored at analysis time, read for the report and API."""
