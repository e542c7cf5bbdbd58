"""``themis``: Themis's finish-time-fair auction (NSDI'20) for jobs at their requested GPUs and batch.

Each round the jobs furthest from finish-time fairness bid for the cluster's GPUs and the arbiter takes the
bids of largest Nash social welfare; the model, numbered, is :mod:`goodopt.formulations.themis`. Bids are
computed from the true remaining work (an oracle, as Optimus+Oracle's). GPUs are leased: a job keeps what
it won for ``lease_s`` seconds (whole rounds; its GPUs are not offered meanwhile), then bids again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from goodopt.errors import ValidationError
from goodopt.formulations.themis import auction, bidders, finish_time_fairness, isolated_time
from goodopt.validation import check_number

from .fixed_size import FixedSizeOptions, FixedSizePolicy

if TYPE_CHECKING:
    from goodopt.cluster import Cluster

    from ..state import RoundState

#: The fairness knob's default: the share of the bidding jobs kept out of each auction.
THEMIS_FAIRNESS_KNOB = 0.8


#: How long a job keeps the GPUs it won (seconds) before they are offered again.
THEMIS_LEASE_S = 600.0


@dataclass(frozen=True, kw_only=True)
class ThemisOptions(FixedSizeOptions):
    """Themis's ``fairness_knob`` in ``[0, 1)`` and ``lease_s`` (see :class:`ThemisPolicy`)."""

    fairness_knob: float = THEMIS_FAIRNESS_KNOB
    lease_s: float = THEMIS_LEASE_S

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number(f"{self.prefix}.lease_s", self.lease_s, minimum=0.0, error=ValidationError)
        knob = check_number(f"{self.prefix}.fairness_knob", self.fairness_knob, minimum=0.0, maximum=1.0,
                            error=ValidationError)
        if knob >= 1.0:
            raise ValidationError(f"{self.prefix}.fairness_knob", f"must be below 1, got {self.fairness_knob!r}",
                                  "0 lets every job bid; 0.8 (the default) the worst-off fifth")


class ThemisPolicy(FixedSizePolicy):
    """Themis: a filter on finish-time fairness, then an auction for efficiency.

    ``fairness_knob`` ``f`` in ``[0, 1)``: of the jobs holding no lease, only the ``ceil((1 - f) J)`` of worst
    finish-time fairness bid (``f = 0``: every one). Winners run at their requested GPUs for ``lease_s``
    seconds; GPUs left over go to the other jobs in decreasing finish-time fairness as they fit, on the same
    lease. ``last_stats`` logs the bidders, winners and the round's worst finish-time fairness
    (``policy_max_rho``).
    """

    name = "themis"
    Options = ThemisOptions
    opts: ThemisOptions
    needs_oracle = True

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        super().__init__(**options)
        self._lease_end: dict[str, float] = {}

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        super().reset(cluster, rng)
        self._lease_end = {}

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        J, C = state.n_jobs, self.cluster.n_gpus
        k = np.array([self._requested(job) for job in state.jobs], dtype=np.int64)
        step, left, steps = self._oracle_steps(state, k)
        remaining, total = left * step, steps * step
        elapsed = np.array([state.time_s - job.arrival_s for job in state.jobs])
        iso = np.maximum(isolated_time(total, k, C, J), 1e-9)  # a job with no work left is finished
        rho = finish_time_fairness(elapsed, remaining, iso)
        rho_wait = finish_time_fairness(elapsed + max(self.opts.lease_s, state.settings.interval_s), remaining, iso)
        sizes = np.where(self._leased(state, k), k, 0)
        pool = np.flatnonzero(sizes == 0)
        bid = pool[bidders(rho[pool], self.opts.fairness_knob)]
        free = C - int(sizes.sum())
        won = bid[auction(np.log(rho_wait[bid] / rho[bid]), k[bid], free)]
        sizes[won] = k[won]
        free -= int(k[won].sum())
        for j in np.lexsort((np.arange(J), -rho)):  # leftovers, worst-off first, as they fit
            if sizes[j] == 0 and k[j] <= free:
                sizes[j], free = k[j], free - int(k[j])
        alloc = self._place_admitted(state, sizes)
        self._renew(state, alloc.sum(axis=1) > 0)
        self.last_stats.update(n_bidders=len(bid), n_winners=len(won), max_rho=float(rho.max()) if J else 0.0)
        return alloc

    def _leased(self, state: RoundState, k: np.ndarray) -> np.ndarray:
        """Jobs running at their size on a lease that has not ended. Shapes: k (J,) -> (J,) booleans."""
        running = state.current.sum(axis=1) == k
        return np.array([running[j] and self._lease_end.get(job.name, -np.inf) > state.time_s + 1e-9
                         for j, job in enumerate(state.jobs)], dtype=bool)

    def _renew(self, state: RoundState, placed: np.ndarray) -> None:
        """A lease for every job placed this round that holds none; none for the others."""
        ends = {}
        for job, on in zip(state.jobs, placed):
            if on:
                old = self._lease_end.get(job.name, -np.inf)
                ends[job.name] = old if old > state.time_s + 1e-9 else state.time_s + self.opts.lease_s
        self._lease_end = ends
