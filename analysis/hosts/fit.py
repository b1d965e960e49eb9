"""Candidate distributions of a host's z-scores, fitted for every host at once and chosen by Anderson-Darling.

The nine candidates are the paper's (Section III.C), as scipy distributions with their parameter order:

=============  ====================  ============================
name           scipy                 parameters (shape..., loc, scale)
=============  ====================  ============================
``fisk3``      ``fisk``              c, loc, scale (3-parameter log-logistic)
``lognorm3``   ``lognorm``           s, loc, scale
``norm``       ``norm``              loc, scale
``expon2``     ``expon``             loc, scale (2-parameter exponential)
``weibull3``   ``weibull_min``       c, loc, scale
``gumbel_r``   ``gumbel_r``          loc, scale (largest extreme value)
``gumbel_l``   ``gumbel_l``          loc, scale (smallest extreme value)
``gamma3``     ``gamma``             a, loc, scale
``fisk2``      ``fisk``              c, 0, scale (2-parameter log-logistic: positive data only, so on
                                     z-scores, which are negative for fast tasks, it is rarely admissible)
=============  ====================  ============================

**Fast path (the default, all hosts at once).** Parameters come in closed form per host, vectorized over
hosts: moments for norm, the Gumbels and gamma3; three quantiles (10/50/90%) for fisk3, lognorm3 and weibull3
(the last by a vectorized bisection); the exact MLE for expon2 and fisk2 (on log x). Scipy's own MLE takes
80-125 ms per host for the nine families (17-26 min per core for 12.5k hosts) and degenerates for the
3-parameter Weibull and gamma (loc pinned at the sample minimum). The Anderson-Darling statistic is computed
on a per-host Bernoulli sample bounded to about ``max_ad_tasks`` tasks, with closed-form log-CDFs (scipy's
generic ``logcdf`` costs 1.4-17 s per 10M points). ``fit_full`` is the slow reference: scipy MLE started
from the fast estimates, keeping whichever of the two fits has the lower A². benchmarks/stragglers measures
the fast path against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy import special, stats  # type: ignore[import-untyped]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FAMILIES: Final = ("fisk3", "lognorm3", "norm", "expon2", "weibull3", "gumbel_r", "gumbel_l", "gamma3", "fisk2")
SCIPY: Final[dict[str, stats.rv_continuous]] = {
    "fisk3": stats.fisk,
    "lognorm3": stats.lognorm,
    "norm": stats.norm,
    "expon2": stats.expon,
    "weibull3": stats.weibull_min,
    "gumbel_r": stats.gumbel_r,
    "gumbel_l": stats.gumbel_l,
    "gamma3": stats.gamma,
    "fisk2": stats.fisk,
}
SHAPED: Final = frozenset({"fisk3", "lognorm3", "weibull3", "gamma3", "fisk2"})
LOG_FLOOR: Final = -700.0  # exp(-700) ~ 1e-304: a point outside the support gives a large finite A², not inf
_EULER: Final = 0.5772156649015329
_Z90: Final = float(stats.norm.ppf(0.9))
_WB_A: Final = np.array([-np.log1p(-p) for p in (0.1, 0.5, 0.9)])  # -ln(1-p) at the three quantiles


@dataclass(frozen=True, slots=True)
class Params:
    """One family's parameters for many hosts: (shape, loc, scale), shape NaN for the 2-parameter families,
    and all NaN where the family cannot describe the host's sample (then its A² is +inf)."""

    shape: FloatArray
    loc: FloatArray
    scale: FloatArray

    def take(self, idx: IntArray) -> Params:
        return Params(self.shape[idx], self.loc[idx], self.scale[idx])

    def args(self, family: str, i: int) -> tuple[float, ...]:
        """scipy positional arguments for host ``i``."""
        if family in SHAPED:
            return (float(self.shape[i]), float(self.loc[i]), float(self.scale[i]))
        return (float(self.loc[i]), float(self.scale[i]))


@dataclass(frozen=True, slots=True)
class HostSummary:
    """Per-host sample statistics the fast fits need, from host-sorted z-scores."""

    n: IntArray
    mean: FloatArray
    std: FloatArray  # ddof=1
    skew: FloatArray  # moment skewness (biased)
    minimum: FloatArray
    q10: FloatArray
    q50: FloatArray
    q90: FloatArray
    log_mean: FloatArray  # of ln x, NaN when any x <= 0
    log_std: FloatArray


def segment_quantile(sorted_x: FloatArray, start: IntArray, n: IntArray, p: float) -> FloatArray:
    """Linear-interpolated quantile (numpy's default) of each sorted segment [start, start+n)."""
    pos = p * (n - 1).astype(np.float64)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    a = sorted_x[start + lo]
    b = sorted_x[start + hi]
    return np.asarray(a + (b - a) * frac, dtype=np.float64)


