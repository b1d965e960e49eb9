"""The Django app: ingestion, storage and read models over the pure analysis.

``analyzer.ingestion`` watches sources (polling, claims, the YARN join, on-demand requests) and sends each app
through the pure ``analysis.pipeline``; ``analyzer.services`` stores the report through the ORM in
``analyzer.models``; ``analyzer.selectors`` reads it back by topic. Each research analysis has one package here
with a write module (``services``) and a read module (``selectors``): ``hosts``, ``executors``, ``stages`` and
``attribution``. Celery tasks (``analyzer.tasks``) and management commands only orchestrate them.
"""
