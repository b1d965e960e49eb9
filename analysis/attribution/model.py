"""The runtime model: one global random forest over all templates (Griffin §4.3, the paper's choice).

Target: the run's runtime divided by its template's baseline runtime (its "slowdown ratio"), not raw seconds.
Templates differ by orders of magnitude in runtime and the effects of GC, stragglers or fewer executors are
multiplicative, so on the ratio one global forest learns each effect once for all templates. Predictions and
contributions are multiplied back by the template's baseline runtime, so everything shown is in seconds.

Columns the forest sees, per registry feature present in training:
- numeric: the value (log1p for bytes, counts and seconds; raw for shares) and the same minus the template's
  baseline value ("how far from usual");
- categorical: a deterministic code (index in the sorted vocabulary seen in training; unseen -1) and a 0/1
  "differs from the template's usual value";
- one context column, log of the template's baseline runtime (identical for a run and its baseline, so it is
  no cause; its share of a delta is reported as "template context").
Absent values read as the template's baseline ("as usual"), so an absent feature is never blamed.
"""

from __future__ import annotations

import math
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd  # type: ignore[import-untyped]
from sklearn.ensemble import RandomForestRegressor  # type: ignore[import-untyped]

from analysis.attribution.baselines import Baselines, RunBaselines, compute_baselines
from analysis.attribution.confidence import ConfidenceThresholds, tune
from analysis.attribution.explain import Decomposer
from analysis.attribution.features import FEATURES, FORMAT_VERSION, FeatureError

F64 = npt.NDArray[np.float64]
RESERVED = ("template", "runtime", "run_id", "started_at")
CONTEXT = "template_baseline_log_runtime"
MIN_BOOTSTRAP_RUNS = 100  # each tree sees at least this many runs (or all of a smaller history)
DEFAULT_PARAMS: dict[str, Any] = {
    # 60 trees of depth <= 20 on half-size bootstrap samples: fits 100k runs in well under a minute on 2
    # cores, ~6k leaves per tree (explain < 20 ms); min_samples_leaf=5 keeps the pickle small (algorithms.md).
    "n_estimators": 60,
    "max_depth": 20,
    "min_samples_leaf": 5,
    "max_features": 0.33,
    "max_samples": 0.5,
}


@dataclass
class Encoder:
    numeric: list[str]
    categorical: list[str]
    vocab: dict[str, dict[str, int]]
    log1p: npt.NDArray[np.bool_] = field(init=False)
    seconds: npt.NDArray[np.bool_] = field(init=False)
    columns: list[str] = field(init=False)
    column_feature: list[str | None] = field(init=False)

    def __post_init__(self) -> None:
        self.log1p = np.array([FEATURES[n].transform == "log1p" for n in self.numeric], dtype=bool)
        self.seconds = np.array([FEATURES[n].unit == "s" for n in self.numeric], dtype=bool)
        cols: list[str] = []
        owner: list[str | None] = []
        for n in self.numeric:
            cols += [n, f"{n}__vs_baseline"]
            owner += [n, n]
        for n in self.categorical:
            cols += [f"{n}__code", f"{n}__changed"]
            owner += [n, n]
        cols.append(CONTEXT)
        owner.append(None)
        self.columns, self.column_feature = cols, owner

    def _t(self, a: F64) -> F64:
        out = a.copy()
        out[:, self.log1p] = np.log1p(np.clip(a[:, self.log1p], 0.0, None))
        return out

    def numeric_values(self, frame: pd.DataFrame) -> F64:
        if not self.numeric:
            return np.zeros((len(frame), 0))
        return frame[self.numeric].to_numpy(dtype=np.float64, na_value=np.nan)

    def categorical_values(self, frame: pd.DataFrame) -> npt.NDArray[np.object_]:
        out = np.empty((len(frame), len(self.categorical)), dtype=object)
        for c, n in enumerate(self.categorical):
            col = frame[n]
            out[:, c] = ["" if (v is None or (isinstance(v, float) and np.isnan(v))) else str(v) for v in col]
        return out

    def matrix(self, num: F64, cat: npt.NDArray[np.object_], rb: RunBaselines) -> F64:
        """Model columns for runs with raw numeric values ``num`` and categorical values ``cat``."""
        n = len(num)
        tb = self._t(rb.values)
        tx = self._t(num)
        absv = np.where(np.isnan(tx), tb, tx)
        absv = np.where(np.isnan(absv), 0.0, absv)
        rel = np.where(np.isnan(tx) | np.isnan(tb), 0.0, tx - tb)
        # Waits add seconds, not a factor: their excess over baseline counts as a share of the usual runtime.
        rel[:, self.seconds] = np.where(
            np.isnan(num[:, self.seconds]) | np.isnan(rb.values[:, self.seconds]),
            0.0,
            (num[:, self.seconds] - rb.values[:, self.seconds]) / rb.runtime[:, None],
        )
        X = np.empty((n, len(self.columns)))
        k = len(self.numeric)
        X[:, 0 : 2 * k : 2] = absv
        X[:, 1 : 2 * k : 2] = rel
        for c, name in enumerate(self.categorical):
            voc = self.vocab[name]
            vals = cat[:, c]
            mode = rb.modes[:, c]
            eff = np.where(vals == "", mode, vals)
            X[:, 2 * k + 2 * c] = [voc.get(v, -1) for v in eff]
            X[:, 2 * k + 2 * c + 1] = (vals != "") & (mode != "") & (vals != mode)
        X[:, -1] = np.log(rb.runtime)
        return X

    def cause_columns(self, names: list[str]) -> npt.NDArray[np.int64]:
        wanted = set(names)
        return np.array([i for i, f in enumerate(self.column_feature) if f in wanted], dtype=np.int64)


