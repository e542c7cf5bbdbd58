"""Solving Gavel's time-fraction policies (the LPs of :mod:`goodopt.formulations.gavel`).

:func:`solve_gavel` runs one policy on a :class:`~goodopt.gavel.ThroughputMatrix`
and returns a :class:`FractionResult`: ``x`` (J, K) time fractions, ``status``
(why it stopped), ``fun`` (the policy's objective in its own units, see
:data:`POLICIES`), ``message``, the per-stage solver log, and derived
per-job throughputs. Infeasible or failed LPs raise
:class:`~goodopt.errors.SolverError` with their status; a time limit is
reported, never hidden.

Modules: :mod:`.policy_options` (names, meanings, options), :mod:`.runner` (the LPs
of one solve), :mod:`.fairness` (the iterative policies), :mod:`.policies`
(one function per policy, and :func:`solve_gavel`).
"""

from .policies import POLICY_SOLVERS, FractionResult, fifo_fractions, solve_gavel
from .policy_options import (
    BACKENDS,
    LP_METHODS,
    POLICIES,
    POLICY_OPTION_CLASSES,
    POLICY_OPTIONS,
    PolicyOptions,
    check_policy_options,
)

__all__ = ["BACKENDS", "LP_METHODS", "POLICIES", "POLICY_OPTIONS", "POLICY_OPTION_CLASSES", "PolicyOptions",
           "POLICY_SOLVERS", "FractionResult", "check_policy_options", "fifo_fractions", "solve_gavel"]