def summarize(sorted_x: FloatArray, seg: IntArray, start: IntArray, n: IntArray) -> HostSummary:
    """Statistics of every host's segment; ``seg`` is the host index of each element of ``sorted_x``."""
    nh = n.shape[0]
    nf = n.astype(np.float64)
    mean = np.bincount(seg, weights=sorted_x, minlength=nh) / nf
    d = sorted_x - mean[seg]
    m2 = np.bincount(seg, weights=d * d, minlength=nh)
    m3 = np.bincount(seg, weights=d * d * d, minlength=nh)
    var_b = m2 / nf
    std = np.sqrt(np.divide(m2, nf - 1, out=np.full(nh, np.nan), where=nf > 1))
    skew = np.divide(m3 / nf, var_b**1.5, out=np.zeros(nh), where=var_b > 0)
    positive = sorted_x[start] > 0
    lx = np.log(np.where(sorted_x > 0, sorted_x, 1.0))
    lmean = np.bincount(seg, weights=lx, minlength=nh) / nf
    ld = lx - lmean[seg]
    lstd = np.sqrt(np.divide(np.bincount(seg, weights=ld * ld, minlength=nh), nf - 1, out=np.zeros(nh), where=nf > 1))
    return HostSummary(
        n=n,
        mean=mean,
        std=std,
        skew=skew,
        minimum=sorted_x[start],
        q10=segment_quantile(sorted_x, start, n, 0.1),
        q50=segment_quantile(sorted_x, start, n, 0.5),
        q90=segment_quantile(sorted_x, start, n, 0.9),
        log_mean=np.where(positive, lmean, np.nan),
        log_std=np.where(positive, lstd, np.nan),
    )


def _weibull_shape(r: FloatArray) -> FloatArray:
    """c with (a9^(1/c) - a5^(1/c)) / (a5^(1/c) - a1^(1/c)) = r, by bisection on log c (decreasing in c)."""
    lo = np.full(r.shape, np.log(0.05))
    hi = np.full(r.shape, np.log(500.0))
    a1, a5, a9 = _WB_A
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        k = np.exp(-mid)  # 1/c
        ratio = (a9**k - a5**k) / (a5**k - a1**k)
        too_high = ratio > r  # c too small
        lo = np.where(too_high, mid, lo)
        hi = np.where(too_high, hi, mid)
    return np.asarray(np.exp(0.5 * (lo + hi)), dtype=np.float64)


def fast_params(s: HostSummary) -> dict[str, Params]:
    """Closed-form parameters of every family for every host (see the module docstring)."""
    nh = s.n.shape[0]
    nan = np.full(nh, np.nan)
    nf = s.n.astype(np.float64)
    sd = np.where(s.std > 0, s.std, np.nan)
    # Lower-bounded families must keep every point inside their support: loc just below the minimum.
    below_min = s.minimum - 1e-6 * np.nan_to_num(sd, nan=1.0)
    out: dict[str, Params] = {"norm": Params(nan.copy(), s.mean.copy(), sd)}

    scale_e = (s.mean - s.minimum) * nf / np.maximum(nf - 1, 1)
    out["expon2"] = Params(nan.copy(), s.minimum - scale_e / nf, np.where(scale_e > 0, scale_e, np.nan))

    g_scale = sd * np.sqrt(6.0) / np.pi
    out["gumbel_r"] = Params(nan.copy(), s.mean - _EULER * g_scale, g_scale)
    out["gumbel_l"] = Params(nan.copy(), s.mean + _EULER * g_scale, g_scale)

    up = s.q90 - s.q50
    down = s.q50 - s.q10
    r = np.divide(up, down, out=np.full(nh, np.nan), where=down > 0)
    right_skewed = r > 1.0 + 1e-9
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.log(9.0) / np.log(r)
        f_scale = up / (9.0 ** (1.0 / c) - 1.0)
        f_loc = np.minimum(s.q50 - f_scale, below_min)
        out["fisk3"] = Params(*(np.where(right_skewed, v, np.nan) for v in (c, f_loc, f_scale)))
        sig = np.log(r) / _Z90
        l_scale = up / (np.exp(sig * _Z90) - 1.0)
        l_loc = np.minimum(s.q50 - l_scale, below_min)
        out["lognorm3"] = Params(*(np.where(right_skewed, v, np.nan) for v in (sig, l_loc, l_scale)))

        valid_wb = np.isfinite(r) & (r > 0.64)  # the ratio tends to 0.637 as c grows: below that no Weibull
        wc = _weibull_shape(np.where(valid_wb, r, 1.0))
        k = 1.0 / wc
        a1, _a5, a9 = _WB_A
        w_scale = (s.q90 - s.q10) / (a9**k - a1**k)
        w_loc = np.minimum(s.q10 - w_scale * a1**k, below_min)
        out["weibull3"] = Params(*(np.where(valid_wb & (w_scale > 0), v, np.nan) for v in (wc, w_loc, w_scale)))

        skewed = s.skew > 0.05  # a symmetric sample is the normal's; gamma's shape would run to infinity
        a = 4.0 / s.skew**2
        ga_scale = sd * s.skew / 2.0
        ga_loc = np.minimum(s.mean - a * ga_scale, below_min)
        out["gamma3"] = Params(*(np.where(skewed, v, np.nan) for v in (a, ga_loc, ga_scale)))

        ll_ok = np.isfinite(s.log_mean) & (s.log_std > 0)
        ll_c = np.pi / (np.sqrt(3.0) * s.log_std)
        out["fisk2"] = Params(
            np.where(ll_ok, ll_c, np.nan), np.where(ll_ok, 0.0, np.nan), np.where(ll_ok, np.exp(s.log_mean), np.nan)
        )
    return out


