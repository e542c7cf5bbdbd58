"""goodopt: goodput-optimised GPU cluster scheduling.

Models from Pollux (goodput = throughput x statistical efficiency, p-norm
fitness over job speedups), Gavel and Sia, with exact and heuristic allocation.

Typical use::

    import goodopt
    scenario = goodopt.load_scenario("pollux-testbed")
    problem = scenario.problem()
    ev = problem.evaluator()
    ev.fitness(problem.current)
    result = goodopt.solve(problem, method="milp")
"""

from __future__ import annotations

import logging

from ._version import __version__
from .cluster import Cluster, NodeGroup
from .errors import FitError, GoodoptError, ScenarioError, ShapeError, SolverError, TraceError, ValidationError
from .evaluator import Evaluation, Evaluator
from .fitness import power_mean, realloc_factor
from .goodput import ThroughputParams
from .problem import AllocationProblem
from .profiles import AppProfile, GpuProfile, load_profile, shipped_profile
from .scenario import Job, Objective, Scenario, scenario_from_dict
from .solvers import METHODS, SolveResult, Termination, solve
from .sources import load_scenario

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "__version__",
    "AllocationProblem", "AppProfile", "METHODS", "SolveResult", "Termination", "solve", "Cluster", "Evaluation", "Evaluator", "FitError", "GoodoptError",
    "GpuProfile", "Job", "NodeGroup", "Objective", "Scenario", "ScenarioError", "ShapeError",
    "SolverError", "ThroughputParams", "TraceError", "ValidationError", "load_profile", "load_scenario",
    "power_mean", "realloc_factor", "scenario_from_dict", "shipped_profile",
]