@dataclass
class AttributionModel:
    """A trained model with everything needed to explain runs later; pickles with joblib/pickle."""

    forest: RandomForestRegressor
    encoder: Encoder
    baselines: Baselines
    decomposer: Decomposer
    confidence: ConfidenceThresholds
    params: dict[str, Any]
    features: list[str]
    target: str
    mare: float  # template-normalized MARE (paper Eq. 11) on the held-out split
    n_train: int
    n_holdout: int
    n_templates: int
    training_window: tuple[str, str] | None
    trained_at: float
    train_seconds: float
    size_bytes: int = 0
    format_version: int = FORMAT_VERSION

    def frames(self, df: pd.DataFrame) -> tuple[F64, npt.NDArray[np.object_], RunBaselines]:
        full = _with_all_features(df, self.features)
        rb = self.baselines.resolve([str(t) for t in full["template"]], full)
        return self.encoder.numeric_values(full), self.encoder.categorical_values(full), rb

    def design(self, df: pd.DataFrame) -> tuple[F64, RunBaselines]:
        num, cat, rb = self.frames(df)
        return self.encoder.matrix(num, cat, rb), rb

    def predict_seconds(self, df: pd.DataFrame) -> F64:
        X, rb = self.design(df)
        return np.asarray(self.forest.predict(X), dtype=np.float64) * rb.runtime

    def summary(self) -> dict[str, Any]:
        """Plain facts to store with a model version."""
        return {
            "format_version": self.format_version,
            "params": dict(self.params),
            "features": list(self.features),
            "target": self.target,
            "mare": self.mare,
            "n_train": self.n_train,
            "n_holdout": self.n_holdout,
            "n_templates": self.n_templates,
            "training_window": self.training_window,
            "trained_at": self.trained_at,
            "train_seconds": self.train_seconds,
            "size_bytes": self.size_bytes,
            "confidence": {
                "low_error": self.confidence.low_error,
                "high_error": self.confidence.high_error,
                "interval": list(self.confidence.interval),
                "tuned_on": self.confidence.tuned_on,
                "min_explained_share": self.confidence.min_explained_share,
                "high_allowed": self.confidence.high_allowed,
                "calibration_runs": self.confidence.calibration_runs,
                "calibration_high": self.confidence.calibration_high,
                "calibration_wrong_high": self.confidence.calibration_wrong_high,
                "calibration_top1": self.confidence.calibration_top1,
            },
        }


def check_runs(df: pd.DataFrame) -> list[str]:
    """The registry features present in ``df`` (registry order); rejects unknown columns and bad runtimes."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError("runs must be a pandas DataFrame")
    for col in ("template", "runtime"):
        if col not in df.columns:
            raise ValueError(f"runs need a {col!r} column")
    feats = FEATURES.check(c for c in df.columns if c not in RESERVED)
    rt = pd.to_numeric(df["runtime"], errors="coerce").to_numpy(dtype=np.float64)
    if len(rt) and not (np.isfinite(rt) & (rt > 0)).all():
        raise ValueError("runtime must be a finite number of seconds > 0 for every run")
    return feats


def _with_all_features(df: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    check_runs(df)
    missing = [f for f in features if f not in df.columns]
    if not missing:
        return df
    extra = {f: ("" if FEATURES[f].categorical else np.nan) for f in missing}
    return df.assign(**extra)


def mare(model: AttributionModel, df: pd.DataFrame) -> float:
    """Template-normalized mean absolute ratio error (Griffin Eq. 11): mean |pred - actual| / template baseline."""
    X, rb = model.design(df)
    pred = np.asarray(model.forest.predict(X), dtype=np.float64) * rb.runtime
    return float(np.mean(np.abs(pred - df["runtime"].to_numpy(dtype=np.float64)) / rb.runtime))


def split_runs(df: pd.DataFrame, holdout: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (training, held-out) split ``train`` uses: each run held out with probability ``holdout``."""
    df = df.reset_index(drop=True)
    is_ho = np.random.default_rng(seed).random(len(df)) < holdout
    return df[~is_ho].reset_index(drop=True), df[is_ho].reset_index(drop=True)


