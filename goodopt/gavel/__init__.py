"""Gavel's subject at the core: jobs x GPU-types throughput data, its published file, conversions, and the round
mechanisms that turn time fractions into rounds.

:class:`ThroughputMatrix` is what Gavel's policies optimise over: for each job
its scale factor (GPUs it runs on), its throughput on every GPU type at that
scale (steps/s; 0 = cannot run there), its priority weight and, for the
finish-time and makespan policies, its remaining steps and elapsed time.
Per-type capacities (GPUs) and prices complete it.

Sources:

* :func:`read_gavel_throughputs` — Gavel's ``simulation_throughputs.json``
  (26 job types x {k80, p100, v100} x scale factors 1, 2, 4, 8, consolidated
  and unconsolidated, plus space-sharing pairs), as :class:`GavelThroughputs`;
  :meth:`GavelThroughputs.profiles` turns its job types into throughput-only
  profiles (:class:`~goodopt.profiles.ThroughputProfile`) that every goodopt
  method can schedule;
* :func:`matrix_from_problem` — any :class:`~goodopt.problem.AllocationProblem`
  (each job at a chosen GPU count, packed on the fewest nodes).

Modules: :mod:`.throughput_matrix`, :mod:`.published` (Gavel's file and constants),
:mod:`.rigid_jobs` and :mod:`.generator` (rigid-job traces: numpy's draw, Gavel's
own draw for draw), :mod:`.conversions`, and the round mechanisms
:mod:`.round_mechanism` (goodopt's) and :mod:`.gavel_mechanism` (Gavel's simulator's).

Gavel on the floors above, one place per floor: its policies as linear programs in
:mod:`goodopt.formulations.gavel`; solved, and as the ``gavel`` method, in :mod:`goodopt.solvers.gavel`;
simulated as a policy of elastic jobs (:mod:`goodopt.sim.policies.gavel_policy`) and as Gavel's own rigid
simulation (:mod:`goodopt.sim.rigid`); reproduced in :mod:`goodopt.reproduce.gavel_hetero`.
"""

from .conversions import gavel_scenario, matrix_from_problem, pairs_from_problem
from .published import (
                     GAVEL_CLUSTER,
                     GAVEL_DURATIONS,
                     GAVEL_PRICES_PER_GPU_H,
                     GAVEL_REFERENCE_TYPE,
                     GAVEL_SCALE_FACTORS,
                     GavelThroughputs,
                     job_type_slug,
                     read_gavel_throughputs,
)
from .rigid_jobs import RigidJob, assign_entities, draw_job_type, gavel_jobs, gavel_trace
from .throughput_matrix import (
                     ENTITY_POLICIES,
                     PACKED,
                     POLICY_NAMES,
                     ThroughputMatrix,
                     check_entities,
                     entity_fields,
                     spread,
                     useful_pairs,
)

__all__ = ["ENTITY_POLICIES", "GAVEL_CLUSTER", "GAVEL_DURATIONS", "GAVEL_PRICES_PER_GPU_H", "GAVEL_REFERENCE_TYPE",
           "GAVEL_SCALE_FACTORS", "PACKED", "POLICY_NAMES", "GavelThroughputs", "RigidJob", "ThroughputMatrix",
           "assign_entities", "check_entities", "draw_job_type", "entity_fields", "gavel_jobs", "gavel_scenario",
           "gavel_trace", "job_type_slug", "matrix_from_problem", "pairs_from_problem", "read_gavel_throughputs",
           "spread", "useful_pairs"]