def _log1mexp(t: FloatArray) -> FloatArray:
    """log(1 - exp(-t)) for t >= 0."""
    return np.asarray(np.log(-np.expm1(-t)), dtype=np.float64)


def log_cdf_sf(family: str, x: FloatArray, p: Params) -> tuple[FloatArray, FloatArray]:
    """(log F(x), log S(x)) elementwise, closed forms equal to scipy's (tested), floored at LOG_FLOOR.

    ``p`` holds one parameter set per element of ``x``. NaN parameters give LOG_FLOOR for both.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        y = (x - p.loc) / p.scale
        if family == "norm":
            lf, ls = special.log_ndtr(y), special.log_ndtr(-y)
        elif family == "gumbel_r":
            e = np.exp(-y)
            lf, ls = -e, _log1mexp(e)
        elif family == "gumbel_l":
            e = np.exp(y)
            lf, ls = _log1mexp(e), -e
        else:
            pos = y > 0
            yp = np.where(pos, y, 1.0)
            if family in ("fisk3", "fisk2"):
                ly = p.shape * np.log(yp)
                # log F = -log1p(y^-c), log S = -log1p(y^c), with one exp and one log1p, stable both ways
                common = -np.log1p(np.exp(-np.abs(ly)))
                lf, ls = common + np.minimum(ly, 0.0), common - np.maximum(ly, 0.0)
            elif family == "lognorm3":
                u = np.log(yp) / p.shape
                lf, ls = special.log_ndtr(u), special.log_ndtr(-u)
            elif family == "expon2":
                lf, ls = _log1mexp(yp), -yp
            elif family == "weibull3":
                t = yp**p.shape
                lf, ls = _log1mexp(t), -t
            elif family == "gamma3":
                cdf = special.gammainc(p.shape, yp)
                lf, ls = np.log(cdf), np.log1p(-cdf)
                upper = cdf > 0.5  # the complement loses digits there: the (costly) upper function on those only
                ls[upper] = np.log(special.gammaincc(p.shape[upper], yp[upper]))
            else:
                raise ValueError(f"unknown family {family!r}")
            lf = np.where(pos, lf, -np.inf)
            ls = np.where(pos, ls, 0.0)
        bad = ~np.isfinite(p.scale) | (p.scale <= 0)
        if family in SHAPED:
            bad |= ~np.isfinite(p.shape) | (p.shape <= 0)
        lf = np.where(bad | np.isnan(lf), LOG_FLOOR, np.maximum(lf, LOG_FLOOR))
        ls = np.where(bad | np.isnan(ls), LOG_FLOOR, np.maximum(ls, LOG_FLOOR))
    return np.asarray(lf, dtype=np.float64), np.asarray(ls, dtype=np.float64)


def anderson_darling(
    family: str, sorted_x: FloatArray, seg: IntArray, rank: IntArray, n: IntArray, p: Params
) -> FloatArray:
    """A² of every host's sample against its fitted CDF, vectorized over all hosts.

    A² = -n - (1/n) Σ_i (2i-1) [log F(x_(i)) + log S(x_(n+1-i))]; the second sum is re-indexed as
    Σ_k (2n-2k+1) log S(x_(k)), so no reversal is needed. ``seg`` is each element's host, ``rank`` its
    1-based position in the host's sorted sample, ``n`` the sample size per host. Hosts whose parameters are
    NaN (the family cannot describe them) get +inf.
    """
    nh = n.shape[0]
    lf, ls = log_cdf_sf(family, sorted_x, p.take(seg))
    nseg = n[seg].astype(np.float64)
    rk = rank.astype(np.float64)
    w = (2.0 * rk - 1.0) * lf + (2.0 * nseg - 2.0 * rk + 1.0) * ls
    nf = n.astype(np.float64)
    a2 = -nf - np.bincount(seg, weights=w, minlength=nh) / np.maximum(nf, 1.0)
    invalid = ~np.isfinite(p.scale)
    return np.where(invalid | (n < 1), np.inf, a2)


def anderson_darling_one(
    sample: npt.ArrayLike, cdf_logs: Callable[[FloatArray], tuple[FloatArray, FloatArray]]
) -> float:
    """A² of one sample given a function returning (log F, log S) at the sorted sample (for tests/full fits)."""
    x = np.sort(np.asarray(sample, dtype=np.float64))
    n = x.shape[0]
    lf, ls = cdf_logs(x)
    lf = np.maximum(np.nan_to_num(lf, nan=LOG_FLOOR, neginf=LOG_FLOOR), LOG_FLOOR)
    ls = np.maximum(np.nan_to_num(ls, nan=LOG_FLOOR, neginf=LOG_FLOOR), LOG_FLOOR)
    i = np.arange(1, n + 1, dtype=np.float64)
    return float(-n - np.sum((2 * i - 1) * (lf + ls[::-1])) / n)


def scipy_args(family: str, shape: float, loc: float, scale: float) -> tuple[float, ...]:
    return (shape, loc, scale) if family in SHAPED else (loc, scale)


def _scipy_logs(
    dist: stats.rv_continuous, args: tuple[float, ...]
) -> Callable[[FloatArray], tuple[FloatArray, FloatArray]]:
    def logs(v: FloatArray) -> tuple[FloatArray, FloatArray]:
        return dist.logcdf(v, *args), dist.logsf(v, *args)

    return logs


def fit_full(sample: npt.ArrayLike) -> dict[str, tuple[float, tuple[float, ...]]]:
    """Slow reference for one host: family -> (A², scipy args), scipy MLE started from the fast estimates.

    Per family, the better (lower A²) of the MLE and the fast estimate is kept, since scipy's 3-parameter
    Weibull and gamma MLEs can degenerate. A² is computed with scipy's own logcdf/logsf here.
    """
    x = np.sort(np.asarray(sample, dtype=np.float64))
    n = np.array([x.shape[0]], dtype=np.int64)
    seg = np.zeros(x.shape[0], dtype=np.int64)
    summary = summarize(x, seg, np.array([0], dtype=np.int64), n)
    fast = fast_params(summary)
    out: dict[str, tuple[float, tuple[float, ...]]] = {}
    for family in FAMILIES:
        dist = SCIPY[family]
        candidates: list[tuple[float, ...]] = []
        fp = fast[family]
        if np.isfinite(fp.scale[0]):
            candidates.append(fp.args(family, 0))
        try:
            with np.errstate(all="ignore"):
                if family == "fisk2":
                    if x[0] > 0:
                        candidates.append(tuple(float(v) for v in dist.fit(x, floc=0.0)))
                elif candidates:
                    g = candidates[0]
                    candidates.append(tuple(float(v) for v in dist.fit(x, *g[:-2], loc=g[-2], scale=g[-1])))
                else:
                    candidates.append(tuple(float(v) for v in dist.fit(x)))
        except (ValueError, RuntimeError, FloatingPointError):
            pass
        best = (np.inf, candidates[0] if candidates else ())
        for args in candidates:
            with np.errstate(all="ignore"):
                a2 = anderson_darling_one(x, _scipy_logs(dist, args))
            if np.isfinite(a2) and a2 < best[0]:
                best = (a2, args)
        out[family] = best
    return out


def best_fit(sample: npt.ArrayLike) -> tuple[str, dict[str, float]]:
    """Fast-path family choice for one sample: (best family, family -> A²), A² on every point."""
    x = np.sort(np.asarray(sample, dtype=np.float64))
    n = np.array([x.shape[0]], dtype=np.int64)
    seg = np.zeros(x.shape[0], dtype=np.int64)
    rank = np.arange(1, x.shape[0] + 1, dtype=np.int64)
    params = fast_params(summarize(x, seg, np.array([0], dtype=np.int64), n))
    a2 = {f: float(anderson_darling(f, x, seg, rank, n, params[f])[0]) for f in FAMILIES}
    return min(a2, key=lambda f: a2[f]), a2
