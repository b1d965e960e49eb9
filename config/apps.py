"""The project's own app config: makes the Celery app current once Django is set up."""

from django.apps import AppConfig


class CeleryAppConfig(AppConfig):
    """Loads ``config.celery`` in ``ready()``: every process that sets up Django (web, worker, beat, the other
    commands, tests) sends tasks through the configured broker, as when ``config/__init__.py`` imported it. A
    process that never sets up Django (``manage.py analyze --no-store``, ``--help``) never pays for Celery."""

    name = "config"
    label = "hindsight_config"
    verbose_name = "Hindsight configuration"

    def ready(self) -> None:
        import config.celery  # noqa: F401  (constructing the app makes it current)
