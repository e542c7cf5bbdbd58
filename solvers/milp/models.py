"""The two models of an exact solve, built for a :class:`~.run.MilpRun` on its route: the configuration level
(arrays into HiGHS, with node-pattern rows for some GPU types, or pyomo) and the placement level (pyomo)."""

from __future__ import annotations

from collections.abc import Iterable

from goodopt.arrays import Array
from goodopt.records import Record

from ..config_model import ArrayModel, ConfigModel, PyomoModel
from .run import MilpRun, config_highs_options, model_route


def solver_kwargs(run: MilpRun) -> Record:
    """The chosen solver, its own parameters and its feasibility tolerance (HiGHS's is in its options)."""
    o = run.opts
    return {"solver": o.solver, "solver_options": o.solver_options,
            "feasibility_tol": None if o.solver == "highs" else run.solver_feasibility}


def config_model(run: MilpRun, placement: Iterable[int] = (), *, staged: bool = True) -> ConfigModel:
    """The configuration level on the chosen route (arrays into HiGHS, or pyomo).

    ``placement``: GPU types whose node-pattern rows are added (array route); ``staged``: for the staged method
    (HiGHS's options of :func:`~.run.config_highs_options`), not the reference model.
    """
    o = run.opts
    native = config_highs_options(o, staged=staged)
    model: ConfigModel
    if model_route(o) == "arrays":
        model = ArrayModel(run.pr, run.cs, run.objective, threads=o.threads, highs_options=native,
                           placement=placement, **solver_kwargs(run))
        run.info["pattern_types"] = [run.pr.type_names[g] for g in model.mm.pattern_types]
    else:
        model = PyomoModel(run.pr, run.cs, run.objective, level="config", threads=o.threads,
                           highs_options=native, **solver_kwargs(run))
    run.build_s += model.build_s
    run.last_model = model
    return model


def placement_model(run: MilpRun, fixed_choice: Array | None = None) -> PyomoModel:
    o = run.opts
    model = PyomoModel(run.pr, run.cs, run.objective, level="placement", symmetry=o.symmetry,
                       fixed_choice=fixed_choice, threads=o.threads, highs_options=o.highs_options,
                       **solver_kwargs(run))
    run.build_s += model.build_s
    run.last_model = model
    return model
