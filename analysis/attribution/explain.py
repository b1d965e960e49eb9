"""Why was this run slower than usual: decompose, compare with the template's baseline, rank causes.

Decomposition (Saabas / TreeInterpreter, vectorized): every tree's prediction is its root value plus, along
the root-to-leaf path, the change of node value at each split, credited to the split's feature. Precomputed
once per forest as a sparse (all nodes x columns) matrix D of those changes / n_trees, a batch of runs is
``decision_path(X) @ D``: bias + sum of contributions equals ``forest.predict`` to rounding.

Delta contribution of a feature = its contribution for this run - its contribution for the template's
baseline features; the deltas sum to pred(run) - pred(baseline).

Modes:
- ``paper``: Griffin as published: features ranked by delta contribution; causes in order of their best feature.
- ``zscore``: naive: features ranked by |robust z| against the template's runs.
- ``causes`` (default): rank causes, not features. A cause's effect is what the model says it costs: the mean
  of (prediction of the run - prediction of the run with the cause's features reset to baseline) and
  (prediction of the baseline with the cause's features set to the run's - prediction of the baseline), a
  two-ordering Shapley value of the cause against everything else. It does not split credit among
  correlated members (input, shuffle, tasks move together), and a harmless metric that moves changes no
  prediction, so it earns nothing. Causes rank in three tiers, by effect within each:

  1. a member moved the slow way and is unusual for the template (z >= 3 for a metric where more is slower,
     |z| >= 3 for a setting, a changed category), and the effect is at least ``MIN_EFFECT_SHARE`` of the
     slowdown (so an unusual move that costs nothing does not lead);
  2. a member moved the slow way by at least one robust standard deviation, same effect floor;
  3. the rest: effects the model credits to values that stayed usual or went the harmless way (less data than
     usual cannot make a run slower, whatever a tree's split says; measured on the demo's skewed run, where
     "More data" took +1.5 s with shuffle bytes below usual).

  A run over 10% slower than its baseline with no cause in tiers 1 or 2 gets Low confidence whatever the model's
  fit: no measured feature moved the way that slows a run, so the cause is outside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]
import scipy.sparse as sp  # type: ignore[import-untyped]

from analysis.attribution.confidence import Confidence, assess
from analysis.attribution.features import CAUSES, FEATURES
from appmodel.jsonsafe import json_safe

if TYPE_CHECKING:
    from analysis.attribution.model import AttributionModel

F64 = npt.NDArray[np.float64]
Mode = Literal["causes", "paper", "zscore"]
MODES: tuple[Mode, ...] = ("causes", "paper", "zscore")
Z_GATE = 3.0
Z_MOVED = 1.0  # tier 2: moved the slow way by at least this many robust standard deviations
MIN_EFFECT_SHARE = 0.05  # tiers 1 and 2: an effect below this share of the slowdown does not lead
MIN_EFFECT_BASELINE_SHARE = 0.005  # ... nor below this share of the baseline runtime
SLOWER_SHARE = 0.10  # a run over 10% above its baseline is "slower than usual"
NO_EVIDENCE = (
    "No measured feature moved the way that slows a run, yet the run was slower than usual: the cause is likely "
    "outside the measured features (the causes listed are the model's estimate only)."
)


class Decomposer:
    """Vectorized Saabas decomposition of a fitted sklearn forest (or single tree list)."""

    def __init__(self, forest: Any) -> None:
        trees = [e.tree_ for e in forest.estimators_]
        n_cols = int(forest.n_features_in_)
        n_trees = len(trees)
        rows: list[npt.NDArray[np.int64]] = []
        cols: list[npt.NDArray[np.int64]] = []
        vals: list[F64] = []
        leaf_rows: list[npt.NDArray[np.int64]] = []
        leaf_cols: list[npt.NDArray[np.int64]] = []
        leaf_vals: list[F64] = []
        bias = 0.0
        offset = 0
        for t, tree in enumerate(trees):
            v = tree.value[:, 0, 0].astype(np.float64)
            left, right, feat = tree.children_left, tree.children_right, tree.feature
            internal = np.flatnonzero(left >= 0)
            parent = np.full(tree.node_count, -1, dtype=np.int64)
            parent[left[internal]] = internal
            parent[right[internal]] = internal
            child = np.flatnonzero(parent >= 0)
            rows.append(offset + child)
            cols.append(feat[parent[child]].astype(np.int64))
            vals.append((v[child] - v[parent[child]]) / n_trees)
            leaves = np.flatnonzero(left < 0)
            leaf_rows.append(offset + leaves)
            leaf_cols.append(np.full(len(leaves), t, dtype=np.int64))
            leaf_vals.append(v[leaves])
            bias += v[0] / n_trees
            offset += tree.node_count
        self.forest = forest
        self.bias = float(bias)
        self.n_trees = n_trees
        self.D = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(offset, n_cols)
        )
        self.leaf = sp.csr_matrix(
            (np.concatenate(leaf_vals), (np.concatenate(leaf_rows), np.concatenate(leaf_cols))),
            shape=(offset, n_trees),
        )

    @classmethod
    def empty(cls) -> Decomposer:
        d = cls.__new__(cls)
        d.forest, d.bias, d.n_trees = None, 0.0, 0
        d.D = d.leaf = sp.csr_matrix((0, 0))
        return d

    def decompose(self, X: F64) -> tuple[F64, F64, F64]:
        """(prediction, contributions (n x columns), per-tree predictions (n x trees)) for rows X."""
        P, _ = self.forest.decision_path(X)
        P = sp.csr_matrix(P, dtype=np.float64)
        contrib = np.asarray((P @ self.D).toarray())
        per_tree = np.asarray((P @ self.leaf).toarray())
        return self.bias + contrib.sum(axis=1), contrib, per_tree


@dataclass(frozen=True, slots=True)
class FeatureEffect:
    name: str
    unit: str
    value: float | str
    baseline: float | str
    z: float  # robust z against the template's runs (categorical: 3 if changed, else 0)
    delta_s: float  # Saabas delta contribution, seconds (+ = slower)


@dataclass(frozen=True, slots=True)
class CauseEffect:
    code: str
    label: str
    tag: str
    effect_s: float  # signed seconds (+ = made the run slower)
    unusual: bool  # a member is unusual for the template the slow way (z >= 3; a setting |z| >= 3 or changed)
    members: list[FeatureEffect]


@dataclass(frozen=True, slots=True)
class Explanation:
    template: str
    mode: str
    actual_s: float
    predicted_s: float
    baseline_s: float  # the template's baseline runtime
    predicted_baseline_s: float  # the model's prediction for the baseline features
    confidence: Confidence
    causes: list[CauseEffect]  # ranked, most likely first
    features: list[str]  # feature ranking of the mode (paper: by delta; zscore: by |z|; causes: by delta)
    baseline_borrowed: bool
    donors: tuple[str, ...]
    context_delta_s: float  # delta credited to the template-context column (no cause)

    @property
    def top_cause(self) -> str | None:
        return self.causes[0].code if self.causes else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe (NaN and infinities become None) plain data, for the API and stored reports."""
        data: dict[str, Any] = json_safe(asdict(self), infinity="null")
        return data


