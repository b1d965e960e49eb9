"""Which stage made recurring runs slow? Stage anomaly localization across runs (CloudDiag, Mi et al. 2013).

Input: a pandas DataFrame with one row per finished run and the columns

* ``template`` -- the recurring job's key; ``signature`` -- its stage signature (the stage DAG's shape);
* ``run_id`` (optional, else the row index) and ``run_time`` (optional, else the sum of the stage columns);
* every other column is one stage's duration in that run (milliseconds or seconds: the method is unit-free).
  A stage absent from a run is NaN.

A *category* is the runs of one template with one signature. Method, per category:

1. **CV gate.** The category is anomalous when the coefficient of variation (std / mean, ddof=1) of its run
   times exceeds ``alpha`` (default :data:`DEFAULT_ALPHA` = 0.15: healthy recurring runs of the synthetic
   benchmark vary 5-12% with input size and cluster load; see docs/benchmarks/anomaly.md). Categories with
   fewer than ``min_runs`` runs (default 8) are not analysed.
2. **Log space.** ``X = log(max(M, floor))`` with per-column median centering (algorithms.md §3, pitfall 2:
   on raw times the cosine test picked the wrong stage; in log space a slowdown is an additive, sparse term and
   a run's overall size is a shared low-rank term). Stages missing from some runs of the category are dropped.
3. **RPCA.** ``X = L + E`` by :func:`analysis.stages.rpca.robust_pca` (lambda ``1/sqrt(max(m, n))``).
4. **Flags.** An entry of E is *significant* when it is positive (slower than L predicts) and above
   ``max(3 * sigma, log(1 + min_effect))``: sigma is the noise scale (:func:`noise_scale`, a robust std of X
   minus its principal part) because dense noise makes "non-zero" meaningless (pitfall 1) and MAD(E) is ~0;
   the absolute term (default ``min_effect`` 0.25, i.e. 25% slower) keeps a clean category from flagging
   solver-precision residue. A stage is *anomalous* when the cosine between its column of X and of L is below
   ``beta`` (default :data:`DEFAULT_BETA` = 0.98) and it has at least one significant entry; its outlier runs
   are those entries. beta is high because a stage slow in one run of 150 still has a column close to L
   (cosine 0.92-0.96 measured); the significant entries carry the decision, the cosine the paper's veto.
5. **Ranking.** Within a category, anomalous stages first, then by *evidence*: the sum over the stage's
   significant entries of how far each exceeds the threshold (log space), then the count, then the cosine.
   The count separated the injected stage far better than the cosine (pitfall 2); weighting each entry by its
   excess stops a few marginal noise entries from out-counting one clear slow run (measured in
   docs/benchmarks/anomaly.md).
   Across categories, (template, stage) by the number of categories it was anomalous in (the paper's rule),
   then by outlier runs.

Anomalous runs should be a minority of a category: a stage slow in most runs is itself low-rank and leaks into
L (pitfall 3). Results are frozen dataclasses; ``to_dict()`` gives JSON-ready dictionaries.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from analysis.stages.rpca import RPCAResult, robust_pca

DEFAULT_ALPHA = 0.15
DEFAULT_BETA = 0.98
DEFAULT_MIN_RUNS = 8
DEFAULT_MIN_EFFECT = 0.25
MAD_K = 3.0
MAD_SCALE = 1.4826  # MAD -> standard deviation of a normal
RESERVED = ("template", "signature", "run_id", "run_time")


class StageInputError(ValueError):
    """The runs DataFrame cannot be analysed (missing columns, no stage columns, non-numeric durations)."""


@dataclass(frozen=True, slots=True)
class StageFinding:
    stage: str
    cosine: float
    anomalous: bool
    outlier_runs: list[str]  # runs whose E entry for this stage is significant, largest first
    slowdown: list[float]  # exp(E) of those runs: about how many times slower than expected
    evidence: float = 0.0  # sum over the outlier runs of E minus the threshold (log space): the ranking key

    @property
    def count(self) -> int:
        return len(self.outlier_runs)


@dataclass(frozen=True, slots=True)
class CategoryResult:
    template: str
    signature: str
    runs: int
    cv: float
    anomalous: bool  # the CV gate fired
    analysed: bool  # RPCA ran (gate fired, enough runs and stages)
    reason: str  # why not analysed, or "" when analysed
    stages: list[StageFinding] = field(default_factory=list)  # ranked; anomalous ones first
    dropped_stages: list[str] = field(default_factory=list)  # missing in some runs of the category
    rpca: dict[str, float | int | bool] = field(default_factory=dict)
    threshold: float = 0.0  # the log-space E threshold used (3 * noise scale, at least log(1 + min_effect))

    @property
    def anomalous_stages(self) -> list[StageFinding]:
        return [s for s in self.stages if s.anomalous]

    def messages(self) -> list[str]:
        """One sentence per anomalous stage, e.g. "stage 7 is the outlier in runs r3 and r9"."""
        return [
            f"{_stage_label(s.stage)} is the outlier in {_runs_phrase(s.outlier_runs)}" for s in self.anomalous_stages
        ]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["messages"] = self.messages()
        return data


@dataclass(frozen=True, slots=True)
class StageRank:
    template: str
    stage: str
    categories: int  # categories in which the stage was anomalous
    outlier_runs: int  # total outlier runs over those categories
    min_cosine: float


@dataclass(frozen=True, slots=True)
class LocalizationResult:
    categories: list[CategoryResult]
    ranking: list[StageRank]  # (template, stage) most often flagged first
    params: dict[str, float | int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "params": dict(self.params),
            "categories": [c.to_dict() for c in self.categories],
            "ranking": [asdict(r) for r in self.ranking],
        }


def _stage_label(stage: str) -> str:
    return f"stage {stage}" if stage.isdigit() else stage


def _runs_phrase(runs: list[str]) -> str:
    if len(runs) == 1:
        return f"run {runs[0]}"
    shown = runs[:5]
    more = f" and {len(runs) - 5} more" if len(runs) > 5 else ""
    if more:
        return "runs " + ", ".join(shown) + more
    return "runs " + ", ".join(shown[:-1]) + " and " + shown[-1]


def coefficient_of_variation(values: npt.ArrayLike) -> float:
    """std (ddof=1) / mean; 0 for fewer than two values or a non-positive mean."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if arr.size < 2 or arr.mean() <= 0:
        return 0.0
    return float(arr.std(ddof=1) / arr.mean())


