"""What a policy sees in one round (built by the engine and by the auto-scalers for each size they try)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from goodopt.cluster import Cluster
from goodopt.errors import SimulationError

from .agent import HeteroAgent, JobAgent

if TYPE_CHECKING:  # for the annotation only
    from .truth import Truth


class RoundSettings(Protocol):
    """What policies read of the run's settings (:class:`goodopt.sim.config.SimConfig` has them; named here by
    what they are, as the settings module imports the auto-scalers, which build round states: an import
    circle)."""

    @property
    def interval_s(self) -> float: ...

    @property
    def single_gpu_accumulation(self) -> bool: ...


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
    # the run's settings (None in the states an auto-scaler builds for the sizes it tries)
    config: RoundSettings | None
    truth: Truth | None = None

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    @property
    def settings(self) -> RoundSettings:
        """The run's settings; refused in a state an auto-scaler builds for a size it tries (it has none)."""
        if self.config is None:
            raise SimulationError(f"round {self.round_index}: this state has no run settings (an auto-scaler's "
                                  "trial of a cluster size); a policy that reads them cannot plan such sizes")
        return self.config

    @property
    def oracle(self) -> Truth:
        """The true application models, which the engine hands only to policies that declare ``needs_oracle``."""
        if self.truth is None:
            raise SimulationError(f"round {self.round_index}: this state carries no true models (the policy does "
                                  "not declare needs_oracle)")
        return self.truth


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
