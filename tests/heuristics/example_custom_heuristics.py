"""Custom heuristics loaded by dotted path in the framework tests (and an example for users)."""

from __future__ import annotations

from appmodel.spark import SparkApp
from heuristics import Ascending, Heuristic, HeuristicConfig, HeuristicResult


class ManyStages(Heuristic["ManyStages.Config"]):
    """The app ran many stage attempts.

    What it measures:
        The number of stage attempts.
    """

    code = "example.many_stages"
    name = "Many stages"

    class Config(HeuristicConfig, frozen=True):
        stage_count: Ascending = Ascending(10, 20, 30, 40)

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        count = len(app.stages)
        severity = self.config.stage_count.severity_of(count)
        return self.result(severity, counted=count, details=[("Stages", str(count))], advice="Use fewer stages.")


class Broken(Heuristic[HeuristicConfig]):
    """Always raises, to show that one broken heuristic does not stop the others."""

    code = "example.broken"
    name = "Broken"

    def evaluate(self, app: SparkApp) -> HeuristicResult:
        raise ZeroDivisionError("boom")


class Impostor(ManyStages):
    """Claims a built-in code."""

    code = "spark.executor_gc"
