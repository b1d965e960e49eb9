"""Calibrating High: how often is a High answer's top cause wrong, measured on held-out runs at training time.

Production history has no labels (nobody records why a run was slow), so the share of wrong High answers cannot
be counted on real runs directly. Instead each held-out run (the model did not train on it) gets, one cause at a
time, a known perturbation: the cause's members are moved the slow way by a realistic amount for the run's
template, measured in the template's own robust spread (``z`` drawn from ``PERTURB_Z``: 3-8 spreads, the range
in which "unusual for this job" starts and real incidents sit), or for a setting by a typical change (executors
divided by 2.5-5, cores halved, stages x1.5-3). The perturbed run's runtime is its actual runtime times the
model's predicted ratio for the perturbed and original features, so the run keeps its own unexplained part (its
residual), which is what makes real answers wrong. Its label is the moved cause. Only held-out runs within
``SLOWER_SHARE`` of their template's usual runtime are perturbed: a run already slower for a reason of its own
would carry two causes and no single label.

Of the perturbed runs slower than usual (over ``SLOWER_SHARE`` above the baseline), the share rated High whose
top cause is not the moved one is the wrong-High rate. ``calibrate`` returns the thresholds with the figures and
``high_allowed``: at most ``MAX_WRONG_HIGH`` wrong over at least ``MIN_CALIBRATION_HIGH`` High answers. When the
tuned ``low_error`` fails, smaller ones (the held-out errors' 50th and 25th percentiles) are tried: fewer, surer
High answers rather than none.

What it cannot measure: a model that learned a wrong effect for a feature moves its own prediction the wrong way
for the perturbed run too, so it is blind to that; the labelled benchmarks (benchmarks/attribution and the
independent generator) measure it. It does measure confusion between causes that move together, the tiers'
choices, and the residual noise of real runs, which are what made High answers wrong on the independent population.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]

from analysis.attribution.confidence import MAX_WRONG_HIGH, MIN_CALIBRATION_HIGH, ConfidenceThresholds
from analysis.attribution.explain import SLOWER_SHARE, explain
from analysis.attribution.features import FEATURES

if TYPE_CHECKING:
    from analysis.attribution.model import AttributionModel

PERTURB_Z = (3.0, 8.0)
# Held-out runs perturbed (x ~9 causes): bounds the training time whatever the history's size (~1,500 explanations,
# ~10 s on a loaded 2-core machine) while leaving several hundred High answers to count.
MAX_CALIBRATION_RUNS = 200
LOW_ERROR_QUANTILES = (0.5, 0.25)  # tighter High bounds tried when the tuned one fails the calibration


def as_usual(model: AttributionModel, runs: pd.DataFrame) -> pd.DataFrame:
    """The runs within ``SLOWER_SHARE`` of their template's usual runtime: only these are perturbed, since a run
    already slower for its own (unknown) reason has no single true cause."""
    runs = runs.reset_index(drop=True)
    runs.attrs = {}  # a caller's metadata (arrays) would break pandas' concat below
    if len(runs) == 0:
        return runs
    _num, _cat, rb = model.frames(runs)
    ratio = runs["runtime"].to_numpy(dtype=np.float64) / rb.runtime
    return runs[np.abs(ratio - 1) <= SLOWER_SHARE].reset_index(drop=True)


def perturbed_runs(
    model: AttributionModel, held_out: pd.DataFrame, rng: np.random.Generator
) -> tuple[pd.DataFrame, list[str]]:
    """Held-out runs with one cause's features moved each (see the module docstring), and the moved causes."""
    runs = as_usual(model, held_out)
    num, _cat, rb = model.frames(runs)
    numeric = model.encoder.numeric
    col = {f: k for k, f in enumerate(numeric)}
    frames: list[pd.DataFrame] = []
    truth: list[str] = []
    n = len(runs)
    for cause, members in FEATURES.by_cause(model.features).items():
        moved = num.copy()
        touched = np.zeros(n, dtype=bool)
        for f in members:
            if f not in col:
                continue  # categorical members: a changed category is no amount, and the forest sees a code
            k = col[f]
            center, scale, current = rb.center[:, k], rb.scale[:, k], num[:, k]
            known = ~np.isnan(center) & ~np.isnan(current)
            if FEATURES[f].direction == "higher":
                target = center + rng.uniform(*PERTURB_Z, n) * scale
                moved[:, k] = np.where(known, np.maximum(current, target), current)
            elif f in ("num_executors", "host_count"):
                moved[:, k] = np.where(known, np.maximum(1.0, np.round(current / rng.uniform(2.5, 5, n))), current)
            elif f == "executor_cores":
                moved[:, k] = np.where(known & (current >= 2), np.floor(current / 2), current)
            elif f == "num_stages":
                moved[:, k] = np.where(known, np.round(current * rng.uniform(1.5, 3, n)), current)
            else:
                continue
            touched |= known & (moved[:, k] != current)
        if not touched.any():
            continue
        frame = runs.copy()
        frame[numeric] = moved
        frames.append(frame[touched])
        truth += [cause] * int(touched.sum())
    if not frames:
        return runs.iloc[0:0], []
    out = pd.concat(frames, ignore_index=True)
    ratio = model.predict_seconds(out) / model.predict_seconds(_originals(runs, frames))
    out["runtime"] = out["runtime"].to_numpy(dtype=np.float64) * ratio
    return out, truth


