"""Fitting application profiles to measured traces.

Throughput parameters are estimated per (application, GPU type) by nonlinear
least squares on log times (``scipy.optimize.least_squares``): the residuals are
``log T_c(model) - log (step_time - sync_time)`` and
``log T_step(model) - log step_time`` over every measured placement and
scalability row. The multi-node parameters are written as
``alpha_n = alpha_r + d_alpha``, ``beta_n = beta_r + d_beta`` with ``d >= 0``, so
a fit can never make inter-node synchronisation cheaper than intra-node; when no
multi-node row exists they are not identified and equal the intra-node ones
(reported). All parameters are bounded below by 0; ``gamma`` lies in [1, 10].

The gradient noise scale over training is ``phi = M0 * grad_var / grad_sqr`` per
epoch from each validation curve, combined across batch sizes by the median.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, minimize

from . import goodput as gp
from .arrays import ArrayIn
from .errors import FitError
from .goodput import ThroughputParams
from .profiles import AppProfile, GpuProfile
from .traces import SIA_CLUSTERS, TARGET_EPOCHS, measurements, read_validation, validation_dir

log = logging.getLogger(__name__)

#: Human-readable descriptions of the Pollux applications (from the traces' README).
APP_DESCRIPTIONS = {
    "bert": "BERT fine-tuning on SQuAD",
    "cifar10": "ResNet18 on CIFAR-10",
    "deepspeech2": "DeepSpeech2 on CMU-ARCTIC",
    "imagenet": "ResNet50 on ImageNet",
    "ncf": "NeuMF on MovieLens",
    "yolov3": "YOLOv3 on PASCAL VOC",
}
#: Per-GPU batch caps the Pollux paper imposed on top of the measurements.
LOCAL_BSZ_CAPS = {("yolov3", "t4"): 8}
_GAMMA_STARTS = (1.0, 1.5, 3.0, 6.0)


@dataclass(frozen=True)
class ThroughputFit:
    """Result of fitting one application on one GPU type."""

    params: ThroughputParams
    rms_log_step_time: float
    rms_log_compute_time: float
    n_points: int
    multi_node_identified: bool


def _predict(x: np.ndarray, local_bsz: Any, n_gpus: Any, multi: Any) -> tuple[Any, Any]:
    p = dict(zip(("alpha_c", "beta_c", "alpha_r", "beta_r"), x[:4]))
    p["alpha_n"] = x[2] + x[4]
    p["beta_n"] = x[3] + x[5]
    p["gamma"] = x[6]
    return gp.compute_time(p, local_bsz), gp.step_time(p, local_bsz, n_gpus, multi)


def fit_throughput(df: pd.DataFrame) -> ThroughputFit:
    """Fit the seven throughput parameters to measured step and sync times.

    ``df`` needs columns ``num_nodes``, ``num_replicas``, ``local_bsz``,
    ``step_time``, ``sync_time`` (as from :func:`goodopt.traces.measurements`).
    """
    need = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise FitError(f"measurements lack columns {missing}")
    d = df[need].astype(float)
    compute_obs = d["step_time"] - d["sync_time"]
    keep = (compute_obs > 0) & (d["step_time"] > 0) & (d["num_replicas"] >= 1)
    d, compute_obs = d[keep], compute_obs[keep]
    if len(d) < 7:
        raise FitError(f"need at least 7 usable measurements, got {len(d)}")
    m = d["local_bsz"].to_numpy()
    k = d["num_replicas"].to_numpy()
    multi = d["num_nodes"].to_numpy() > 1
    log_c, log_s = np.log(compute_obs.to_numpy()), np.log(d["step_time"].to_numpy())
    if not np.any(k > 1):
        raise FitError("no multi-GPU measurement: synchronisation parameters are not identified")
    has_multi = bool(np.any(multi))

    # Starting point: compute line from a linear fit, sync from the smallest multi-GPU rows.
    beta_c0, alpha_c0 = np.polyfit(m, compute_obs.to_numpy(), 1)
    alpha_c0, beta_c0 = max(alpha_c0, 1e-4), max(beta_c0, 1e-6)
    sync = d["sync_time"].to_numpy()
    alpha_r0 = max(float(np.median(sync[(k > 1) & ~multi])) if np.any((k > 1) & ~multi) else 1e-2, 1e-4)
    alpha_n0 = max(float(np.median(sync[multi])) if has_multi else alpha_r0, alpha_r0)
    free = np.array([True, True, True, True, has_multi, has_multi, True])

    def residuals(xf: np.ndarray) -> np.ndarray:
        x = np.zeros(7)
        x[free] = xf
        tc, ts = _predict(x, m, k, multi)
        return np.concatenate([np.log(tc) - log_c, np.log(ts) - log_s])

    lower = np.zeros(7)
    upper = np.full(7, np.inf)
    lower[6], upper[6] = 1.0, 10.0
    starts = (np.array([alpha_c0, beta_c0, alpha_r0, 1e-3 * alpha_r0, alpha_n0 - alpha_r0 + 1e-4, 1e-3, g0])
              for g0 in _GAMMA_STARTS)
    # the lowest cost wins, the first start on ties
    best = min((least_squares(residuals, x0[free], bounds=(lower[free], upper[free]), x_scale="jac",
                              method="trf", max_nfev=5000) for x0 in starts), key=lambda res: res.cost)
    x = np.zeros(7)
    x[free] = best.x
    params = ThroughputParams(alpha_c=x[0], beta_c=x[1], alpha_r=x[2], beta_r=x[3],
                              alpha_n=x[2] + x[4], beta_n=x[3] + x[5], gamma=float(np.clip(x[6], 1, 10)))
    tc, ts = _predict(x, m, k, multi)
    return ThroughputFit(
        params=params,
        rms_log_step_time=float(np.sqrt(np.mean((np.log(ts) - log_s) ** 2))),
        rms_log_compute_time=float(np.sqrt(np.mean((np.log(tc) - log_c) ** 2))),
        n_points=int(len(d)),
        multi_node_identified=has_multi,
    )


def phi_curve(curves: dict[int, pd.DataFrame]) -> tuple[np.ndarray, np.ndarray]:
    """Gradient noise scale per epoch from validation curves.

    ``phi_e`` is the median over batch sizes of ``M0 * grad_var / grad_sqr`` in
    epoch ``e`` (rows with ``grad_sqr <= 0`` are skipped).

    Shapes: -> epochs (E,), phi (E,).
    """
    m0 = min(curves)
    n_epochs = min(len(df) for df in curves.values())
    stack = []
    for df in curves.values():
        sqr = df["grad_sqr"].to_numpy()[:n_epochs]
        var = df["grad_var"].to_numpy()[:n_epochs]
        with np.errstate(divide="ignore", invalid="ignore"):
            stack.append(np.where((sqr > 0) & (var > 0), m0 * var / sqr, np.nan))
    phi = np.nanmedian(np.vstack(stack), axis=0)
    if np.any(~np.isfinite(phi)):
        raise FitError("an epoch has no usable gradient statistics")
    return np.arange(1, n_epochs + 1, dtype=float), phi


def epoch_iterations(curves: dict[int, pd.DataFrame]) -> float:
    """Iterations per epoch at the initial batch size: the median epoch length of its curve."""
    progress = curves[min(curves)]["progress"].to_numpy()
    return float(np.median(np.diff(np.concatenate([[0.0], progress]))))


def fit_application(traces: str | os.PathLike[str] | None, app: str,
                    gpu_types: Iterable[str] | None = None) -> AppProfile:
    """Fit one application's profile on every GPU type with measurements."""
    curves = read_validation(validation_dir(traces, app))
    epochs, phi = phi_curve(curves)
    gpus = {}
    for gpu in gpu_types or [g for g, _ in SIA_CLUSTERS.values()]:
        try:
            df = measurements(traces, app, gpu)
        except FileNotFoundError as exc:
            log.info("skipping %s on %s: %s", app, gpu, exc)
            continue
        fit = fit_throughput(df)
        lo, hi = int(df["local_bsz"].min()), int(df["local_bsz"].max())
        hi = min(hi, LOCAL_BSZ_CAPS.get((app, gpu), hi), max(curves))
        gpus[gpu] = GpuProfile(
            params=fit.params, min_local_bsz=lo, max_local_bsz=hi,
            fit={
                "rms_log_step_time": round(fit.rms_log_step_time, 4),
                "rms_log_compute_time": round(fit.rms_log_compute_time, 4),
                "n_points": fit.n_points,
                "multi_node_identified": fit.multi_node_identified,
                "sources": sorted(df["source"].unique().tolist()),
            },
        )
        log.info("fitted %s on %s: rms log step error %.3f over %d points",
                 app, gpu, fit.rms_log_step_time, fit.n_points)
    if not gpus:
        raise FitError(f"no GPU type has measurements for {app!r}")
    return AppProfile(
        name=app, description=APP_DESCRIPTIONS.get(app, ""),
        init_batch_size=min(curves), max_batch_size=max(curves),
        target_epochs=float(TARGET_EPOCHS.get(app, len(epochs))),
        phi_epochs=tuple(epochs), phi_values=tuple(phi), gpu_types=gpus,
        epoch_iterations=epoch_iterations(curves),
    )


