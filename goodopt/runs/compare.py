"""Comparing allocation methods on scenarios: one tidy table of :data:`~goodopt.runs.tables.COLUMNS`.

Each row is one (scenario, method, seed) solve, run through the same task
runner as a sweep (each process warms a method up before timing it), without
a cache. ``gap_to_bound`` is NaN where no method proved a bound.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pandas as pd

from goodopt.errors import ValidationError
from goodopt.scenario import Scenario
from goodopt.solvers.api import METHODS, RANDOMISED
from goodopt.sources import load_scenario

from ..records import RecordIn
from .sweep import run_cached
from .tables import COLUMNS, add_reference_columns, frame
from .task_types import SolveTask
from .tasks import solve_task

#: A scenario as compare takes it: a file, a shipped name, ``family:NAME:SEED``, or the object itself.
ScenarioSource = str | os.PathLike[str] | Scenario


def compare(scenarios: Sequence[ScenarioSource], methods: Sequence[str], *, n_seeds: int = 1,
            time_limit_s: float | None = None, options: Mapping[str, RecordIn] | None = None,
            progress: bool = True, workers: int = 1, traces: bool = False,
            cache_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Solve every scenario with every method (randomised ones with ``n_seeds`` seeds).

    ``scenarios`` are files, shipped names, ``family:NAME:SEED`` or
    :class:`~goodopt.scenario.Scenario` objects (objects run in this process
    only); ``options`` maps method -> extra options. Returns the tidy table;
    with ``traces`` it has a last column ``trace``: each solve's
    ``(seconds, incumbent, bound)`` points (:attr:`goodopt.solvers.result.SolverStats.trace`), for
    :func:`~goodopt.runs.plots.plot_convergence`. With ``cache_dir`` (scenarios given by name or file only),
    solves found in that sweep cache are read from it and the others stored there, as a sweep's are.
    """
    tasks = compare_tasks(scenarios, methods, n_seeds=n_seeds, time_limit_s=time_limit_s, options=options)
    inline = any(isinstance(t.scenario, Scenario) for t in tasks)
    if inline and cache_dir is not None:
        raise ValidationError("cache_dir", "a scenario given as an object has no cache key",
                              "pass its file or name, or no cache_dir")
    results, _ = run_cached(tasks, "solving", cache_dir=cache_dir, workers=1 if inline else workers,
                            progress=progress)
    df = frame(r["row"] for r in results)
    df = add_reference_columns(df, by=["scenario"])
    df = df[list(COLUMNS)]
    if traces:
        df["trace"] = [[tuple(p) for p in r.get("trace", [])] for r in results]
    return df


def compare_tasks(scenarios: Sequence[ScenarioSource], methods: Sequence[str], *, n_seeds: int = 1,
                  time_limit_s: float | None = None,
                  options: Mapping[str, RecordIn] | None = None) -> list[SolveTask]:
    """The solve tasks of :func:`compare` (checked: methods known, every scenario readable), in its order."""
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise ValidationError("seeds", f"must be a whole number >= 1, got {n_seeds!r}")
    for m in methods:
        if m not in METHODS:
            raise ValidationError("methods", f"unknown method {m!r}", f"choose from {', '.join(METHODS)}")
    options = options or {}
    for s in scenarios:  # every scenario is read once here, so a bad one is reported before any solve
        if not isinstance(s, Scenario):
            load_scenario(s)
    tasks = []
    for sc in scenarios:
        for m in methods:
            opts = dict(options.get(m, {}))
            if time_limit_s is not None:
                opts["time_limit_s"] = time_limit_s
            for seed in (range(n_seeds) if m in RANDOMISED else [None]):
                tasks.append(solve_task(sc, m, opts, seed=seed))
    return tasks
