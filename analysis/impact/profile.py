"""Severity profiles: a finding's final severity from its heuristic's rule severity and its measured cost (pure).

``drelephant`` keeps the rule severity exactly (Dr. Elephant's thresholds and rules; the heuristics' settings
under that profile restore its rules, see docs/HEURISTICS.md).

``impact`` (the default) bounds the rule severity by what the finding cost, its *cost share*: the share of the
run's wall time it cost, or for findings that cost memory rather than time (idle executors, oversized memory)
the share of the app's used GB-hours it wasted:

- a cost share of at least ``SEVERE_SHARE`` makes it at least Severe, of at least ``MODERATE_SHARE`` at least
  Moderate, whatever its ratio (a 27 % task failure rate that doubled the runtime is not Low);
- under ``LOW_CEILING_SHARE`` it is at most Low, under ``MODERATE_CEILING_SHARE`` at most Moderate (94 MiB of
  spill in a long stage costs a second: not Severe);
- a configuration finding has no measured cost: at most Low, unless its rule says it breaks things (Severe or
  worse, e.g. dynamic allocation without the external shuffle service loses shuffle files);
- task failures that make the next run likely to fail outright (a 10 % chance or more, ``RISK_MODERATE``; 50 %,
  ``RISK_SEVERE``) are at least Moderate (Severe) whatever they cost this time;
- findings of heuristics that report broken runs (failed jobs, out-of-memory kills, a failed MapReduce job) are
  never lowered;
- a finding whose cost cannot be estimated keeps its rule severity.

Critical stays the rules' word: cost alone raises to Severe at most. The shares are round numbers chosen for an
owner's attention, documented in docs/HEURISTICS.md, and evaluated on data they were not chosen on
(docs/benchmarks/impact.md).
"""

from __future__ import annotations

from typing import Final

from heuristics.config import PROFILES
from heuristics.severity import Severity

# The profiles' names are heuristics.config's (where the setting is read and checked).
IMPACT: Final = PROFILES[0]
DREL: Final = PROFILES[1]

# Task failures that make the next run fail outright this likely (analysis.impact.fixes.failure_risk) are at least
# Moderate, or Severe, whatever they cost this time: a retried failure is cheap until the retries run out.
RISK_MODERATE: Final = 0.10
RISK_SEVERE: Final = 0.50
SEVERE_SHARE: Final = 0.40
MODERATE_SHARE: Final = 0.15
MODERATE_CEILING_SHARE: Final = 0.10
LOW_CEILING_SHARE: Final = 0.03

# Heuristics whose findings mean the run broke (jobs failed, tasks were killed for memory): never lowered by cost.
BREAKS_THINGS: Final = frozenset({"spark.memory_failures", "spark.job_failures", "mapreduce.exception"})
# Heuristics that judge settings, whose cost the replay cannot measure.
SETTINGS: Final = frozenset({"spark.configuration", "mapreduce.distributed_cache"})


def final_severity(
    code: str, rule: Severity, cost_share: float | None, profile: str = IMPACT, failure_risk: float | None = None
) -> Severity:
    """The severity a finding is shown and stored with, under ``profile``."""
    rule = Severity(rule)
    if profile == DREL or rule == Severity.NONE:
        return rule
    level = _cost_bounded(code, rule, cost_share)
    if failure_risk is not None and failure_risk >= RISK_MODERATE:
        level = max(level, Severity.SEVERE if failure_risk >= RISK_SEVERE else Severity.MODERATE)
    return Severity(level)


def _cost_bounded(code: str, rule: Severity, cost_share: float | None) -> Severity:
    if code in SETTINGS:
        return rule if rule >= Severity.SEVERE else min(rule, Severity.LOW)
    if cost_share is None:
        return rule
    level = rule
    if cost_share >= SEVERE_SHARE:
        level = max(level, Severity.SEVERE)
    elif cost_share >= MODERATE_SHARE:
        level = max(level, Severity.MODERATE)
    if code not in BREAKS_THINGS:
        if cost_share < LOW_CEILING_SHARE:
            level = min(level, Severity.LOW)
        elif cost_share < MODERATE_CEILING_SHARE:
            level = min(level, Severity.MODERATE)
    return Severity(level)
