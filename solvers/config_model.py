"""One interface to a solved goodput model, whichever way it reaches the solver.

:class:`ArrayModel` passes the configuration level as arrays straight to HiGHS
(:mod:`goodopt.formulations.config_matrix`, :mod:`goodopt.solvers.mip_solvers.highs_arrays`);
:class:`PyomoModel` wraps the documented pyomo model (either level) and runs
it on HiGHS or any of :mod:`goodopt.solvers.mip_solvers`. The exact method's stages talk only to this
interface: solve (warm from an allocation), read the chosen configurations,
round an LP solution, add a no-good cut (C1), and move the epigraph floor
(p = ±inf certification).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from goodopt.formulations import milp as fm
from goodopt.formulations.config_matrix import config_matrix, no_good_row
from goodopt.formulations.configs import ConfigSet, choice_from_values, match_configs, rounded_from_values
from goodopt.formulations.scaled_objective import ScaledObjective

from goodopt.arrays import Array, ArrayIn
from goodopt.problem import AllocationProblem

from .mip_solvers.outcome import MilpOutcome
from .mip_solvers.pyomo_route import solve_model
from .mip_solvers.session import new_session


def epigraph_value(problem: AllocationProblem, configs: ConfigSet, chosen: Array) -> float:
    """The fitness at p = ±inf of a choice of configurations (min or max of ``S + eps``). Shapes: (J,)."""
    s = problem.eps + np.where(chosen >= 0, configs.speedup[np.maximum(chosen, 0)], 0.0)
    return float(s.min() if problem.p < 0 else s.max()) if len(s) else problem.eps


class _Base:
    def __init__(self, problem: AllocationProblem, configs: ConfigSet, objective: ScaledObjective | None) -> None:
        self.pr, self.cs, self.objective = problem, configs, objective
        self._chosen: Array = np.full(problem.n_jobs, -1, dtype=np.int64)  # none before a solution
        self.build_s = 0.0

    def chosen(self) -> Array:
        """Configuration per job (-1 = none) of the last solution. Shapes: -> (J,)."""
        return self._chosen.copy()

    def snapshot(self) -> Any:  # Any: the model's saved state, opaque to callers
        """The loaded solution, to :meth:`restore` after a probing solve."""
        return self._chosen.copy()

    def restore(self, snap: Any) -> None:  # Any: the model's saved state, opaque to callers
        self._chosen = np.asarray(snap).copy()

    def epigraph_value(self) -> float:
        return epigraph_value(self.pr, self.cs, self._chosen)

    @property
    def pattern_types(self) -> tuple[int, ...]:
        """GPU types whose node-pattern rows the model carries (none on the pyomo route)."""
        return ()


class ArrayModel(_Base):
    """The configuration level as arrays in a live HiGHS instance."""

    def __init__(self, problem: AllocationProblem, configs: ConfigSet, objective: ScaledObjective | None, *,
                 threads: int | None = None, highs_options: Mapping[str, Any] | None = None,
                 placement: Iterable[int] = (), solver: str = "highs",
                 solver_options: Mapping[str, Any] | None = None, feasibility_tol: float | None = None) -> None:
        super().__init__(problem, configs, objective)
        t0 = time.perf_counter()
        self.mm = config_matrix(problem, configs, objective, placement=placement)
        self.session = new_session(self.mm, solver=solver, threads=threads, highs_options=highs_options,
                                   solver_options=solver_options, feasibility_tol=feasibility_tol)
        self.build_s = time.perf_counter() - t0
        self._x: Array | None = None
        self._lp_x: Array | None = None
        #: Per configuration, a bound ``L_c`` on every solution that chooses it, from a relaxation of this model
        #: (the aggregate rows' Lagrangian, :mod:`goodopt.solvers.milp.pricing`); None when there is none.
        self.relaxation_bounds: Array | None = None

    def solve(self, *, time_limit_s: float | None = None, mip_rel_gap: float | None = None,
              mip_abs_gap: float | None = None, warm_start: Any = None, relax: bool = False,
              node_limit: int | None = None, **_: Any) -> MilpOutcome:  # Any: a start of the solver's kind, and options it ignores
        x0 = self.encode(warm_start) if warm_start is not None else None
        out, x = self.session.solve(time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap, mip_abs_gap=mip_abs_gap,
                                    warm_start=x0, relax=relax, node_limit=node_limit)
        self._load(x, relax)
        if relax:
            self.relaxation_bounds = None
        return out

    def load_relaxation(self, x: Array, row_dual: Array, relaxation_bounds: Array | None = None) -> None:
        """Take an LP relaxation solved elsewhere (every column's value and every row's dual in this model, e.g.
        by column generation, :mod:`goodopt.solvers.milp.pricing`) as this model's last, and per configuration
        the bound ``L_c`` of a relaxation of this model where one is known (same units)."""
        self._load(np.asarray(x, float), relax=True)
        self.session.lp_row_dual = np.asarray(row_dual, float)
        self.relaxation_bounds = None if relaxation_bounds is None else np.asarray(relaxation_bounds, float)

    def _load(self, x: Array | None, relax: bool) -> None:
        if x is not None:
            self._x = x
            if relax:
                self._lp_x = x
            z = x[:self.cs.n_configs]
            n = self.pr.n_jobs
            self._chosen = rounded_from_values(self.cs, n, z) if relax else choice_from_values(self.cs, n, z)

    @property
    def pattern_types(self) -> tuple[int, ...]:
        return self.mm.pattern_types

    @property
    def lp_values(self) -> Array | None:
        """Every column's value in the last LP relaxation solved (None before one)."""
        return self._lp_x

    def encode(self, alloc: ArrayIn) -> Array | tuple[Array, Array]:
        """Column values of an allocation (its rows matched to configurations): every column's, or
        ``(columns, values)`` for the model's own columns when node-pattern blocks follow them."""
        pr, cs, mm = self.pr, self.cs, self.mm
        chosen = match_configs(pr, cs, np.asarray(alloc))
        x = np.zeros(mm.n_columns)
        x[chosen[chosen >= 0]] = 1.0
        C = cs.n_configs
        if mm.epigraph:
            x[C] = epigraph_value(pr, cs, chosen)
            if pr.p > 0 and pr.n_jobs:
                s = np.where(chosen >= 0, cs.speedup[np.maximum(chosen, 0)], 0.0)
                x[C + 1 + int(np.argmax(s))] = 1.0
        else:
            x[C:C + pr.n_jobs] = (chosen < 0).astype(float)
        if mm.pattern_types:  # pattern columns are left to HiGHS to complete
            n_own = C + (1 + (pr.n_jobs if pr.p > 0 else 0) if mm.epigraph else pr.n_jobs)
            return np.arange(n_own), x[:n_own]
        return x

    def exclude(self, config_indices: ArrayIn) -> None:
        cols, vals, lo, hi = no_good_row(config_indices, self.mm.n_columns)
        self.session.add_row(cols, vals, lo, hi)

    def fix_outside(self, chosen: ArrayIn, types: Iterable[int]) -> None:
        """Fix every job not on a GPU type of ``types`` in ``chosen`` to its configuration there (or to idle); the
        others may choose among the configurations of their own type or stay idle. Finite p only (the ``u_j``
        columns); :meth:`unfix` restores the model. Shapes: chosen (J,)."""
        cs, mm, J = self.cs, self.mm, self.pr.n_jobs
        C = cs.n_configs
        chosen = np.asarray(chosen)
        own = cs.gpu_type[np.maximum(chosen, 0)]  # (J,) each job's type in `chosen`
        on = (chosen >= 0) & np.isin(own, list(types))  # (J,) free jobs
        lo, hi = mm.lower[:C + J].copy(), mm.upper[:C + J].copy()
        fixed = ~on[cs.job]
        hi[:C][fixed] = 0.0
        pick = chosen[~on & (chosen >= 0)]
        lo[pick] = hi[pick] = 1.0
        idle = np.zeros(J)
        idle[chosen < 0] = 1.0
        lo[C:][~on], hi[C:][~on] = idle[~on], idle[~on]
        hi[:C][on[cs.job] & (cs.gpu_type != own[cs.job])] = 0.0  # a free job stays on its type
        self._set_bounds(np.arange(C + J), lo, hi)

    def unfix(self) -> None:
        """Undo :meth:`fix_outside`."""
        n = self.cs.n_configs + self.pr.n_jobs
        self._set_bounds(np.arange(n), self.mm.lower[:n], self.mm.upper[:n])

    def _set_bounds(self, idx: Array, lo: ArrayIn, hi: ArrayIn) -> None:
        self.session.set_bounds(idx, lo, hi)

    def set_floor(self, value: float | None) -> None:
        """Epigraph models: ``t >= value`` (None restores the model's own bound)."""
        t = self.cs.n_configs
        lo = self.mm.lower[t] if value is None else float(value)
        self.session.set_bounds([t], [lo], [float(self.mm.upper[t])])


