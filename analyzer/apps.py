from django.apps import AppConfig


class AnalyzerConfig(AppConfig):
    name = "analyzer"
    verbose_name = "Hindsight analyzer"

    def ready(self) -> None:
        from django.conf import settings

        from analyzer.fetch_budgets import apply_fetch_budgets

        apply_fetch_budgets(settings)
