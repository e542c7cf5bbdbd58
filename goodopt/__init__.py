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

import importlib
import logging
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
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

#: Where each name of the facade lives: imported when first read (``import goodopt`` itself loads nothing heavy,
#: so the command line starts, and answers Ctrl-C, at once).
_HOMES = {
    "Cluster": "cluster", "NodeGroup": "cluster",
    **{name: "errors" for name in ("FitError", "GoodoptError", "ScenarioError", "ShapeError", "SolverError",
                                   "TraceError", "ValidationError")},
    "Evaluation": "evaluator", "Evaluator": "evaluator", "power_mean": "fitness", "realloc_factor": "fitness",
    "ThroughputParams": "goodput", "AllocationProblem": "problem",
    **{name: "profiles" for name in ("AppProfile", "GpuProfile", "load_profile", "shipped_profile")},
    **{name: "scenario" for name in ("Job", "Objective", "Scenario", "scenario_from_dict")},
    **{name: "solvers" for name in ("METHODS", "SolveResult", "Termination", "solve")},
    "load_scenario": "sources",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'goodopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "__version__",
    "AllocationProblem", "AppProfile", "METHODS", "SolveResult", "Termination", "solve", "Cluster", "Evaluation", "Evaluator", "FitError", "GoodoptError",
    "GpuProfile", "Job", "NodeGroup", "Objective", "Scenario", "ScenarioError", "ShapeError",
    "SolverError", "ThroughputParams", "TraceError", "ValidationError", "load_profile", "load_scenario",
    "power_mean", "realloc_factor", "scenario_from_dict", "shipped_profile",
]
