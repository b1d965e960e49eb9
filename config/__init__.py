"""Project configuration. The Celery app (``config.celery``) is made current when Django is set up
(``config.apps.CeleryAppConfig.ready``), so that ``@shared_task`` tasks bind to it in every process that sets up
Django; importing ``config`` alone (the settings) does not load Celery, so ``manage.py analyze`` starts without it
(issue 15). ``celery -A config`` finds ``config.celery.app``; ``config.celery_app`` is kept as a lazy alias."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

    celery_app: Celery

__all__ = ("celery_app",)


def __getattr__(name: str) -> Any:
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
