"""The Celery app: settings from Django's ``CELERY_*`` names, tasks from each app's ``tasks.py``.

Run a worker with ``celery -A config worker`` and the scheduler with ``celery -A config beat`` (docs/SOURCES.md), in
production with ``DJANGO_SETTINGS_MODULE=config.settings.production`` (Procfile); unset, the local default.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("hindsight")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
