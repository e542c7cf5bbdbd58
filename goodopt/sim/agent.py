"""The Pollux job agent: what a co-adaptive job knows and how it picks its batch.

Each job records every configuration it has run, ``(nodes, GPUs, per-GPU
batch) -> (step_s, sync_s)`` as observed, refits its throughput parameters
(:func:`goodopt.fitting.fit_observed`) when a new configuration appears, and
tracks its gradient noise scale ``phi`` from the gradient statistics it
observes. Under the allocation it gets it chooses the (per-GPU batch,
accumulation steps) of largest estimated goodput among Pollux's candidates.

What it reports to the scheduler (:meth:`JobAgent.profile`) is an
:class:`~goodopt.profiles.AppProfile` with its *fitted* parameters, never the
ground truth. Before any observation it reports linear speedup. It may be
given at most ``min(2 x largest GPU count observed, 64, M_max / m_min)``
GPUs (at least 1): the exploration limit.

A job with a fixed batch (``fixed_batch``, e.g. ncf's 32768) keeps it and at
most ``max_gpus`` GPUs.
"""

from __future__ import annotations

import math

import numpy as np

from goodopt import goodput as gp
from goodopt.fitting import fit_observed
from goodopt.goodput import ThroughputParams
from goodopt.profiles import AppProfile, GpuProfile

#: Largest GPU count a job explores to, as in the Pollux simulator.
EXPLORATION_CAP = 64
#: Parameters reported before the first observation: zero sync cost (linear speedup).
_LINEAR = ThroughputParams(alpha_c=0.0, beta_c=1e-3, alpha_r=0.0, beta_r=0.0, alpha_n=0.0, beta_n=0.0, gamma=1.0)


class JobAgent:
    """Observations, fitted model and batch choice of one job."""

    def __init__(self, app, gpu_type: str = "t4", *, fixed_batch: int | None = None, max_gpus: int | None = None,
                 n_candidates: int = gp.N_BATCH_CANDIDATES):
        self.app = app  # an AppTruth: only its static limits (M0, M_max, m_min, m_max) are read
        self.gpu_type = gpu_type
        self.fixed_batch = fixed_batch
        self.max_gpus = max_gpus
        self.n_candidates = n_candidates
        self._obs: dict[tuple[int, int, int], tuple[float, float]] = {}
        self._stale = False
        self._params = _LINEAR
        self.phi: float | None = None
        self.n_fits = 0

    # ------------------------------------------------------------ observing
    def observe(self, placement, local_bsz: int, step_s: float, sync_s: float, phi: float) -> None:
        """Record one configuration's measured step and sync time and the current noise scale."""
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
            start = None if self._params is _LINEAR else self._params
            self._params = fit_observed(keys[:, 0], keys[:, 1], keys[:, 2], vals[:, 0], vals[:, 1], start)
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
    def choose(self, placement, *, refit: bool = True) -> tuple[int, int]:
        """(local_bsz, accum_steps) for ``placement`` (GPUs per node).

        With ``refit`` the model is brought up to date first (done when the job
        is (re)started); at epoch boundaries the engine re-chooses with the
        current fit, as a job re-tunes its batch between refits.
        """
        k = int(sum(placement))
        if self.fixed_batch is not None:
            return self.app.fixed_config(self.fixed_batch, k)
        if self.phi is None or not self._obs:
            # nothing measured yet: start at the initial batch size
            return self.app.fixed_config(self.app.init_batch_size, k)
        multi = sum(1 for c in placement if c) > 1
        params = self.refit() if refit else self._params
        _, local, accum = gp.best_config(params, k, multi, self.phi, self.app.init_batch_size,
                                         self.app.max_batch_size, self.app.min_local_bsz, self.app.max_local_bsz,
                                         n_candidates=self.n_candidates)
        if int(local) == 0:  # no valid candidate (e.g. too many GPUs for M_max): smallest valid batch
            return self.app.fixed_config(max(self.app.init_batch_size, k * self.app.min_local_bsz), k)
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
