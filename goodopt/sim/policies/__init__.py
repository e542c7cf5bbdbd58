"""Scheduling policies for the simulator, apart from the engine.

A policy has a ``name``, ``adaptive_batch`` (jobs pick their own goodput-
optimal batch via their agent, else they keep the workload's batch),
``needs_oracle`` (it may read the ground truth, Optimus+Oracle only),
``reset(cluster, rng)`` and ``allocate(state) -> (J, N)``; ``last_stats``
holds per-round numbers that go to the round log.

Goodput-aware policies (``pollux``, ``milp``, ``greedy``, ``equal-share``)
build an :class:`~goodopt.problem.AllocationProblem` from what the job agents
report (fitted throughput, observed ``phi``, exploration limits) and solve it
with :func:`goodopt.solve`. Jobs that hold no GPUs pay no re-allocation factor
(starting a queued job loses none of its history); running jobs pay
Pollux's ``(T - R delta) / (T + delta)`` when their allocation changes.

Fixed-size policies (``optimus``, ``tiresias``, ``fifo``) run each job with
the workload's ``batch_size`` (rounded to whole per-GPU batches, never above
the application's maximum) and place new allocations as Pollux's simulator
did: smallest jobs first, each taking GPUs from the node with the most free
GPUs (``placement="packed"``: largest first, one node if it fits; on a
heterogeneous cluster on the first GPU type with room, i.e.
heterogeneity-agnostic); a job whose GPU count is unchanged keeps its
placement. Tiresias serves its second queue in order of demotion.

``gavel`` runs one of Gavel's time-fraction policies
(:mod:`goodopt.solvers.gavel`) on the jobs' true throughputs at their
requested GPU count and fixed batch (an oracle, as in Gavel's simulator), and
realises the fractions with the round mechanism of :mod:`goodopt.gavel.round_mechanism`
every ``round_s`` seconds (Gavel's 6-minute rounds by default): between its
rounds allocations stand, and arriving jobs wait for the next round.

On heterogeneous clusters ``pollux`` is heterogeneity-unaware (its jobs' agents
pool every type into one model, as Sia's baseline); the other goodput policies
see one model per type, bootstrapped by one-GPU profiling of every type.

Every policy declares its options as a frozen :class:`SimPolicyOptions` subclass (its ``Options``), made
from the keyword arguments and checked once, read as ``policy.opts``: the options system of the methods
(:mod:`goodopt.typed_options`), listed by ``goodopt options NAME``.

Modules: :mod:`.policy` (the interface), :mod:`.goodput_policies`, :mod:`.fixed_size`,
:mod:`.gavel_policy`, :mod:`.themis_policy`, :mod:`.shockwave_policy` (the policies),
:mod:`.registry` (every policy by name).
"""

from .fixed_size import (
                         PLACEMENTS,
                         TIRESIAS_THRESHOLD_GPU_S,
                         FifoPolicy,
                         FixedSizeOptions,
                         FixedSizePolicy,
                         OptimusPolicy,
                         TiresiasOptions,
                         TiresiasPolicy,
)
from .gavel_policy import GavelPolicy, GavelPolicyOptions
from .goodput_policies import (
                         EqualSharePolicy,
                         GoodputOptions,
                         GoodputPolicy,
                         GreedyPolicy,
                         MilpPolicy,
                         MilpPolicyOptions,
                         PolluxPolicy,
                         PolluxPolicyOptions,
                         SiaPolicy,
                         SiaPolicyOptions,
                         VirtualNodes,
                         goodput_problem,
)
from .policy import Policy, SimPolicyOptions
from .registry import POLICIES, make_policy, policy_options, register_policy

__all__ = ["PLACEMENTS", "POLICIES", "TIRESIAS_THRESHOLD_GPU_S", "EqualSharePolicy", "FifoPolicy", "FixedSizeOptions",
           "FixedSizePolicy", "GavelPolicy", "GavelPolicyOptions", "GoodputOptions", "GoodputPolicy", "GreedyPolicy",
           "MilpPolicy", "MilpPolicyOptions", "OptimusPolicy", "Policy", "PolluxPolicy", "PolluxPolicyOptions",
           "SiaPolicy", "SiaPolicyOptions", "SimPolicyOptions", "TiresiasOptions", "TiresiasPolicy", "VirtualNodes",
           "goodput_problem", "make_policy", "policy_options", "register_policy"]