#: Weight of the optimism regulariser of a job's own fit, as in Pollux's job agent (adaptdl's
#: ``1e-2 * ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)`` added to the RMS log errors).
OPTIMISM = 1e-2


#: Smoothing of the RMS terms of the optimistic objective (log-time units): ``sqrt(mean(r^2) + delta^2)`` has no
#: kink where a kind's residuals all vanish (an exact fit), so the minimum is a smooth one that an optimiser finds
#: from any start, not a point on a ridge that depends on floating-point detail.
RMS_SMOOTHING = 1e-3


def _optimistic(x: np.ndarray, free: np.ndarray, residuals: Callable[[np.ndarray], np.ndarray], sizes: Sequence[int], lower: np.ndarray,
                upper: np.ndarray, weight: float, typical: np.ndarray) -> np.ndarray:
    """``x`` refined on Pollux's objective: RMS log errors (per kind, smoothed by :data:`RMS_SMOOTHING`) +
    ``weight`` x retrogression ratios^2.

    L-BFGS-B with central-difference gradients works on the parameters divided by ``typical`` magnitudes
    (so an offset at 0 can still move), from ``x`` and from ``x`` with the free sync slopes at 0 (the
    problem is not convex); the better end point is kept, and ``x`` itself unless it is beaten."""
    scale = np.maximum(np.abs(x[free]), typical[free])
    cuts = np.cumsum(sizes)[:-1]

    def objective(u: np.ndarray) -> float:
        xf = u * scale
        err = sum(float(np.sqrt(np.mean(r ** 2) + RMS_SMOOTHING ** 2)) for r in np.split(residuals(xf), cuts)
                  if len(r))
        xx = x.copy()
        xx[free] = xf
        pen = 0.0
        if free[3]:  # beta_r / alpha_r
            pen += (xx[3] / max(xx[2], 1e-9)) ** 2
        if free[5]:  # beta_n / alpha_n (inter-node = intra-node + offset)
            pen += ((xx[3] + xx[5]) / max(xx[2] + xx[4], 1e-9)) ** 2
        return err + weight * pen

    flat = x.copy()
    flat[[3, 5]] = np.where(free[[3, 5]], 0.0, flat[[3, 5]])
    bounds = list(zip(lower[free] / scale, upper[free] / scale))
    best_u, best_f = x[free] / scale, objective(x[free] / scale)
    for start in (x, flat):
        res = minimize(objective, start[free] / scale, method="L-BFGS-B", jac="3-point", bounds=bounds,
                       options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-10})
        if np.isfinite(res.fun) and res.fun < best_f:
            best_u, best_f = res.x, res.fun
    out = x.copy()
    out[free] = best_u * scale
    return out