class PyomoModel(_Base):
    """The pyomo model (:func:`goodopt.formulations.milp.build_model`) on HiGHS or any of :mod:`goodopt.solvers.mip_solvers` (compiled to arrays).

    pyomo is imported here, on first use: the array route never needs it.
    """

    def __init__(self, problem: AllocationProblem, configs: ConfigSet, objective: ScaledObjective | None, *,
                 level: str = "config",
                 symmetry: str = "order", fixed_choice: ArrayIn | None = None, solver: str = "highs",
                 threads: int | None = None, highs_options: Mapping[str, Any] | None = None,
                 solver_options: Mapping[str, Any] | None = None, feasibility_tol: float | None = None) -> None:
        super().__init__(problem, configs, objective)
        self.fm = fm
        t0 = time.perf_counter()
        self.model = fm.build_model(problem, configs, level=level, symmetry=symmetry, fixed_choice=fixed_choice,
                                    objective=objective)
        self.build_s = time.perf_counter() - t0
        self.solver, self.threads, self.highs_options = solver, threads, highs_options
        self.solver_options, self.feasibility_tol = dict(solver_options or {}), feasibility_tol

    def solve(self, *, time_limit_s: float | None = None, mip_rel_gap: float | None = None,
              mip_abs_gap: float | None = None, warm_start: Any = None, relax: bool = False,
              node_limit: int | None = None, **_: Any) -> MilpOutcome:  # Any: a start of the solver's kind, and options it ignores
        fm = self.fm
        start = (fm.warm_start_values(self.model, self.pr, self.cs, warm_start)
                 if warm_start is not None else None)
        out = solve_model(self.model, solver=self.solver, time_limit_s=time_limit_s, mip_rel_gap=mip_rel_gap,
                          mip_abs_gap=mip_abs_gap, threads=self.threads, highs_options=self.highs_options,
                          warm_start=start, relax=relax, feasibility_tol=self.feasibility_tol, node_limit=node_limit,
                          engine_options={"native": self.solver_options})
        if out.has_solution:
            n = self.pr.n_jobs
            self._chosen = (fm.rounded_choice(self.model, self.cs, n) if relax
                            else fm.chosen_configs(self.model, self.cs, n))
        return out

    def allocation(self) -> Array:
        """The (J, N) allocation of a solved placement-level model."""
        return self.fm.placement_allocation(self.model, self.pr)

    def snapshot(self) -> Any:  # Any: the model's saved state, opaque to callers
        import pyomo.environ as pyo

        return self._chosen.copy(), [(v, v.value) for v in self.model.component_data_objects(pyo.Var)]

    def restore(self, snap: Any) -> None:  # Any: the model's saved state, opaque to callers
        chosen, values = snap
        self._chosen = chosen.copy()
        for v, val in values:
            v.set_value(val, skip_validation=True)

    def exclude(self, config_indices: ArrayIn) -> None:
        self.fm.exclude_choice(self.model, config_indices)

    def set_floor(self, value: float | None) -> None:
        t = self.model.t
        if value is None:
            t.setlb(self.pr.eps)
        else:
            t.setlb(float(value))


#: Either route's configuration (or placement) model.
ConfigModel = ArrayModel | PyomoModel
