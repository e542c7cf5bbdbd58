"""What a policy sees in one round (built by the engine and by the auto-scalers for each size they try)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from goodopt.cluster import Cluster

from .agent import HeteroAgent, JobAgent

if TYPE_CHECKING:  # for the annotation only
    from .truth import Truth


@dataclass(frozen=True)
class RoundState:
    """What a policy sees in one round.

    ``jobs`` are the active jobs in arrival order; ``current`` (J, N) their
    allocations; ``config`` the run's settings; ``truth`` is set only for
    policies that declare ``needs_oracle`` (Optimus+Oracle).
    """

    time_s: float
    round_index: int
    cluster: Cluster
    jobs: tuple[SimJob, ...]
    current: np.ndarray
    # the run's SimConfig (None in the states an auto-scaler builds for the sizes it tries); not annotated as
    # one because the settings module imports the auto-scalers, which build these states (an import circle)
    config: object
    truth: Truth | None = None

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)


@dataclass(eq=False)
class SimJob:
    """A job's state in the simulation (mutable; owned by the engine)."""

    index: int
    name: str
    application: str
    arrival_s: float
    num_replicas: int
    batch_size: int
    agent: JobAgent | HeteroAgent
    fixed_gpus: int | None = None
    row: np.ndarray = field(default=None)  # type: ignore[arg-type]  # set by the engine before first use
    local_bsz: int = 0
    accum_steps: int = 0
    progress: float = 0.0
    epoch: int = 0
    restart_left_s: float = 0.0
    n_starts: int = 0
    n_restarts: int = 0
    attained_gpu_s: float = 0.0
    cost: float = 0.0  # USD for the GPU-seconds it held
    start_s: float | None = None
    completion_s: float | None = None
    gpu_type: str | None = None  # type of the GPUs it holds (None when it holds none)
    entity: str = ""  # the user or group it belongs to (hierarchical policies)

    @property
    def n_gpus(self) -> int:
        return int(self.row.sum())

    @property
    def placement(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.row[self.row > 0])
