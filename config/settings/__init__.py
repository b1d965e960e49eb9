"""Django settings, one module per run mode (docs/SOURCES.md "Run modes").

- ``config.settings`` (this package, the default of manage.py and Celery) and ``config.settings.base``: the local,
  embedded default, a single-user install on SQLite in var/; everything the other modes share lives in base.
- ``config.settings.production``: the web (gunicorn), worker and beat processes of a deployment (Procfile); refuses
  to start without a secret key of its own, with DEBUG on, or without HINDSIGHT_ALLOWED_HOSTS.
- ``config.settings.test``: what pytest uses (pyproject.toml).

Importing the package gives the local default, so ``DJANGO_SETTINGS_MODULE=config.settings`` keeps working.
"""

from config.settings.base import *  # noqa: F403
