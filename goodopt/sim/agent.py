"""The Pollux job agent: what a co-adaptive job knows and how it picks its batch.

Each job records every configuration it has run, ``(nodes, GPUs, per-GPU
batch) -> (step_s, sync_s)`` as observed, refits its throughput parameters
when a new configuration appears (by Pollux's agent semantics,
:func:`goodopt.agent_fit.fit_agent`; ``fit="goodopt"`` uses
:func:`goodopt.fitting.fit_observed`), and
tracks its gradient noise scale ``phi`` from the gradient statistics it
observes. Under the allocation it gets it chooses the (per-GPU batch,
accumulation steps) of largest estimated goodput among Pollux's candidates.

What it reports to the scheduler (:meth:`JobAgent.profile`) is an
:class:`~goodopt.profiles.AppProfile` with its *fitted* parameters, never the
ground truth. Before any observation it reports linear speedup. It may be
given at most ``min(2 x largest GPU count observed, 64, M_max / m_min)``
GPUs (at least 1): the exploration limit.

A job with a fixed batch (``fixed_batch``, e.g. ncf's 32768) keeps it and at
most ``max_gpus`` GPUs. ``optimism`` is the weight of Pollux's optimism
regulariser in the job's fit (:func:`goodopt.fitting.fit_observed`; 0 turns it
off).

On a heterogeneous cluster :class:`HeteroAgent` keeps one model per GPU type
(Sia): its observations, fit and batch limits are per type, the noise scale
is shared, and :meth:`HeteroAgent.bootstrap` records one-GPU measurements of
every type at a few batch sizes when the job arrives (Sia's initial
profiling; its cost is not charged). With ``pooled=True`` it is Pollux
unaware of heterogeneity: every type feeds one model and the scheduler is told
the same parameters for every type.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from goodopt import goodput as gp
from goodopt.agent_fit import fit_agent
from goodopt.fitting import OPTIMISM, fit_observed
from goodopt.goodput import ThroughputParams
from goodopt.profiles import AppProfile, GpuProfile

if TYPE_CHECKING:  # for the annotations only
    from .truth import AppTruth

#: How an agent may fit its model (see :class:`goodopt.sim.engine.SimConfig`).
AGENT_FITS = ("pollux", "goodopt")
#: Largest GPU count a job explores to, as in the Pollux simulator.
EXPLORATION_CAP = 64
#: Parameters reported before the first observation: zero sync cost (linear speedup).
_LINEAR = ThroughputParams(alpha_c=0.0, beta_c=1e-3, alpha_r=0.0, beta_r=0.0, alpha_n=0.0, beta_n=0.0, gamma=1.0)


class JobAgent:
    """Observations, fitted model and batch choice of one job."""

    def __init__(self, app: AppTruth, gpu_type: str = "t4", *, fixed_batch: int | None = None,
                 max_gpus: int | None = None,
                 n_candidates: int = gp.N_BATCH_CANDIDATES, optimism: float = OPTIMISM, fit: str = "pollux",
                 single_gpu_accumulation: bool = False) -> None:
        self.app = app  # an AppTruth: only its static limits (M0, M_max, m_min, m_max) are read
        self.gpu_type = gpu_type
        self.fixed_batch = fixed_batch
        self.single_gpu_accumulation = single_gpu_accumulation
        self.max_gpus = max_gpus
        self.n_candidates = n_candidates
        self.optimism = optimism
        self.fit = fit
        self._obs: dict[tuple[int, int, int], tuple[float, float]] = {}
        self._stale = False
        self._params = _LINEAR
        self.phi: float | None = None
        self.n_fits = 0

    # ------------------------------------------------------------ observing
    def observe(self, placement: Sequence[int], local_bsz: int, step_s: float, sync_s: float, phi: float,
                gpu_type: str | None = None) -> None:
        """Record one configuration's measured step and sync time and the current noise scale.

        ``gpu_type`` is accepted for interface parity with :class:`HeteroAgent` and ignored.
        """
        key = (sum(1 for c in placement if c), int(sum(placement)), int(local_bsz))
        if key not in self._obs:
            self._obs[key] = (float(step_s), float(sync_s))
            self._stale = True
        if math.isfinite(phi) and phi > 0:
            self.phi = float(phi)

    @property
    def params(self) -> ThroughputParams:
        """The fitted parameters as of the last refit (see :meth:`refit`)."""
        return self._params

    def refit(self) -> ThroughputParams:
        """Refit the throughput parameters if a new configuration was observed since the last fit."""
        if self._stale:
            keys = np.array(list(self._obs), dtype=float)
            vals = np.array(list(self._obs.values()), dtype=float)
            if self.fit == "pollux":  # from Pollux's fixed start values every time
                self._params = fit_agent(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0], vals[:, 1],
                                         optimism=self.optimism)
            else:
                start = None if self._params is _LINEAR else self._params
                self._params = fit_observed(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0], vals[:, 1], start,
                                            optimism=self.optimism)
            self._stale = False
            self.n_fits += 1
        return self._params

    @property
    def max_profiled_gpus(self) -> int:
        return max((k for _, k, _ in self._obs), default=0)

    def gpu_limit(self) -> int:
        """Exploration limit on the GPUs the scheduler may give this job."""
        if self.max_gpus is not None:
            return int(self.max_gpus)
        batch_limit = self.app.max_batch_size // self.app.min_local_bsz
        return int(max(1, min(2 * self.max_profiled_gpus, EXPLORATION_CAP, batch_limit)))

    # ------------------------------------------------------------- choosing
    def choose(self, placement: Sequence[int], *, refit: bool = True, gpu_type: str | None = None,
               limits: AppTruth | None = None) -> tuple[int, int]:
        """(local_bsz, accum_steps) for ``placement`` (GPUs per node).

        With ``refit`` the model is brought up to date first (done when the job
        is (re)started); at epoch boundaries the engine re-chooses with the
        current fit, as a job re-tunes its batch between refits. ``limits``
        (an AppTruth) overrides the batch limits (the GPU type actually used).
        """
        app = limits or self.app
        k = int(sum(placement))
        if self.fixed_batch is not None:
            return app.fixed_config(self.fixed_batch, k, single_gpu_accumulation=self.single_gpu_accumulation)
        if self.phi is None or not self._obs:
            # nothing measured yet: start at the initial batch size
            return app.fixed_config(app.init_batch_size, k)
        multi = sum(1 for c in placement if c) > 1
        params = self.refit() if refit else self._params
        _, local, accum = gp.best_config(params, k, multi, self.phi, app.init_batch_size,
                                         app.max_batch_size, app.min_local_bsz, app.max_local_bsz,
                                         n_candidates=self.n_candidates)
        if int(local) == 0:  # no valid candidate (e.g. too many GPUs for M_max): smallest valid batch
            return app.fixed_config(max(app.init_batch_size, k * app.min_local_bsz), k)
        return int(local), int(accum)

    def profile(self, key: str) -> AppProfile:
        """What the scheduler is told: fitted parameters and limits, as a one-type profile."""
        gpu = GpuProfile(params=self.refit(), min_local_bsz=self.app.min_local_bsz,
                         max_local_bsz=self.app.max_local_bsz)
        m0 = self.app.init_batch_size
        m_max = self.app.max_batch_size
        if self.fixed_batch is not None:
            m0 = m_max = self.fixed_batch
        return AppProfile(name=key, init_batch_size=m0, max_batch_size=m_max, gpu_types={self.gpu_type: gpu},
                          phi_epochs=(1.0,), phi_values=(self.phi or 1e12,), target_epochs=1.0)


class HeteroAgent:
    """A job's models on a heterogeneous cluster (see the module docstring).

    ``apps`` maps GPU type -> AppTruth (only static batch limits are read).
    """

    def __init__(self, apps: dict[str, AppTruth], *, pooled: bool = False, fixed_batch: int | None = None,
                 max_gpus: int | None = None, n_candidates: int = gp.N_BATCH_CANDIDATES, optimism: float = OPTIMISM,
                 fit: str = "pollux", single_gpu_accumulation: bool = False):
        self.apps = dict(apps)
        self.gpu_types = tuple(self.apps)
        self.pooled = pooled
        self.fixed_batch = fixed_batch
        self.max_gpus = max_gpus
        first = self.gpu_types[0]
        if pooled:
            one = JobAgent(self.apps[first], first, fixed_batch=fixed_batch, max_gpus=max_gpus,
                           n_candidates=n_candidates, optimism=optimism, fit=fit,
                           single_gpu_accumulation=single_gpu_accumulation)
            self.models = {t: one for t in self.gpu_types}
        else:
            self.models = {t: JobAgent(a, t, fixed_batch=fixed_batch, max_gpus=max_gpus, n_candidates=n_candidates,
                                       optimism=optimism, fit=fit, single_gpu_accumulation=single_gpu_accumulation)
                           for t, a in self.apps.items()}
        self.app = self.apps[first]

    @property
    def phi(self) -> float | None:
        values = [m.phi for m in self.models.values() if m.phi is not None]
        return values[-1] if values else None

    @property
    def n_fits(self) -> int:
        return sum(m.n_fits for m in set(self.models.values()))

    def observe(self, placement: Sequence[int], local_bsz: int, step_s: float, sync_s: float, phi: float,
                gpu_type: str | None = None) -> None:
        """Record one round's measured step and sync times and the gradient noise scale."""
        for m in set(self.models.values()):  # the noise scale is the job's, whatever the type
            if math.isfinite(phi) and phi > 0:
                m.phi = float(phi)
        self.models[gpu_type or self.gpu_types[0]].observe(placement, local_bsz, step_s, sync_s, phi)

    def bootstrap(self, truth_by_type: dict[str, AppTruth], phi: float, n_batches: int = 3) -> None:
        """One-GPU measurements of every type at ``n_batches`` per-GPU batch sizes (Sia's profiling)."""
        if self.pooled:
            return
        for t, app in truth_by_type.items():
            hi = max(app.min_local_bsz, min(app.max_local_bsz, app.init_batch_size))
            for m in np.unique(np.geomspace(app.min_local_bsz, hi, n_batches).round().astype(int)):
                step, sync = app.times((1,), int(m))
                self.models[t].observe((1,), int(m), step, sync, phi)

    def gpu_limit(self) -> int:
        return max(m.gpu_limit() for m in self.models.values())

    def choose(self, placement: Sequence[int], *, refit: bool = True, gpu_type: str | None = None,
               limits: AppTruth | None = None) -> tuple[int, int]:
        """The goodput-optimal (per-GPU batch, accumulation steps) for a placement."""
        t = gpu_type or self.gpu_types[0]
        return self.models[t].choose(placement, refit=refit, limits=limits or self.apps[t])

    def profile(self, key: str) -> AppProfile:
        """Fitted parameters and limits per GPU type (the same parameters on every type when pooled)."""
        gpus = {}
        for t in self.gpu_types:
            m = self.models[t]
            lim = self.apps[self.gpu_types[0]] if self.pooled else self.apps[t]
            gpus[t] = GpuProfile(params=m.refit(), min_local_bsz=lim.min_local_bsz, max_local_bsz=lim.max_local_bsz)
        m0, m_max = self.app.init_batch_size, self.app.max_batch_size
        if self.fixed_batch is not None:
            m0 = m_max = self.fixed_batch
        return AppProfile(name=key, init_batch_size=m0, max_batch_size=m_max, gpu_types=gpus,
                          phi_epochs=(1.0,), phi_values=(self.phi or 1e12,), target_epochs=1.0)
