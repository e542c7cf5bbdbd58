"""Ground truth of the simulator: what really happens when a job runs.

The scheduler and the job agents never read this module's tables directly;
they only observe what the engine reports after a job has run (step times,
gradient statistics). Two sources of truth share one interface,
:class:`AppTruth`:

* :class:`TraceAppTruth` — the published measurements: the Pollux traces
  (T4 nodes) or, per GPU type, the Sia traces (``placements-<cluster>.csv``,
  ``scalability-<cluster>.csv``; training curves from ``pollux/<app>``,
  which do not depend on the GPU type):

  - step and sync time of a placement at per-GPU batch ``m``: for a measured
    placement (``placements.csv``, rotations of the per-node digits are the
    same ring), linear in ``m`` between measured batches; otherwise a nested
    linear interpolation over node count, GPU count and ``m`` in the table of
    mean placement times per (nodes, GPUs, m) joined with ``scalability.csv``.
    Beyond the largest measured ``m`` the line is extended; below the smallest
    the smallest's time is used (a GPU is not faster than its fixed overhead).
  - gradient statistics of epoch ``e`` at total batch ``M`` from the
    ``validation-<B>.csv`` curves, linear in ``log B`` between the measured
    batch sizes (clamped to the measured range and to the last epoch row);
  - cumulative progress at each epoch end from the curve at the initial
    batch size (progress counts iterations at the initial batch size).

* :class:`ModelAppTruth` — the fitted profiles themselves (``scenarios/profiles``):
  step times from the throughput model, the gradient noise scale from the
  profile's per-epoch curve, ``epoch_iterations`` per epoch. It makes the
  embedded default runnable without the traces.

A :class:`Truth` holds one :class:`AppTruth` per (application, GPU type);
progress is counted in the same units on every type (iterations at the
initial batch size of the shared training curve), so a job may move between
types.

Per optimiser step a job at total batch ``M`` gains ``scale * E`` progress with
``scale = M / M0`` and ``E = (phi + M0) / (phi + M)``; written with the
gradient statistics this is ``(var + sqr) / (var / scale + sqr)``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from goodopt import goodput as gp
from goodopt.errors import TraceError, ValidationError
from goodopt.profiles import AppProfile, shipped_profile
from goodopt.traces import (
    GPU_TYPE_CLUSTER,
    POLLUX_APPS,
    TARGET_EPOCHS,
    read_placements,
    read_scalability,
    read_validation,
    traces_dir,
)

log = logging.getLogger(__name__)

#: Per-GPU batch caps the Pollux paper used on top of the measurements.
_LOCAL_BSZ_CAPS = {"yolov3": 8}


def canonical_placement(counts: Iterable[int]) -> str | None:
    """Digit key of a ring placement: non-zero GPU counts per node, smallest rotation.

    ``None`` when a node holds more than 9 GPUs (no digit key exists).
    """
    c = [int(x) for x in counts if x]
    if not c or max(c) > 9:
        return None
    rotations = ["".join(map(str, c[i:] + c[:i])) for i in range(len(c))]
    return min(rotations)


#: Entries of an application's remembered gains (:meth:`AppTruth.gain`) before they are forgotten.
GAIN_MEMO_SIZE = 100_000


@dataclass
class AppTruth:
    """Ground truth of one application (see the module docstring).

    Subclasses implement :meth:`times` and :meth:`phi`.
    """

    name: str
    init_batch_size: int
    max_batch_size: int
    min_local_bsz: int
    max_local_bsz: int
    target_epochs: int
    epoch_end_progress: np.ndarray  # (E,) cumulative progress at the end of epoch 1..E

    def times(self, placement: tuple[int, ...], local_bsz: int) -> tuple[float, float]:
        """(step_s, sync_s) of one optimiser step on ``placement`` (GPUs per node)."""
        raise NotImplementedError

    def phi(self, batch_size: float, epoch: int) -> float:
        """True gradient noise scale (examples) during 0-based epoch ``epoch`` at ``batch_size``."""
        raise NotImplementedError

    def gain(self, batch_size: float, epoch: int) -> float:
        """Progress per optimiser step, ``scale * E`` (iterations at the initial batch).

        Remembered per (batch size, epoch): the truth does not change during a run, and the same few batch
        sizes are asked for every round (Optimus's and Tiresias's remaining-time estimates, the engine's
        progress), so each is interpolated once.
        """
        m0 = self.init_batch_size
        return remembered(self.__dict__.setdefault("_gain_memo", {}), (float(batch_size), int(epoch)),
                          lambda: float(batch_size / m0 * gp.efficiency(batch_size, self.phi(batch_size, epoch), m0)))

    def iteration_time(self, placement: tuple[int, ...], local_bsz: int, accum_steps: int) -> float:
        """Seconds per optimiser iteration with ``accum_steps`` extra micro-batches."""
        step, sync = self.times(placement, local_bsz)
        return step + accum_steps * max(step - sync, 0.0)

    def fixed_config(self, batch_size: int, n_gpus: int, *, single_gpu_accumulation: bool = False) -> tuple[int, int]:
        """(local_bsz, accum_steps) realising a fixed total ``batch_size`` on ``n_gpus`` GPUs.

        Rounding up to whole per-GPU batches never takes the total above the application's
        ``max_batch_size`` (as Pollux's simulator caps the per-GPU batch at ``max_batch_size / GPUs``).
        With ``single_gpu_accumulation`` (Pollux's simulator), one GPU running a total batch above the
        application's initial batch takes at least one accumulation step (two micro-batches).
        """
        k = max(int(n_gpus), 1)
        local = -(-int(batch_size) // k)
        accum = max(-(-local // self.max_local_bsz) - 1, 0)
        if single_gpu_accumulation and k == 1 and batch_size > self.init_batch_size:
            accum = max(accum, 1)
        local = -(-local // (accum + 1))
        if k * local * (accum + 1) > self.max_batch_size:
            local = max(self.max_batch_size // (k * (accum + 1)), 1)
        return local, accum

    def remaining_steps(self, progress: float, epoch: int, batch_size: float) -> float:
        """Optimiser steps to completion at a fixed total batch, from ``progress`` in 0-based ``epoch``."""
        steps, start = 0.0, progress
        for e in range(epoch, self.target_epochs):
            steps += max(self.epoch_end_progress[e] - start, 0.0) / self.gain(batch_size, e)
            start = self.epoch_end_progress[e]
        return steps

    def remaining_time(self, progress: float, epoch: int, placement: Sequence[int], batch_size: int, *,
                       single_gpu_accumulation: bool = False) -> float:
        """Oracle seconds to completion at a fixed batch on ``placement`` (no restarts)."""
        local, accum = self.fixed_config(batch_size, sum(placement), single_gpu_accumulation=single_gpu_accumulation)
        t_iter = self.iteration_time(tuple(placement), local, accum)
        return self.remaining_steps(progress, epoch, local * sum(placement) * (accum + 1)) * t_iter


class TraceAppTruth(AppTruth):
    """Truth from one application's Pollux trace folder."""

    def __init__(self, app_dir: Path, name: str, target_epochs: int, *, placements_csv: Path | None = None,
                 scalability_csv: Path | None = None) -> None:
        placements = read_placements(placements_csv or app_dir / "placements.csv")
        scal = read_scalability(scalability_csv or app_dir / "scalability.csv")
        curves = read_validation(app_dir)
        m0, m_max = min(curves), max(curves)
        first = curves[m0]["progress"].to_numpy(dtype=float)
        if len(first) < target_epochs:
            raise TraceError(f"{app_dir}: the curve at batch {m0} has {len(first)} epochs, fewer than the "
                             f"target {target_epochs}")
        local_all = pd.concat([placements["local_bsz"], scal["local_bsz"]])
        super().__init__(
            name=name, init_batch_size=int(m0), max_batch_size=int(m_max),
            min_local_bsz=int(local_all.min()),
            max_local_bsz=int(min(local_all.max(), _LOCAL_BSZ_CAPS.get(name, local_all.max()), m_max)),
            target_epochs=int(target_epochs), epoch_end_progress=first,
        )
        # exact placements: key -> (m, step, sync) sorted by m
        self._exact = {key: _line(df) for key, df in placements.groupby("placement")}
        # general table: mean over placements with the same (nodes, GPUs, m), joined with scalability rows
        cols = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
        table = pd.concat([placements[cols], scal[cols]]).groupby(cols[:3], as_index=False).mean()
        self._general = {(int(n), int(k)): _line(df) for (n, k), df in table.groupby(["num_nodes", "num_replicas"])}
        self._node_counts = np.array(sorted({n for n, _ in self._general}))
        self._gpu_counts = {n: np.array(sorted(k for nn, k in self._general if nn == n)) for n in self._node_counts}
        # gradient statistics: (B,) batch sizes, (B, E) per-epoch values
        self._batches = np.array(sorted(curves), dtype=float)
        n_ep = max(len(df) for df in curves.values())
        sqr = np.full((len(curves), n_ep), np.nan)
        var = np.full((len(curves), n_ep), np.nan)
        for i, b in enumerate(sorted(curves)):
            df = curves[b]
            sqr[i, :len(df)], var[i, :len(df)] = df["grad_sqr"], df["grad_var"]
            sqr[i, len(df):], var[i, len(df):] = sqr[i, len(df) - 1], var[i, len(df) - 1]
        self._sqr, self._var = sqr, var
        self._phi_memo: dict[tuple[float, int], float] = {}
        self.times = lru_cache(maxsize=65536)(self._times)  # type: ignore[method-assign]  # per-instance cache

    def _times(self, placement: tuple[int, ...], local_bsz: int) -> tuple[float, float]:
        key = canonical_placement(placement)
        if key is not None and key in self._exact:
            return _at(self._exact[key], local_bsz)
        n = sum(1 for c in placement if c)
        k = sum(placement)
        return self._interpolate(n, k, local_bsz)

    def _interpolate(self, n: int, k: int, m: float) -> tuple[float, float]:
        ns = self._node_counts
        n_lo, n_hi, wn = _bracket(ns, n)
        out = np.zeros(2)
        for node_count, w_node in ((n_lo, 1 - wn), (n_hi, wn)):
            if w_node == 0:
                continue
            ks = self._gpu_counts[node_count]
            k_lo, k_hi, wk = _bracket(ks, k)
            for gpu_count, w_gpu in ((k_lo, 1 - wk), (k_hi, wk)):
                if w_gpu == 0:
                    continue
                out += w_node * w_gpu * np.array(_at(self._general[(node_count, gpu_count)], m))
        return float(out[0]), float(out[1])

    def stats(self, batch_size: float, epoch: int) -> tuple[float, float]:
        """(grad_sqr, grad_var) at ``batch_size`` during 0-based ``epoch``."""
        e = min(max(int(epoch), 0), self._sqr.shape[1] - 1)
        x = np.log(np.clip(batch_size, self._batches[0], self._batches[-1]))
        lb = np.log(self._batches)
        return float(np.interp(x, lb, self._sqr[:, e])), float(np.interp(x, lb, self._var[:, e]))

    def phi(self, batch_size: float, epoch: int) -> float:
        """Remembered per (batch size, epoch), as :meth:`AppTruth.gain` is: a running job asks for the same one
        every round until its epoch or batch size changes."""
        return remembered(self._phi_memo, (float(batch_size), int(epoch)),
                          lambda: float(gp.phi_from_gradients(*self.stats(batch_size, epoch), self.init_batch_size)))


def remembered(memo: dict[tuple[float, int], float], key: tuple[float, int], compute: Callable[[], float]) -> float:
    """``memo[key]``, computed by ``compute()`` the first time (the memo is emptied once it holds
    :data:`GAIN_MEMO_SIZE` values)."""
    value = memo.get(key)
    if value is None:
        if len(memo) >= GAIN_MEMO_SIZE:
            memo.clear()
        value = memo[key] = compute()
    return value


def _line(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One placement's measured line: per distinct per-GPU batch (ascending) the mean step and sync time.
    The traces measure each batch once per placement, so the rows are only sorted (pandas' group mean, used
    where a batch repeats, would return each lone value unchanged)."""
    m = df["local_bsz"].to_numpy(float)
    order = np.argsort(m, kind="stable")
    if not np.isnan(m).any() and np.all(np.diff(m[order]) > 0):
        return m[order], df["step_time"].to_numpy(float)[order], df["sync_time"].to_numpy(float)[order]
    g = df.sort_values("local_bsz").groupby("local_bsz", as_index=False)[["step_time", "sync_time"]].mean()
    return g["local_bsz"].to_numpy(float), g["step_time"].to_numpy(float), g["sync_time"].to_numpy(float)


def _at(line: tuple[np.ndarray, np.ndarray, np.ndarray], m: float) -> tuple[float, float]:
    """Step and sync time at per-GPU batch m on one measured line (see module docstring)."""
    ms, step, sync = line
    if len(ms) == 1 or m <= ms[-1]:
        return float(np.interp(m, ms, step)), float(np.interp(m, ms, sync))
    slope_step = (step[-1] - step[-2]) / (ms[-1] - ms[-2])
    slope_sync = (sync[-1] - sync[-2]) / (ms[-1] - ms[-2])
    dm = m - ms[-1]
    return float(step[-1] + max(slope_step, 0.0) * dm), float(sync[-1] + max(slope_sync, 0.0) * dm)


def _bracket(values: np.ndarray, x: float) -> tuple[Any, Any, float]:
    """Neighbours of x in sorted ``values`` and the weight of the upper one (clamped)."""
    if x <= values[0]:
        return values[0], values[0], 0.0
    if x >= values[-1]:
        return values[-1], values[-1], 0.0
    i = int(np.searchsorted(values, x))
    lo, hi = values[i - 1], values[i]
    if hi == x:
        return hi, hi, 0.0
    return lo, hi, (x - lo) / (hi - lo)


class ModelAppTruth(AppTruth):
    """Truth from a fitted profile (no traces needed)."""

    def __init__(self, profile: AppProfile, gpu_type: str = "t4", gpus_per_node: int = 4) -> None:
        if profile.epoch_iterations is None:
            raise ValidationError(f"profiles.{profile.name}.epoch_iterations", "is missing",
                                  "refit the profile with `goodopt fit` (it records iterations per epoch)")
        if gpu_type not in profile.gpu_types:
            raise ValidationError("gpu_type", f"profile {profile.name!r} has no {gpu_type!r} model",
                                  f"choose one of {sorted(profile.gpu_types)}")
        g = profile.gpu_types[gpu_type]
        n_ep = int(round(profile.target_epochs))
        super().__init__(
            name=profile.name, init_batch_size=profile.init_batch_size, max_batch_size=profile.max_batch_size,
            min_local_bsz=g.min_local_bsz, max_local_bsz=g.max_local_bsz, target_epochs=n_ep,
            epoch_end_progress=profile.epoch_iterations * np.arange(1, n_ep + 1, dtype=float),
        )
        self._params = g.params
        self._profile = profile
        self.times = lru_cache(maxsize=65536)(self._times)  # type: ignore[method-assign]  # per-instance cache

    def _times(self, placement: tuple[int, ...], local_bsz: int) -> tuple[float, float]:
        k = sum(placement)
        multi = sum(1 for c in placement if c) > 1
        m = max(local_bsz, self.min_local_bsz)
        step = float(gp.step_time(self._params, m, k, multi))
        return step, float(gp.sync_time(self._params, k, multi))

    def phi(self, batch_size: float, epoch: int) -> float:
        return float(self._profile.phi_at(epoch + 1))


class Truth:
    """Ground truth per application and GPU type.

    ``truth[app]`` is the application on the first (primary) GPU type;
    :meth:`on` selects a type.
    """

    def __init__(self, apps: Mapping[str, AppTruth | Mapping[str, AppTruth]], source: str,
                 gpu_types: tuple[str, ...] = ("t4",)) -> None:
        """``apps`` maps application -> AppTruth (primary type) or -> {gpu_type: AppTruth}."""
        self.gpu_types = tuple(gpu_types)
        self.by_type: dict[tuple[str, str], AppTruth] = {}
        for app, value in apps.items():
            per_type = value if isinstance(value, Mapping) else {self.gpu_types[0]: value}
            for gpu, t in per_type.items():
                self.by_type[(app, gpu)] = t
        self.apps = {app: self.by_type[(app, self.gpu_types[0])] for app in apps
                     if (app, self.gpu_types[0]) in self.by_type}
        self.source = source

    def __getitem__(self, app: str) -> AppTruth:
        try:
            return self.apps[app]
        except KeyError:
            raise ValidationError("application", f"no ground truth for {app!r}",
                                  f"known applications: {sorted(self.apps)}") from None

    def on(self, app: str, gpu_type: str) -> AppTruth:
        """Ground truth of ``app`` on ``gpu_type``."""
        try:
            return self.by_type[(app, gpu_type)]
        except KeyError:
            raise ValidationError("gpu_type", f"no ground truth for {app!r} on {gpu_type!r}",
                                  f"this truth covers {list(self.gpu_types)}") from None

    def __contains__(self, app: str) -> bool:
        return app in self.apps


def trace_truth(traces: str | os.PathLike[str] | None = None, apps: Iterable[str] = POLLUX_APPS,
                gpu_types: tuple[str, ...] = ("t4",)) -> Truth:
    """Ground truth from the traces (``traces`` or ``$GOODOPT_TRACES``).

    T4 alone uses the Pollux traces; other GPU types (or several) use the Sia
    traces of the matching cluster (:data:`goodopt.traces.GPU_TYPE_CLUSTER`).
    """
    root = traces_dir(traces)
    gpu_types = tuple(gpu_types)
    if gpu_types == ("t4",):
        one = {app: TraceAppTruth(root / "pollux" / app, app, TARGET_EPOCHS[app]) for app in apps}
        return Truth(one, source=f"traces:{root}", gpu_types=gpu_types)
    out: dict[str, dict[str, TraceAppTruth]] = {}
    for app in apps:
        out[app] = {}
        for gpu in gpu_types:
            if gpu not in GPU_TYPE_CLUSTER:
                raise ValidationError("gpu_type", f"no traces for GPU type {gpu!r}",
                                      f"traced types: {sorted(GPU_TYPE_CLUSTER)}")
            cl = GPU_TYPE_CLUSTER[gpu]
            out[app][gpu] = TraceAppTruth(root / "pollux" / app, app, TARGET_EPOCHS[app],
                                          placements_csv=root / "sia" / app / f"placements-{cl}.csv",
                                          scalability_csv=root / "sia" / app / f"scalability-{cl}.csv")
    return Truth(out, source=f"traces:{root}", gpu_types=gpu_types)


def model_truth(apps: Iterable[str] = POLLUX_APPS, profiles: Mapping[str, AppProfile] | None = None,
                gpu_type: str | tuple[str, ...] = "t4") -> Truth:
    """Ground truth from the fitted (shipped unless given) profiles, on one or several GPU types."""
    profiles = profiles or {}
    types = (gpu_type,) if isinstance(gpu_type, str) else tuple(gpu_type)
    out = {app: {t: ModelAppTruth(profiles.get(app) or shipped_profile(app), t) for t in types} for app in apps}
    return Truth(out, source="model:profiles", gpu_types=types)