def _originals(runs: pd.DataFrame, frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The unperturbed rows matching each perturbed row of ``frames``, in the same order."""
    return pd.concat([runs.loc[f.index] for f in frames], ignore_index=True)


def calibrate(
    model: AttributionModel,
    held_out: pd.DataFrame,
    *,
    held_out_errors: npt.NDArray[np.float64] | None = None,
    seed: int = 0,
    max_runs: int = MAX_CALIBRATION_RUNS,
) -> ConfidenceThresholds:
    """``model.confidence`` with the calibration figures and whether High may be served (module docstring)."""
    thresholds = model.confidence
    runs = as_usual(model, held_out)
    if len(runs) == 0:
        return replace(thresholds, high_allowed=False)
    rng = np.random.default_rng(seed)
    if len(runs) > max_runs:
        runs = runs.iloc[np.sort(rng.choice(len(runs), max_runs, replace=False))].reset_index(drop=True)
    perturbed, truth = perturbed_runs(model, runs, rng)
    if len(perturbed) == 0:
        return replace(thresholds, high_allowed=False)
    exps = explain(model, perturbed)
    slower = np.array([e.actual_s > e.baseline_s * (1 + SLOWER_SHARE) for e in exps])
    right = np.array([e.top_cause == t for e, t in zip(exps, truth, strict=True)])
    rel = np.array([e.confidence.rel_error for e in exps])
    # "High if allowed": the fit says High and no rule (no evidence, large error) lowered it.
    would_be_high = np.array(
        [
            e.confidence.level != "low"
            and thresholds.raw_level(e.confidence.rel_error, e.confidence.inside_interval, e.confidence.explained_share)
            == "high"
            for e in exps
        ]
    )
    candidates = [thresholds.low_error]
    if held_out_errors is not None and len(held_out_errors):
        candidates += [float(np.quantile(held_out_errors, q)) for q in LOW_ERROR_QUANTILES]
    chosen = None
    for low in candidates:
        high = slower & would_be_high & (rel < low)
        n_high, wrong = int(high.sum()), int((high & ~right).sum())
        figures = {
            "low_error": low,
            "calibration_high": n_high,
            "calibration_wrong_high": wrong,
        }
        if chosen is None:
            chosen = figures  # the tuned bound's figures are reported when no bound passes
        if n_high >= MIN_CALIBRATION_HIGH and wrong <= MAX_WRONG_HIGH * n_high:
            chosen = {**figures, "high_allowed": True}
            break
    assert chosen is not None
    return replace(
        thresholds,
        low_error=float(chosen["low_error"]),
        high_allowed=bool(chosen.get("high_allowed", False)),
        calibration_runs=int(slower.sum()),
        calibration_high=int(chosen["calibration_high"]),
        calibration_wrong_high=int(chosen["calibration_wrong_high"]),
        calibration_top1=float(right[slower].mean()) if slower.any() else None,
    )
