"""Ingestion: sources and their checkpoints, polling, exactly-once claims, the YARN join and on-demand requests."""
