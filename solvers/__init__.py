"""Allocation methods behind one entry point, :func:`solve`.

``milp`` (exact, certified), ``milp-pwl`` (piecewise-linear, scalable),
``ga`` and ``nsga2`` (pymoo), ``greedy``, ``equal-share`` and ``brute-force``
all return a :class:`SolveResult` re-scored by the evaluator.
"""

from .api import METHOD_OPTIONS, METHODS, options_for, solve
from .result import CERTIFIED_GAP, SolveResult, SolverStats, Termination

__all__ = ["CERTIFIED_GAP", "METHODS", "METHOD_OPTIONS", "SolveResult", "SolverStats", "Termination", "options_for",
           "solve"]
