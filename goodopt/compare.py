"""Comparing allocation methods on scenarios: one tidy table.

Each row is one (scenario, method, seed) solve. ``gap_to_bound`` is the
relative distance of the row's fitness to the *best proven bound* of its
scenario (the smallest upper bound any method reported); it is NaN when no
method proved a bound.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import ValidationError
from .solvers.api import RANDOMISED  # the methods that need a seed

log = logging.getLogger(__name__)

COLUMNS = ("scenario", "n_jobs", "n_nodes", "n_gpus", "method", "seed", "status", "stopped_by_clock",
           "has_solution", "feasible",
           "fitness", "bound", "gap", "seconds", "build_s", "solve_s", "n_evaluations", "nodes",
           "best_bound", "gap_to_bound", "relative_fitness")


def compare(scenarios, methods, *, n_seeds: int = 1, time_limit_s=None, options=None,
            progress: bool = True) -> pd.DataFrame:
    """Solve every scenario with every method (randomised ones with ``n_seeds`` seeds).

    ``options`` maps method -> extra options. Returns the tidy table of :data:`COLUMNS`.
    """
    from .scenario import Scenario, load_scenario
    from .solvers import METHODS, solve

    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValidationError("seeds", f"must be a whole number >= 1, got {n_seeds!r}")
    for m in methods:
        if m not in METHODS:
            raise ValidationError("methods", f"unknown method {m!r}", f"choose from {', '.join(METHODS)}")
    options = options or {}
    scs = [s if isinstance(s, Scenario) else load_scenario(s) for s in scenarios]
    tasks = [(sc, m, seed) for sc in scs for m in methods
             for seed in (range(n_seeds) if m in RANDOMISED else [None])]
    rows = []
    problems = {}
    from .sweep import progress_bar

    bar = progress_bar(progress)
    with bar:
        task = bar.add_task("solving", total=len(tasks))
        for sc, m, seed in tasks:
            pr = problems.get(id(sc)) or problems.setdefault(id(sc), sc.problem())
            opts = dict(options.get(m, {}))
            if time_limit_s is not None:
                opts["time_limit_s"] = time_limit_s
            if seed is not None:
                opts["seed"] = seed
            bar.update(task, description=f"{sc.name}: {m}" + (f" seed {seed}" if seed is not None else ""))
            res = solve(pr, m, opts)
            rows.append({"scenario": sc.name, **result_row(pr, m, seed, res)})
            bar.advance(task)
    df = add_reference_columns(pd.DataFrame(rows), by=["scenario"])
    return df[list(COLUMNS)]


def result_row(problem, method: str, seed, res) -> dict:
    """The table row of one solve (without the scenario name and the reference columns)."""
    return {
        "n_jobs": problem.n_jobs, "n_nodes": problem.n_nodes, "n_gpus": problem.n_gpus,
        "method": method, "seed": seed, "status": str(res.status),
        "stopped_by_clock": res.status == "time_limit",  # machine-dependent: a wall-clock limit ended it
        "has_solution": res.has_solution,
        "feasible": res.feasible, "fitness": res.fitness, "bound": res.bound, "gap": res.gap,
        "seconds": res.stats.total_s, "build_s": res.stats.build_s, "solve_s": res.stats.solve_s,
        "n_evaluations": res.stats.n_evaluations, "nodes": res.stats.nodes,
    }


def add_reference_columns(df: pd.DataFrame, by) -> pd.DataFrame:
    """Add ``best_bound`` (smallest proven bound in the group), ``gap_to_bound`` and ``relative_fitness``
    (fitness over the group's best fitness) per group of rows solving the same problem."""
    df = df.copy()
    g = df.groupby(by, dropna=False)
    best_bound = g["bound"].transform(lambda b: b[np.isfinite(b)].min())
    best_fit = g["fitness"].transform("max")
    df["best_bound"] = best_bound
    gap = (best_bound - df["fitness"]) / best_bound.abs()
    df["gap_to_bound"] = gap.where(gap.abs() > 1e-9, 0.0)  # numerical noise of proven optima
    df["relative_fitness"] = df["fitness"] / best_fit
    return df


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean fitness, gap to the best bound and seconds per (scenario, method)."""
    g = table.groupby(["scenario", "method"], sort=False)
    out = g.agg(fitness=("fitness", "mean"), gap_to_bound=("gap_to_bound", "mean"),
                relative_fitness=("relative_fitness", "mean"), seconds=("seconds", "mean"),
                status=("status", lambda s: ",".join(sorted(set(s)))))
    return out.reset_index()


def write_table(table: pd.DataFrame, path, **metadata) -> Path:
    """Write ``table`` as CSV and its metadata as JSON next to it."""
    from . import __version__

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    meta = {"goodopt_version": __version__, "columns": list(table.columns), "n_rows": len(table), **metadata}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2, default=str))
    return path