def column_cosines(m: npt.NDArray[np.float64], low: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """|M(i) . L(i)| / (||M(i)|| ||L(i)||) per column (CloudDiag eq. 1); 0 where either column is zero."""
    dots = np.abs((m * low).sum(axis=0))
    norms = np.linalg.norm(m, axis=0) * np.linalg.norm(low, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)
    return np.asarray(cos, dtype=np.float64)


def noise_scale(x: npt.NDArray[np.float64], decomposition: RPCAResult) -> float:
    """Robust standard deviation (1.4826 MAD) of X minus its principal part.

    Neither E nor X - L measures the noise: PCP splits dense noise between a sparse E (mostly exact zeros, so
    MAD(E) is ~0) and a high-rank L. The principal part is the plain SVD truncation of X to the number of
    singular values of L above 10% of its largest (at most a third of the smaller side): the shared run-level
    factors, without the noise.
    """
    s_low = np.linalg.svd(decomposition.low_rank, compute_uv=False)
    rank = int((s_low > 0.1 * s_low[0]).sum()) if s_low.size and s_low[0] > 0 else 0
    rank = max(1, min(rank, min(x.shape) // 3))
    with threadpool_limits(limits=1, user_api="blas"):  # small matrix: see analysis.stages.rpca
        u, s, vt = np.linalg.svd(x, full_matrices=False)
    residual = x - (u[:, :rank] * s[:rank]) @ vt[:rank]
    return float(MAD_SCALE * np.median(np.abs(residual - np.median(residual))))


def analyse_category(
    runs: pd.DataFrame,
    *,
    template: str = "",
    signature: str = "",
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    min_runs: int = DEFAULT_MIN_RUNS,
    min_effect: float = DEFAULT_MIN_EFFECT,
    lam: float | None = None,
    force: bool = False,
) -> CategoryResult:
    """Analyse one category's runs (rows; stage columns plus optional run_id/run_time). ``force`` skips the CV gate."""
    stage_cols = [c for c in runs.columns if c not in RESERVED]
    if not stage_cols:
        raise StageInputError("no stage duration columns")
    raw = runs[stage_cols]
    if not all(pd.api.types.is_numeric_dtype(t) for t in raw.dtypes):
        raw = raw.apply(pd.to_numeric, errors="coerce")  # text that is not a number becomes a missing stage
    all_values = raw.to_numpy(np.float64, na_value=np.nan, copy=True)
    all_values[~np.isfinite(all_values)] = np.nan
    if "run_time" in runs.columns:
        run_time = pd.to_numeric(runs["run_time"], errors="coerce").to_numpy(np.float64)
    else:
        run_time = np.nansum(all_values, axis=1)
    run_ids = [str(r) for r in (runs["run_id"] if "run_id" in runs.columns else runs.index)]
    n = len(runs)
    cv = coefficient_of_variation(run_time)
    gate = cv > alpha

    def result(analysed: bool, reason: str, **kw: Any) -> CategoryResult:
        return CategoryResult(template, signature, n, cv, gate, analysed, reason, **kw)

    if n < min_runs:
        return result(False, f"{n} run{'' if n == 1 else 's'}, fewer than the {min_runs} needed")
    if not gate and not force:
        return result(False, f"run-time CV {cv:.3f} is not above alpha {alpha}")
    present = ~np.isnan(all_values).any(axis=0)
    complete = [c for c, ok in zip(stage_cols, present, strict=True) if ok]
    dropped = [str(c) for c in stage_cols if c not in complete]
    if len(complete) < 2:
        return result(False, "fewer than two stages present in every run", dropped_stages=dropped)
    values = all_values[:, present]
    positive = values[values > 0]
    floor = float(positive.min()) if positive.size else 1.0
    x = np.log(np.maximum(values, floor))
    x = x - np.median(x, axis=0)
    if not np.any(x):
        return result(False, "every stage takes the same time in every run", dropped_stages=dropped)
    decomposition: RPCAResult = robust_pca(x, lam)
    low, sparse = decomposition.low_rank, decomposition.sparse
    cos = column_cosines(x, low)
    threshold = max(MAD_K * noise_scale(x, decomposition), float(np.log1p(min_effect)))
    significant = sparse > threshold
    findings = []
    for j, col in enumerate(complete):
        rows = np.flatnonzero(significant[:, j])
        rows = rows[np.argsort(-sparse[rows, j], kind="stable")]
        findings.append(
            StageFinding(
                stage=str(col),
                cosine=float(cos[j]),
                anomalous=bool(cos[j] < beta and rows.size > 0),
                outlier_runs=[run_ids[i] for i in rows],
                slowdown=[float(np.exp(sparse[i, j])) for i in rows],
                evidence=float((sparse[rows, j] - threshold).sum()),
            )
        )
    findings.sort(key=lambda f: (not f.anomalous, -f.evidence, -f.count, f.cosine))
    return result(
        True,
        "",
        stages=findings,
        dropped_stages=dropped,
        rpca=decomposition.summary(),
        threshold=threshold,
    )


def localize(
    runs: pd.DataFrame,
    *,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    min_runs: int = DEFAULT_MIN_RUNS,
    min_effect: float = DEFAULT_MIN_EFFECT,
    lam: float | None = None,
    force: bool = False,
) -> LocalizationResult:
    """Every category of ``runs`` (grouped by template and signature), and the cross-category stage ranking."""
    missing = [c for c in ("template", "signature") if c not in runs.columns]
    if missing:
        raise StageInputError(f"missing column(s): {', '.join(missing)}")
    categories = []
    grouped: dict[tuple[Hashable, Hashable], pd.DataFrame] = dict(
        tuple(runs.groupby(["template", "signature"], sort=True, dropna=False))
    )
    for (template, signature), group in grouped.items():
        present = group.dropna(axis=1, how="all").drop(columns=["template", "signature"])
        categories.append(
            analyse_category(
                present,
                template=str(template),
                signature=str(signature),
                alpha=alpha,
                beta=beta,
                min_runs=min_runs,
                min_effect=min_effect,
                lam=lam,
                force=force,
            )
        )
    tally: dict[tuple[str, str], list[float]] = {}
    for cat in categories:
        for finding in cat.anomalous_stages:
            entry = tally.setdefault((cat.template, finding.stage), [0, 0, 1.0])
            entry[0] += 1
            entry[1] += finding.count
            entry[2] = min(entry[2], finding.cosine)
    ranking = [StageRank(t, s, int(v[0]), int(v[1]), float(v[2])) for (t, s), v in tally.items()]
    ranking.sort(key=lambda r: (-r.categories, -r.outlier_runs, r.min_cosine, r.template, r.stage))
    params: dict[str, float | int] = {"alpha": alpha, "beta": beta, "min_runs": min_runs, "min_effect": min_effect}
    return LocalizationResult(categories, ranking, params)
