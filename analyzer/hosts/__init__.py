"""Straggler hosts (Ouyang et al.): snapshots ranked and stored (``services``), read for the pages and API."""
