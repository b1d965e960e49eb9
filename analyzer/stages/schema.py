"""What a ``StageLocalization`` stores, typed: ``result`` and ``runs``.

``result`` is ``analysis.stages.localize.LocalizationResult.to_dict()`` plus what ``analyzer.stages.services``
adds: each category's ``stage_names`` (stage id -> its name in the category's latest run), each anomalous stage's
``hosts`` (per outlier run, which hosts were slow: ``services.host_findings``), ``params.host_factor``, and a
``reason`` when nothing could be localized (no stage durations stored). ``runs`` maps a run id (the stored app's pk
as a string) to the app it names. Written through ``analyzer.stored_results.validated`` by the service and decoded
by ``analyzer.stages.selectors``.

Which fields have a default: those the library's result types default (a category's ``stages``,
``dropped_stages``, ``rpca`` and ``threshold``, a finding's ``evidence``), those the service added after results
were first stored (a finding's ``hosts``, ``params.host_factor``), those only written where they apply (a
finding's ``hosts``: anomalous stages only; the result's ``reason``), and ``rpca``'s facts (``{}`` when RPCA did
not run). Every other field is in every result ever stored, so it is required: a result without it is unreadable,
not silently empty.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import msgspec


class LocalizationParams(msgspec.Struct, frozen=True):
    """The thresholds a result was computed with (``HINDSIGHT_STAGE_LOCALIZATION_*``)."""

    alpha: float  # a category is looked at when its runs' run-time CV is above alpha
    beta: float  # a stage is anomalous when the cosine of its column with its low-rank part is below beta
    min_runs: int
    min_effect: float  # the least slowdown (1 + min_effect times) an outlier entry must stand for
    host_factor: float = 1.5  # a host is named when at least this many times the others (and its usual)


class SlowHost(msgspec.Struct, frozen=True):
    """A host whose tasks made one run's stage slow."""

    host: str
    ratio: float  # its mean task time in the stage over the mean of the stage's other tasks
    usual: float | None  # the same ratio's median in the runs where the stage was not the outlier; null: not listed
    tasks: int


class HostFinding(msgspec.Struct, frozen=True):
    """Where one outlier run's stage was slow: named hosts, every host, or nothing to say."""

    run: str
    verdict: Literal["hosts", "everywhere", "unknown"]  # unknown: fewer than 3 hosts, or no host information
    n_hosts: int
    hosts: list[SlowHost]  # slowest first; empty unless verdict is hosts


class StageFinding(msgspec.Struct, frozen=True):
    """One stage of a category compared by robust PCA (``analysis.stages.localize.StageFinding``)."""

    stage: str  # the stage id
    cosine: float  # cos(M_i, L_i) in log space: below beta, the stage is anomalous
    anomalous: bool
    outlier_runs: list[str]  # run ids, most slowed first
    slowdown: list[float]  # about how many times slower than expected, per outlier run
    evidence: float = 0.0  # the ranking key
    hosts: list[HostFinding] = []  # per outlier run (anomalous stages only)


class RpcaSummary(msgspec.Struct, frozen=True):
    """Robust PCA's convergence facts; all zero when it did not run (the category was not analysed)."""

    lam: float = 0.0
    iterations: int = 0
    converged: bool = False
    residual: float = 0.0
    rank: int = 0


class Category(msgspec.Struct, frozen=True):
    """The runs of one (template, stage signature), compared among themselves (``CategoryResult.to_dict()``)."""

    template: str
    signature: str
    runs: int
    cv: float  # coefficient of variation of the runs' run times
    anomalous: bool  # the CV gate fired
    analysed: bool  # robust PCA ran
    reason: str  # why not analysed; "" when it was
    messages: list[str]  # the library's sentences (the pages say their own, with names and hosts)
    stage_names: dict[str, str]  # stage id -> its name in the category's latest run
    stages: list[StageFinding] = []  # anomalous ones first
    dropped_stages: list[str] = []  # missing in some runs
    rpca: RpcaSummary = RpcaSummary()
    threshold: float = 0.0  # the log-space outlier threshold


class StageRank(msgspec.Struct, frozen=True):
    """A stage across the template's categories: how often it was anomalous."""

    template: str
    stage: str
    categories: int
    outlier_runs: int
    min_cosine: float


class LocalizationResult(msgspec.Struct, frozen=True):
    """``LocalizationResult.to_dict()`` with the service's additions (see the module docstring)."""

    params: LocalizationParams
    categories: list[Category]
    ranking: list[StageRank]  # most often anomalous first
    reason: str = ""  # why nothing could be localized; "" otherwise


class Run(msgspec.Struct, frozen=True):
    """A run of the result: the stored app its run id names, so pages link it without another query."""

    pk: int
    app_id: str
    attempt_id: str
    end: dt.datetime | None  # stored as ISO 8601