def explain(model: AttributionModel, runs: pd.DataFrame, mode: Mode = "causes") -> list[Explanation]:
    """Explain every run (row) of ``runs`` (columns: template, runtime, features) against its template."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    runs = runs.reset_index(drop=True)
    n = len(runs)
    if n == 0:
        return []
    enc = model.encoder
    num, cat, rb = model.frames(runs)
    X_run = enc.matrix(num, cat, rb)
    X_base = enc.matrix(rb.values, rb.modes, rb)
    causes = FEATURES.by_cause(model.features)
    codes = list(causes)
    blocks = [X_run, X_base]
    if mode == "causes":
        for c in codes:
            cols = enc.cause_columns(causes[c])
            minus = X_run.copy()
            minus[:, cols] = X_base[:, cols]
            plus = X_base.copy()
            plus[:, cols] = X_run[:, cols]
            blocks += [minus, plus]
    pred, contrib, per_tree = model.decomposer.decompose(np.vstack(blocks))
    scale = rb.runtime  # ratio -> seconds
    # Column contributions -> feature contributions.
    feat_index = {f: i for i, f in enumerate(model.features)}
    owner = np.array([feat_index.get(f, -1) if f else -1 for f in enc.column_feature])
    agg = np.zeros((len(enc.columns), len(model.features)))
    agg[owner >= 0, owner[owner >= 0]] = 1.0
    delta_cols = contrib[:n] - contrib[n : 2 * n]
    delta = (delta_cols @ agg) * scale[:, None]
    context_delta = delta_cols[:, owner < 0].sum(axis=1) * scale
    z = _zscores(model, num, cat, rb)
    effects = np.zeros((n, len(codes)))
    if mode == "causes":
        for j in range(len(codes)):
            minus = pred[(2 + 2 * j) * n : (3 + 2 * j) * n]
            plus = pred[(3 + 2 * j) * n : (4 + 2 * j) * n]
            effects[:, j] = 0.5 * ((pred[:n] - minus) + (plus - pred[n : 2 * n])) * scale
    out = []
    for i in range(n):
        out.append(
            _one(model, runs, i, mode, codes, causes, pred, per_tree, delta, context_delta, z, effects, num, cat, rb)
        )
    return out


def _zscores(model: AttributionModel, num: F64, cat: npt.NDArray[np.object_], rb: Any) -> F64:
    enc = model.encoder
    zn = (num - rb.center) / rb.scale
    zn = np.where(np.isnan(zn), 0.0, zn)
    changed = (cat != "") & (rb.modes != "") & (cat != rb.modes)
    zc = np.where(changed, Z_GATE, 0.0)
    # Back into model.features order.
    order = {f: i for i, f in enumerate(enc.numeric)}
    corder = {f: i for i, f in enumerate(enc.categorical)}
    cols = [zn[:, order[f]] if f in order else zc[:, corder[f]] for f in model.features]
    return np.stack(cols, axis=1) if cols else np.zeros((len(num), 0))


def slow_way_z(zs: npt.ArrayLike, members: Sequence[str]) -> float:
    """How far a cause's members moved the way that can slow a run: +z for "higher" features, |z| otherwise."""
    pairs = zip(np.asarray(zs, dtype=np.float64), members, strict=True)
    moved = [float(zk) if FEATURES[f].direction == "higher" else abs(float(zk)) for zk, f in pairs]
    return max([0.0, *moved])


