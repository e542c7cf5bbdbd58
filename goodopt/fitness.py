"""The p-norm ("power mean") fitness and Pollux's re-allocation factor.

``F_p(S) = (sum_j w_j (S_j + eps)^p / sum_j w_j)^(1/p)``; ``p = 0`` is the
weighted geometric mean, ``p = -inf`` the minimum and ``p = +inf`` the maximum.
``p = 1`` maximises total speedup (utilitarian), ``p -> -inf`` is max-min fair.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .arrays import Array, ArrayIn, ArrayOut
from .errors import ShapeError, ValidationError

#: Below this |p| (and p != 0) power means use their second-order expansion around p = 0:
#: ``expm1(p x) / p`` loses every digit once ``p x`` underflows (p = 5e-324 gave a mean of 1.47 for
#: values 1, 2, 4), while the expansion's next term is below 1e-15 relative for |log v| < 700.
TINY_P = 1e-12


def check_p(p: Any) -> float:  # Any: a user's value, checked here
    """Validate the fairness exponent ``p`` (any real number or +-inf, not NaN)."""
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise ValidationError("p", f"must be a number (or 'inf' / '-inf'), got {p!r}") from None
    if np.isnan(value):
        raise ValidationError("p", "must not be NaN", "use a real number or -inf")
    return value


def power_mean(values: ArrayIn, p: Any, weights: ArrayIn | None = None, axis: int = -1) -> ArrayOut:  # Any: arrays or scalars (numpy broadcasting); p checked here
    """Weighted power mean of positive values along ``axis``.

    ``values`` must be > 0 when ``p <= 0`` (use ``S + eps``) and >= 0 otherwise.
    Weights must be > 0 and broadcast against ``values``.

    Shapes: values (..., J), weights (J,) or broadcastable -> (...,).
    """
    p = check_p(p)
    v = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    if p <= 0 and np.any(v <= 0):
        raise ValidationError("values", f"must be > 0 for p = {p}", "add a small eps to speedups")
    if np.any(v < 0) or np.any(np.isnan(v)):
        raise ValidationError("values", "must be >= 0 and not NaN")
    w = np.ones(v.shape[-1]) if weights is None else np.asarray(weights, dtype=float)
    if np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise ValidationError("weights", "must be finite and > 0", "drop jobs instead of weighting them 0")
    try:
        np.broadcast_shapes(w.shape, v.shape)
    except ValueError:
        raise ShapeError(f"weights of shape {w.shape} do not broadcast against values {v.shape}") from None
    return _power_mean_last(v, p, w)


def _power_mean_last(v: Array, p: float, w: ArrayIn) -> Any:
    """Power mean over the last axis without validation (the hot path).

    Shapes: v (..., J), w broadcastable to v -> (...,).
    """
    if p == -np.inf:
        return v.min(axis=-1)
    if p == np.inf:
        return v.max(axis=-1)
    wsum = np.sum(w, axis=-1)
    if p == 0:
        return np.exp(np.sum(w * np.log(v), axis=-1) / wsum)
    if p == 1:
        return np.sum(w * v, axis=-1) / wsum
    if p == -1:
        return wsum / np.sum(w / v, axis=-1)
    if abs(p) < TINY_P:
        # log F = (1/p) log mean_w(exp(p x)) = mean(x) + p var(x) / 2 + O(p^2)
        logv = np.log(v)
        mu = np.sum(w * logv, axis=-1) / wsum
        var = np.sum(w * (logv - np.asarray(mu)[..., None]) ** 2, axis=-1) / wsum
        return np.exp(mu + 0.5 * p * var)
    # Stable for every finite p != 0, tiny |p| included: with x = log(v / c) and c the
    # max (p > 0) or min (p < 0), p * x <= 0 and
    # log F = log c + log1p(mean_w(expm1(p * x))) / p.
    logv = np.log(v)
    c = logv.max(axis=-1, keepdims=True) if p > 0 else logv.min(axis=-1, keepdims=True)
    m = np.sum(w * np.expm1(p * (logv - c)), axis=-1) / wsum
    return np.exp(c[..., 0] + np.log1p(m) / p)


def realloc_factor(age_s: ArrayIn, n_reallocs: ArrayIn, restart_delay_s: float) -> Array:
    """Pollux's re-allocation factor ``max(T - R*delta, 0) / (T + delta)``.

    The fraction of a job's lifetime it would have spent making progress if it
    were restarted once more. It multiplies the speedup of every candidate
    allocation that changes the job's current allocation. A job of age 0 gets
    factor 0 (any start costs more than its whole history); with ``delta = 0``
    the factor is 1.

    Shapes: broadcast(age_s, n_reallocs) -> same.
    """
    age = np.asarray(age_s, dtype=float)
    r = np.asarray(n_reallocs, dtype=float)
    delta = float(restart_delay_s)
    denom = age + delta
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.maximum(age - r * delta, 0.0) / denom
    return np.where(denom > 0, out, 1.0)
