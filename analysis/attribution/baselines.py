"""Template baselines: the "usual" runtime and feature values of a recurring job (Griffin §4.1).

A template's baseline runtime is the mean runtime of its runs between the 45th and 55th runtime percentile
(outliers, slow runs included, do not move it); its baseline features are the means (categorical: the most
common value) over the same runs. A template with fewer than ``min_runs`` runs, or one never seen, borrows the
baseline of its ``k`` most similar templates by signature (data size and stage shape: the features marked
``signature`` in the registry, log-scaled and standardized) and is flagged ``borrowed`` with its donors.

Also kept per template: a robust centre (median) and spread (1.4826 x MAD, floored at 5% of the median and at
the feature's quantum) of every numeric feature over all its runs, for "how unusual is this value" z-scores.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]

from analysis.attribution.features import FEATURES, FeatureRegistry

F64 = npt.NDArray[np.float64]
BAND = (0.45, 0.55)


@dataclass
class Baselines:
    templates: list[str]
    numeric: list[str]
    categorical: list[str]
    runtime: F64  # (T,)
    values: F64  # (T, n_numeric) baseline means, raw units; NaN when absent
    modes: npt.NDArray[np.object_]  # (T, n_categorical) most common value, "" when absent
    center: F64  # (T, n_numeric) median over all runs
    scale: F64  # (T, n_numeric) robust spread, > 0
    n_runs: npt.NDArray[np.int64]  # (T,) runs the template itself has
    borrowed: npt.NDArray[np.bool_]  # (T,)
    donors: list[tuple[str, ...]]  # donors of borrowed templates, () otherwise
    signature: F64  # (T, n_sig) standardized signature of each template
    sig_columns: list[str]
    sig_mean: F64
    sig_std: F64
    min_runs: int
    k: int
    # run_id of the runs the baseline is the mean of (when the runs carry a run_id column): the report links them.
    band_runs: dict[str, list[object]] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {t: i for i, t in enumerate(self.templates)}

    def signature_of(self, frame: pd.DataFrame) -> F64:
        """Standardized signature vectors of runs (rows of ``frame``); absent values sit at the mean."""
        if not self.sig_columns:
            return np.zeros((len(frame), 0))
        raw = np.log1p(frame[self.sig_columns].to_numpy(dtype=np.float64, na_value=np.nan))
        z = (raw - self.sig_mean) / self.sig_std
        return np.where(np.isnan(z), 0.0, z)

    def nearest(self, sig: F64, *, exclude: int = -1) -> list[int]:
        """The ``k`` own-baseline templates nearest to one signature vector (Euclidean), nearest first."""
        own = np.flatnonzero(~self.borrowed)
        own = own[own != exclude]
        if len(own) == 0:
            return []
        d = np.sqrt(((self.signature[own] - sig) ** 2).sum(axis=1))
        return [int(i) for i in own[np.argsort(d, kind="stable")[: self.k]]]

    def resolve(self, templates: Sequence[str], frame: pd.DataFrame) -> RunBaselines:
        """Per-run baselines, borrowing for templates never seen (by the run's own signature)."""
        n = len(templates)
        idx = np.array([self.index.get(t, -1) for t in templates], dtype=np.int64)
        unseen = np.flatnonzero(idx < 0)
        rt = np.empty(n)
        vals = np.empty((n, len(self.numeric)))
        modes = np.empty((n, len(self.categorical)), dtype=object)
        cen = np.empty((n, len(self.numeric)))
        sc = np.empty((n, len(self.numeric)))
        borrowed = np.zeros(n, dtype=bool)
        donors: list[tuple[str, ...]] = [()] * n
        seen = idx >= 0
        si = idx[seen]
        rt[seen], vals[seen], modes[seen] = self.runtime[si], self.values[si], self.modes[si]
        cen[seen], sc[seen], borrowed[seen] = self.center[si], self.scale[si], self.borrowed[si]
        for j in np.flatnonzero(seen):
            donors[j] = self.donors[idx[j]]
        if len(unseen):
            sigs = self.signature_of(frame.iloc[unseen])
            for row, j in enumerate(unseen):
                near = self.nearest(sigs[row])
                if not near:
                    raise ValueError("no template has enough runs to lend a baseline")
                rt[j], vals[j], modes[j], cen[j], sc[j] = _pool(self, near)
                borrowed[j] = True
                donors[j] = tuple(self.templates[i] for i in near)
        return RunBaselines(rt, vals, modes, cen, sc, borrowed, donors, idx)


@dataclass
class RunBaselines:
    """Baselines aligned to a batch of runs."""

    runtime: F64
    values: F64
    modes: npt.NDArray[np.object_]
    center: F64
    scale: F64
    borrowed: npt.NDArray[np.bool_]
    donors: list[tuple[str, ...]]
    template_index: npt.NDArray[np.int64]  # -1: template never seen


def _pool(b: Baselines, near: list[int]) -> tuple[float, F64, npt.NDArray[np.object_], F64, F64]:
    with np.errstate(all="ignore"):
        vals = _nanmean(b.values[near])
        cen = _nanmean(b.center[near])
        sc = _nanmean(b.scale[near])
    modes = np.array([_mode(list(b.modes[near, c])) for c in range(len(b.categorical))], dtype=object)
    return float(b.runtime[near].mean()), vals, modes, cen, np.where(np.isnan(sc), 1.0, sc)


def _nanmean(a: F64) -> F64:
    n = (~np.isnan(a)).sum(axis=0)
    s = np.nansum(a, axis=0)
    return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def _mode(values: list[object]) -> str:
    vals = [str(v) for v in values if v not in ("", None)]
    if not vals:
        return ""
    uniq, counts = np.unique(np.array(vals, dtype=object), return_counts=True)
    return str(uniq[int(np.argmax(counts))])


def band_mask(df: pd.DataFrame, band: tuple[float, float] = BAND) -> npt.NDArray[np.bool_]:
    """Runs between the template's ``band`` runtime percentiles (inclusive); the median-nearest run when none."""
    g = df.groupby("template", sort=False)["runtime"]
    lo = g.transform("quantile", band[0]).to_numpy()
    hi = g.transform("quantile", band[1]).to_numpy()
    rt = df["runtime"].to_numpy(dtype=np.float64)
    mask = (rt >= lo) & (rt <= hi)
    # Interpolated percentiles can fall between two runs: keep the run(s) nearest the median then.
    dist = np.abs(rt - g.transform("median").to_numpy())
    nearest = dist == pd.Series(dist, index=df.index).groupby(df["template"], sort=False).transform("min").to_numpy()
    has = pd.Series(mask, index=df.index).groupby(df["template"], sort=False).transform("any").to_numpy()
    return np.asarray(mask | (~has & nearest), dtype=bool)


def compute_baselines(
    df: pd.DataFrame,
    numeric: Sequence[str],
    categorical: Sequence[str],
    *,
    min_runs: int = 5,
    k: int = 3,
    registry: FeatureRegistry = FEATURES,
) -> Baselines:
    """Baselines of every template in ``df`` (columns: template, runtime, the given features)."""
    if min_runs < 1 or k < 1:
        raise ValueError("min_runs and k must be >= 1")
    numeric, categorical = list(numeric), list(categorical)
    df = df.reset_index(drop=True)
    in_band = band_mask(df)
    band = df[in_band]
    templates = list(pd.unique(df["template"]))
    g_all = df.groupby("template", sort=False)
    g_band = band.groupby("template", sort=False)
    runtime = g_band["runtime"].mean().reindex(templates).to_numpy(dtype=np.float64)
    num = df[numeric].astype(np.float64)
    values = g_band[numeric].mean().reindex(templates).to_numpy(dtype=np.float64) if numeric else _empty(templates)
    center = num.groupby(df["template"], sort=False).median().reindex(templates).to_numpy(dtype=np.float64)
    dev = (num - num.groupby(df["template"], sort=False).transform("median")).abs()
    mad = dev.groupby(df["template"], sort=False).median().reindex(templates).to_numpy(dtype=np.float64)
    quantum = np.array([registry[n].quantum for n in numeric], dtype=np.float64)
    scale = np.fmax(np.fmax(1.4826 * mad, 0.05 * np.abs(center)), quantum)
    scale = np.where(np.isnan(scale) | (scale <= 0), 1e-9 + quantum, scale)
    scale = np.where(scale <= 0, 1.0, scale)
    modes = np.empty((len(templates), len(categorical)), dtype=object)
    for c, name in enumerate(categorical):
        col = band[name].astype(str).replace({"nan": "", "None": ""})
        counts = col[col != ""].groupby(band["template"], sort=False).value_counts()
        best = counts.groupby(level=0, sort=False).idxmax() if len(counts) else pd.Series(dtype=object)
        modes[:, c] = [best[t][1] if t in best.index else "" for t in templates]
    n_runs = g_all.size().reindex(templates).to_numpy(dtype=np.int64)

    sig_cols = [n for n in numeric if registry[n].signature]
    sig_raw = np.log1p(df[sig_cols].to_numpy(dtype=np.float64, na_value=np.nan)) if sig_cols else np.zeros((len(df), 0))
    sig_t = pd.DataFrame(sig_raw).groupby(df["template"].to_numpy(), sort=False).median().reindex(templates).to_numpy()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a signature column absent everywhere: NaN, handled below
        sig_mean = np.nanmean(sig_t, axis=0) if len(sig_cols) else np.zeros(0)
        sig_std = np.nanstd(sig_t, axis=0) if len(sig_cols) else np.zeros(0)
    sig_mean = np.where(np.isnan(sig_mean), 0.0, sig_mean)
    sig_std = np.where(np.isnan(sig_std) | (sig_std <= 0), 1.0, sig_std)
    sig = np.where(np.isnan(sig_t), 0.0, (sig_t - sig_mean) / sig_std)

    b = Baselines(
        templates=[str(t) for t in templates],
        numeric=numeric,
        categorical=categorical,
        runtime=np.array(runtime, dtype=np.float64),  # writable copies: pandas 3 hands out read-only views
        values=np.array(values, dtype=np.float64),
        modes=modes,
        center=np.array(center, dtype=np.float64),
        scale=np.array(scale, dtype=np.float64),
        n_runs=n_runs,
        borrowed=n_runs < min_runs,
        donors=[()] * len(templates),
        signature=sig,
        sig_columns=sig_cols,
        sig_mean=sig_mean,
        sig_std=sig_std,
        min_runs=min_runs,
        k=k,
    )
    if "run_id" in band.columns:
        b.band_runs = {str(t): list(ids) for t, ids in band.groupby("template", sort=False)["run_id"]}
    if b.borrowed.all():
        raise ValueError(f"no template has {min_runs} or more runs: nothing to lend a baseline")
    for i in np.flatnonzero(b.borrowed):
        near = b.nearest(sig[i], exclude=int(i))
        b.runtime[i], b.values[i], b.modes[i], b.center[i], b.scale[i] = _pool(b, near)
        b.donors[i] = tuple(b.templates[j] for j in near)
    return b


def _empty(templates: list[object]) -> F64:
    return np.zeros((len(templates), 0))