def fast_way_z(zs: npt.ArrayLike, members: Sequence[str]) -> float:
    """How far a cause's members moved the way that can save time: -z for "higher" features, |z| otherwise."""
    pairs = zip(np.asarray(zs, dtype=np.float64), members, strict=True)
    moved = [-float(zk) if FEATURES[f].direction == "higher" else abs(float(zk)) for zk, f in pairs]
    return max([0.0, *moved])


def cause_tiers(
    effects: dict[str, float], slow_z: dict[str, float], *, slowdown_s: float, baseline_s: float
) -> dict[str, int]:
    """Each cause's tier (0, 1 or 2) in the default mode's order; see the module docstring."""
    floor = max(MIN_EFFECT_SHARE * max(slowdown_s, 0.0), MIN_EFFECT_BASELINE_SHARE * max(baseline_s, 0.0), 1e-9)

    def tier(c: str) -> int:
        if effects[c] < floor:
            return 2
        return 0 if slow_z[c] >= Z_GATE else 1 if slow_z[c] >= Z_MOVED else 2

    return {c: tier(c) for c in effects}


def rank_causes(
    effects: dict[str, float], slow_z: dict[str, float], *, slowdown_s: float, baseline_s: float
) -> list[str]:
    """Cause codes in the default mode's order: the three tiers of the module docstring, by effect within each."""
    tiers = cause_tiers(effects, slow_z, slowdown_s=slowdown_s, baseline_s=baseline_s)
    return sorted(effects, key=lambda c: (tiers[c], -effects[c]))