def train(
    df: pd.DataFrame,
    *,
    params: dict[str, Any] | None = None,
    holdout: float = 0.2,
    min_runs: int = 5,
    k: int = 3,
    seed: int = 0,
    n_jobs: int = 2,
    training_window: tuple[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    calibrate_high: bool = True,
) -> AttributionModel:
    """Fit the global forest on a random (1 - holdout) of the runs; MARE and confidence from the rest.

    ``progress`` is called with the name of each step as it starts (baselines, fit, holdout, calibrate, done), for
    a command's progress bar. ``calibrate_high`` False skips the calibration of High (the model then never says
    High; ``analysis.attribution.calibration``).
    """
    step = progress or (lambda _name: None)
    feats = check_runs(df)
    if not feats:
        raise FeatureError("runs have no feature columns")
    if not 0 < holdout < 1:
        raise ValueError("holdout must be in (0, 1)")
    t0 = time.perf_counter()
    p = {**DEFAULT_PARAMS, **(params or {})}
    df = df.reset_index(drop=True)
    tr, ho = split_runs(df, holdout, seed)
    if len(ho) == 0 or len(tr) == 0:
        raise ValueError("too few runs to hold some out")
    numeric = [f for f in feats if not FEATURES[f].categorical]
    categorical = [f for f in feats if FEATURES[f].categorical]
    step("baselines")
    baselines = compute_baselines(tr, numeric, categorical, min_runs=min_runs, k=k)
    vocab = {}
    for n in categorical:
        vals = sorted({str(v) for v in tr[n].dropna() if str(v) != ""})
        vocab[n] = {v: i for i, v in enumerate(vals)}
    enc = Encoder(numeric, categorical, vocab)
    if isinstance(p.get("max_samples"), float):
        # As a count: a fraction of a small history gives trees too few runs each (sklearn warns below ~100).
        p["max_samples"] = min(len(tr), max(math.ceil(p["max_samples"] * len(tr)), MIN_BOOTSTRAP_RUNS))
    forest = RandomForestRegressor(**p, n_jobs=n_jobs, random_state=seed)
    model = AttributionModel(
        forest=forest,
        encoder=enc,
        baselines=baselines,
        decomposer=Decomposer.empty(),
        confidence=ConfidenceThresholds(0.0, 0.0),
        params=p,
        features=feats,
        target="runtime / template baseline runtime",
        mare=float("nan"),
        n_train=len(tr),
        n_holdout=len(ho),
        n_templates=len(baselines.templates),
        training_window=training_window,
        trained_at=time.time(),
        train_seconds=0.0,
    )
    # Runs of templates with a borrowed baseline teach nothing reliable about "usual": their ratio to a
    # neighbour's runtime mixes the template difference into every effect. They are explained, not learned.
    tr = tr[~baselines.borrowed[[baselines.index[str(t)] for t in tr["template"]]]].reset_index(drop=True)
    ho_own = np.array(
        [str(t) in baselines.index and not baselines.borrowed[baselines.index[str(t)]] for t in ho["template"]]
    )
    ho = ho[ho_own].reset_index(drop=True)
    if len(ho) == 0:
        raise ValueError("no held-out run of a template with its own baseline")
    model.n_train, model.n_holdout = len(tr), len(ho)
    step("fit")
    X, rb = model.design(tr)
    forest.fit(X, tr["runtime"].to_numpy(dtype=np.float64) / rb.runtime)
    forest.n_jobs = 1  # one explanation at a time: joblib overhead would dominate (algorithms.md)
    model.decomposer = Decomposer(forest)
    step("holdout")
    Xh, rbh = model.design(ho)
    actual = ho["runtime"].to_numpy(dtype=np.float64)
    pred = np.asarray(forest.predict(Xh), dtype=np.float64) * rbh.runtime
    model.mare = float(np.mean(np.abs(pred - actual) / rbh.runtime))
    errors = np.abs(pred - actual) / actual
    model.confidence = tune(errors)
    if calibrate_high:
        step("calibrate")
        from analysis.attribution.calibration import calibrate  # it explains, and explain imports this module's type

        model.confidence = calibrate(model, ho, held_out_errors=errors, seed=seed)
    model.train_seconds = time.perf_counter() - t0
    model.size_bytes = len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    step("done")
    return model
