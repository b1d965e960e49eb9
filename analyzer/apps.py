from django.apps import AppConfig


class AnalyzerConfig(AppConfig):
    name = "analyzer"
    verbose_name = "Hindsight analyzer"