def _one(
    model: AttributionModel,
    runs: pd.DataFrame,
    i: int,
    mode: Mode,
    codes: Sequence[str],
    causes: dict[str, list[str]],
    pred: F64,
    per_tree: F64,
    delta: F64,
    context_delta: F64,
    z: F64,
    effects: F64,
    num: F64,
    cat: npt.NDArray[np.object_],
    rb: Any,
) -> Explanation:
    n = len(runs)
    enc = model.encoder
    base_rt = float(rb.runtime[i])
    actual = float(runs.at[i, "runtime"])
    predicted = float(pred[i]) * base_rt
    fidx = {f: k for k, f in enumerate(model.features)}
    nidx = {f: k for k, f in enumerate(enc.numeric)}
    cidx = {f: k for k, f in enumerate(enc.categorical)}

    def member(f: str) -> FeatureEffect:
        k = fidx[f]
        if f in nidx:
            v, b = float(num[i, nidx[f]]), float(rb.values[i, nidx[f]])
            value: float | str = v
            base: float | str = b
        else:
            value, base = str(cat[i, cidx[f]]), str(rb.modes[i, cidx[f]])
        return FeatureEffect(f, FEATURES[f].unit, value, base, float(z[i, fidx[f]]), float(delta[i, k]))

    # Unusual the slow way only: a value far below usual (less data, less GC) is no reason the run was slower.
    unusual = {c: slow_way_z(z[i, [fidx[f] for f in causes[c]]], causes[c]) >= Z_GATE for c in codes}
    if mode == "paper":
        feat_order = [model.features[k] for k in np.argsort(-delta[i], kind="stable")]
    elif mode == "zscore":
        feat_order = [model.features[k] for k in np.argsort(-np.abs(z[i]), kind="stable")]
    else:
        feat_order = [model.features[k] for k in np.argsort(-delta[i], kind="stable")]
    if mode == "causes":
        eff = {c: float(effects[i, j]) for j, c in enumerate(codes)}
        slow_z = {c: slow_way_z(z[i, [fidx[f] for f in causes[c]]], causes[c]) for c in codes}
        slowdown = max(actual - base_rt, float(pred[i] - pred[n + i]) * base_rt, 0.0)
        tiers = cause_tiers(eff, slow_z, slowdown_s=slowdown, baseline_s=base_rt)
        cause_order = sorted(codes, key=lambda c: (tiers[c], -eff[c]))
        evidence = any(t < 2 for t in tiers.values())
    else:
        evidence = True
        eff = {c: float(sum(delta[i, fidx[f]] for f in causes[c])) for c in codes}
        cause_order = list(dict.fromkeys(FEATURES[f].cause for f in feat_order))
    ranked = []
    for c in cause_order:
        members = sorted((member(f) for f in causes[c]), key=lambda m: -abs(m.delta_s))
        cause = CAUSES[c]
        ranked.append(CauseEffect(c, cause.label, cause.tag, eff[c], unusual[c], members))
    predicted_base = float(pred[n + i]) * base_rt
    conf = assess(actual, predicted, per_tree[i] * base_rt, model.confidence, predicted_base)
    if mode == "causes" and not evidence and actual > base_rt * (1 + SLOWER_SHARE) and conf.level != "low":
        # Slower, yet no measured feature moved the way that slows a run: whatever the model's fit, the cause
        # is outside the features (found on the demo: a stage doing 3.5x the work per row rated High).
        conf = replace(conf, level="low", message=NO_EVIDENCE)
    return Explanation(
        template=str(runs.at[i, "template"]),
        mode=mode,
        actual_s=actual,
        predicted_s=predicted,
        baseline_s=base_rt,
        predicted_baseline_s=predicted_base,
        confidence=conf,
        causes=ranked,
        features=feat_order,
        baseline_borrowed=bool(rb.borrowed[i]),
        donors=rb.donors[i],
        context_delta_s=float(context_delta[i]),
    )