def fit_observed(num_nodes: ArrayIn, num_replicas: ArrayIn, local_bsz: ArrayIn, step_time: ArrayIn, sync_time: ArrayIn,
                 start: ThroughputParams | None = None, optimism: float = OPTIMISM) -> ThroughputParams:
    """Throughput parameters from a running job's own few observations.

    Parameters the observations cannot identify are fixed to optimistic values,
    so a scheduler relying on the fit is drawn to explore:

    * one distinct per-GPU batch: the observed compute time is split equally
      between the fixed and the per-example part (``alpha_c``, ``beta_c``);
    * no multi-GPU observation: synchronisation costs nothing (linear speedup);
    * no single-node observation with more than 2 GPUs: ``beta_r = 0``;
    * no multi-node observation: ``alpha_n = 1.1 alpha_r``; none with more
      than 2 GPUs: ``beta_n = 1.1 beta_r`` (inter-node sync 10% dearer).

    The rest are fitted on log times as in :func:`fit_throughput`, plus the
    measured synchronisation times themselves (a job sees them separately, and
    without them a large overlap ``gamma`` would leave the sync parameters
    free to extrapolate anywhere below the compute time), starting from
    ``start`` (a previous fit) when given.

    With ``optimism > 0`` (Pollux's default, :data:`OPTIMISM`) the fit is then
    refined on Pollux's objective: the sum of the RMS log errors plus
    ``optimism * ((beta_n / alpha_n)^2 + (beta_r / alpha_r)^2)`` over the
    slopes being fitted. Where the observations do not tell a per-GPU slope
    from a constant (one multi-node GPU count, say), this puts the cost in the
    constant: the model stays optimistic about more GPUs until observations
    contradict it. ``optimism=0`` keeps the plain least-squares fit.

    Shapes: five arrays (O,) -> ThroughputParams.
    """
    n = np.asarray(num_nodes, dtype=float)
    k = np.asarray(num_replicas, dtype=float)
    m = np.asarray(local_bsz, dtype=float)
    step = np.asarray(step_time, dtype=float)
    sync = np.minimum(np.asarray(sync_time, dtype=float), step)
    if len(step) == 0:
        raise FitError("no observations to fit")
    compute = np.maximum(step - sync, 1e-6 * step)
    multi = n > 1
    x, free = _observed_start(k, m, multi, compute, sync)
    if free.any():
        x = _fit_observed_free(x, free, start, k, m, multi, compute, step, sync, optimism)
    alpha_r, beta_r = x[2], x[3]
    alpha_n = alpha_r + x[4] if free[4] else 1.1 * alpha_r
    beta_n = beta_r + x[5] if free[5] else 1.1 * beta_r
    return ThroughputParams(alpha_c=float(x[0]), beta_c=float(x[1]), alpha_r=float(alpha_r), beta_r=float(beta_r),
                            alpha_n=float(alpha_n), beta_n=float(beta_n), gamma=float(np.clip(x[6], 1, 10)))


