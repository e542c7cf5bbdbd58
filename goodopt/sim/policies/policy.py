"""The simulation policy's interface: what the engine gives it and reads from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...records import Record
from ...typed_options import TypedOptions

if TYPE_CHECKING:
    from goodopt.cluster import Cluster

    from ..state import RoundState
    from ..workload import Workload


@dataclass(frozen=True, kw_only=True)
class SimPolicyOptions(TypedOptions):
    """Options of a policy (none in this base: each policy's class declares its own, as methods do)."""

    prefix: ClassVar[str] = "policy_options"


class Policy:
    """Base class: see the module docstring.

    A policy declares its options as a frozen :class:`SimPolicyOptions` subclass (``Options``): made from the
    keyword arguments, checked once, read as ``self.opts``; ``goodopt options NAME`` lists them."""

    name = "policy"
    Options: ClassVar[type[SimPolicyOptions]] = SimPolicyOptions
    opts: SimPolicyOptions
    #: Whether jobs pick their own goodput-optimal batch through their agent (else they keep the workload's).
    adaptive_batch = True
    #: Whether the policy reads the ground truth (an oracle, such as Optimus+Oracle or Gavel's throughputs).
    needs_oracle = False
    #: Most GPUs the policy gives one job (None: only the job's own limit); the auto-scaler plans with it.
    max_gpus: int | None = None
    #: Whether the policy tells GPU types apart (heterogeneous clusters only).
    hetero_aware = True
    #: Whether the policy plans on whatever nodes are provisioned each round (elastic clusters).
    elastic = False

    #: The run's cluster and its only source of randomness, set by :meth:`reset` before the first round.
    cluster: Cluster
    rng: np.random.Generator

    def __init__(self, **options: Any) -> None:  # Any: option values, checked by the options class
        self.opts = self.Options.build(options, owner=f"policy {self.name!r}", listed_as=self.name)
        #: Per-round numbers the engine copies into the round log (``policy_<key>`` columns).
        self.last_stats: dict[str, Any] = {}

    def reset(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Start a new run on ``cluster``; ``rng`` is the run's only source of randomness."""
        self.cluster, self.rng = cluster, rng
        self.last_stats = {}

    def allocate(self, state: RoundState) -> np.ndarray:
        """GPUs per (active job, node) for this round.

        Shapes: returns (J, N) integers for the J jobs of ``state`` and the cluster's N nodes."""
        raise NotImplementedError

    def resize(self, cluster: Cluster) -> None:
        """The provisioned nodes of an elastic cluster changed: plan on ``cluster`` from this round on."""
        self.cluster = cluster

    def check_workload(self, workload: Workload, cluster: Cluster,
                       fixed_gpus: dict[str, int] | None = None) -> None:
        """Refuse (:class:`goodopt.errors.ValidationError`) a job of ``workload`` this policy can never run on ``cluster``
        (``fixed_gpus``: application -> the GPUs the engine fixes it to); called before the first round, and
        by dry runs."""

    def describe(self) -> Record:
        """The policy's name and options, for run metadata."""
        return {"name": self.name, **self.opts.as_dict()}
