"""The MILP solvers every exact method can run on, each handed the same arrays and judged alike.

======== ============================== ======== ======= ===================================================
name     package                        licence  threads what it cannot do
======== ============================== ======== ======= ===================================================
highs    highspy (bundled)              MIT      yes     --
scip     pyscipopt (SCIP bundled)       Apache 2 no      more than one thread
cbc      cbcbox (the CBC program)       EPL 2    yes     --
cpsat    ortools (CP-SAT)               Apache 2 yes     continuous columns and real coefficients: solved
                                                         on an integer relaxation, its rounding added to the
                                                         bound (:mod:`.cpsat`); LPs; ``milp-pwl``
gurobi   gurobipy (optional)            commercial yes   beyond its licence's size: an ``error`` outcome
======== ============================== ======== ======= ===================================================

Each solver is a module with ``NAME``, ``version()`` and ``solve(model, limits, start)``
(:mod:`.base`): it receives one :class:`~goodopt.formulations.matrix.MatrixModel` and
:class:`~.base.Limits` (time, nodes, gaps, feasibility tolerance, threads, its own parameters), and returns a
:class:`~goodopt.solvers.mip_solvers.outcome.MilpOutcome` with the column values. The outcome is the solver's word only:
the exact methods re-score its answer with the evaluator and re-judge its bound
(:func:`goodopt.solvers.milp.judge`). Another solver is added by :func:`register` with a module (or object) of
the same three names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.util import find_spec
from types import ModuleType
from typing import Any

from goodopt.errors import ValidationError
from goodopt.records import Record

from .base import Limits, Start

__all__ = ["SOLVERS", "SolverInfo", "Limits", "Start", "adapter", "missing", "parameters", "register"]


@dataclass(frozen=True)
class SolverInfo:
    """One solver: where its adapter lives, the package it needs, how to install it, and what it can do."""

    name: str
    module: str
    package: str
    install: str
    multithreaded: bool = True
    solves_lps: bool = True
    #: A kind of column CP-SAT cannot take as it is (see :mod:`.cpsat`): the integer relaxation is used.
    integer_only: bool = False
    optional: bool = False


SOLVERS: dict[str, SolverInfo] = {e.name: e for e in (
    SolverInfo("highs", "goodopt.solvers.mip_solvers.highs", "highspy", "pip install highspy"),
    SolverInfo("scip", "goodopt.solvers.mip_solvers.scip", "pyscipopt", "pip install pyscipopt", multithreaded=False),
    SolverInfo("cbc", "goodopt.solvers.mip_solvers.cbc", "cbcbox", "pip install cbcbox"),
    SolverInfo("cpsat", "goodopt.solvers.mip_solvers.cpsat", "ortools", "pip install ortools", solves_lps=False,
               integer_only=True),
    SolverInfo("gurobi", "goodopt.solvers.mip_solvers.gurobi", "gurobipy",
               "pip install gurobipy (its restricted licence takes models of at most 2,000 variables and 2,000 "
               "constraints; a full licence lifts that)", optional=True),
)}

_REGISTERED: dict[str, Any] = {}


def register(info: SolverInfo, adapter: Any = None) -> None:  # adapter: a module or object with the adapter functions (duck-typed)
    """Add a solver: ``info`` names it and its package; ``adapter`` (default: ``info.module`` imported) has
    ``NAME``, ``version()`` and ``solve(model, limits, start)``. A name already taken is refused."""
    if info.name in SOLVERS:
        raise ValidationError("solver", f"a solver named {info.name!r} exists", "choose another name")
    SOLVERS[info.name] = info
    if adapter is not None:
        _REGISTERED[info.name] = adapter


def missing(name: str) -> str | None:
    """Why the solver ``name`` cannot run here (its package is not installed, with how to install it), or None."""
    info = SOLVERS[name]
    if name in _REGISTERED or find_spec(info.package) is not None:
        return None
    return f"solver {name!r} needs the package {info.package!r}, which is not installed: {info.install}"


def parameters(name: str, limits: Limits) -> Record:
    """The solver's own parameters that ``limits`` sets (by their names in that solver), and its ``native`` ones:
    what a result records of the run."""
    mapping = getattr(adapter(name), "PARAMETERS", {})
    out: dict[str, Any] = {}
    for key, native in mapping.items():
        value = limits.n_threads if key == "threads" else getattr(limits, key)
        if value is not None:
            out[native] = value
    return {**out, **dict(limits.native)}


def adapter(name: str) -> ModuleType | Any:  # Any: a module or object with the adapter functions (duck-typed)
    """The adapter of solver ``name``; an unknown or uninstalled one is an error naming the fix."""
    if name not in SOLVERS:
        raise ValidationError("options.solver", f"unknown MILP solver {name!r}", f"one of {tuple(SOLVERS)}")
    why = missing(name)
    if why is not None:
        raise ValidationError("options.solver", why, SOLVERS[name].install)
    if name in _REGISTERED:
        return _REGISTERED[name]
    return importlib.import_module(SOLVERS[name].module)