def _observed_start(k: np.ndarray, m: np.ndarray, multi: np.ndarray, compute: np.ndarray, sync: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x, free)``: the start of :func:`fit_observed` in its seven working parameters (``alpha_c, beta_c,
    alpha_r, beta_r``, the inter-node offsets ``alpha_n - alpha_r, beta_n - beta_r``, ``gamma``) and which of
    them the observations identify; the others keep their fixed values."""
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    free = np.ones(7, dtype=bool)
    ms = np.unique(m)
    if len(ms) == 1:
        x[0], x[1] = compute.mean() / 2, compute.mean() / 2 / ms[0]
        free[:2] = False
    else:
        slope, icpt = np.polyfit(m, compute, 1)
        x[0], x[1] = max(icpt, 1e-6), max(slope, 1e-9)
    if not np.any(k > 1):
        free[2:] = False
    else:
        x[2] = max(float(np.median(sync[k > 1])), 1e-6)
        x[6] = 1.5
    # each sync slope needs observations beyond 2 GPUs of its own kind (intra- or inter-node)
    free[3] &= bool(np.any(~multi & (k > 2)))
    free[4] &= bool(np.any(multi))
    free[5] &= bool(np.any(multi & (k > 2)))
    return x, free


def _fit_observed_free(x: np.ndarray, free: np.ndarray, start: ThroughputParams | None, k: np.ndarray, m: np.ndarray, multi: np.ndarray,
                       compute: np.ndarray, step: np.ndarray, sync: np.ndarray, optimism: float) -> np.ndarray:
    """The free parameters of :func:`fit_observed` by least squares on log times (from ``start`` when given),
    then refined on Pollux's objective with ``optimism``; returns all seven working parameters."""
    lower, upper = np.zeros(7), np.full(7, np.inf)
    lower[6], upper[6] = 1.0, 10.0
    if start is not None:
        prev = start.as_array()
        prev[4:6] = np.maximum(prev[4:6] - prev[2:4], 0.0)  # alpha_n, beta_n as offsets
        x = np.where(free, prev, x)
    x0 = np.clip(x, lower + 1e-12, upper)
    log_c, log_s = np.log(compute), np.log(step)
    has = (k > 1) & (sync > 0)
    log_y = np.log(sync[has])

    def residuals(xf: np.ndarray) -> np.ndarray:
        xx = x0.copy()
        xx[free] = xf
        tc, ts = _predict(xx, m, k, multi)
        ty = gp.sync_time({"alpha_r": xx[2], "beta_r": xx[3], "alpha_n": xx[2] + xx[4],
                           "beta_n": xx[3] + xx[5]}, k[has], multi[has])
        return np.concatenate([np.log(np.maximum(tc, 1e-12)) - log_c, np.log(np.maximum(ts, 1e-12)) - log_s,
                               np.log(np.maximum(ty, 1e-12)) - log_y])

    res = least_squares(residuals, x0[free], bounds=(lower[free], upper[free]), method="trf", max_nfev=200)
    x = x0.copy()
    x[free] = res.x
    if optimism > 0 and (free[3] or free[5]):
        c, s = float(compute.mean()), float(np.median(sync[k > 1]))
        typical = np.array([c, c / m.mean(), s, s / k.mean(), s, s / k.mean(), 1.0])
        x = _optimistic(x, free, residuals, [len(log_c), len(log_s), len(log_y)], lower, upper, optimism,
                        np.maximum(typical, 1e-9))
    return x
