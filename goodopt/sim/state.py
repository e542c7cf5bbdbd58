"""What a policy sees in one round (built by the engine and by the auto-scalers for each size they try)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goodopt.cluster import Cluster


@dataclass(frozen=True)
class RoundState:
    """What a policy sees in one round.

    ``jobs`` are the active jobs in arrival order; ``current`` (J, N) their
    allocations; ``truth`` is set only for policies that declare
    ``needs_oracle`` (Optimus+Oracle).
    """

    time_s: float
    round_index: int
    cluster: Cluster
    jobs: tuple  # the active SimJobs
    current: np.ndarray
    config: object  # the run's SimConfig
    truth: object = None

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)
