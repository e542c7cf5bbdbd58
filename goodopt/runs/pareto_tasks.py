"""Fronts in a sweep (``kind: pareto``): one task per front, then each heuristic front and each heuristic's
attainment surfaces over its seeds judged against the exact front of the same scenario and criteria.

A task computes one front exactly as ``goodopt pareto`` does (:mod:`goodopt.pareto`; a heuristic starts from
greedy's allocation); its row is the front's size, certified points, solves and CPU seconds, its per-job rows
are the front's points (one row each, with every criterion). When every task is in, :func:`judged` adds the
indicators of each heuristic front (``hv_ratio``, ``igd_plus``, ``eps_additive``, ``attained``) and one row per
attainment surface (``surface``: best, median, worst; ``seed`` empty), computed from the points' rows, so a
cached front is judged exactly like a new one.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from goodopt.pareto.attainment import attainment_surfaces, surface_front
from goodopt.pareto.criteria import parse_criteria
from goodopt.pareto.exact import ExactFrontOptions, exact_front
from goodopt.pareto.front import Front, FrontPoint
from goodopt.pareto.heuristic import heuristic_front
from goodopt.pareto.indicators import JUDGED, indicators
from goodopt.pareto.study import front_options, greedy_start
from goodopt.sources import load_scenario

from ..records import Record
from .spec import SweepSpec
from .task_types import ParetoTask

#: The indicator columns of a judged front.
INDICATOR_COLUMNS = JUDGED


def pareto_tasks(spec: SweepSpec) -> list[ParetoTask]:
    """The fronts of a ``kind: pareto`` spec: per scenario and criteria, the exact front once and each heuristic
    once per seed."""
    return [ParetoTask(sc, obj, v.name, dict(v.options), dict(spec.prices), seed=None if v.name == "exact" else s,
                       label=v.label)
            for sc in spec.scenarios for obj in spec.objectives for v in spec.variants
            for s in ((None,) if v.name == "exact" else spec.seeds)]


def run_pareto_task(task: ParetoTask) -> Record:
    """``{"row": the front's summary, "jobs": its points}`` (see the module)."""
    t0 = time.process_time()
    problem = load_scenario(task.scenario).problem()
    criteria = parse_criteria(task.objectives, problem, dict(task.prices) or None)
    opts = front_options(task.method, task.options, seed=task.seed or 0)
    if isinstance(opts, ExactFrontOptions):
        front = exact_front(problem, criteria, opts)
    else:
        front = heuristic_front(problem, criteria, task.method, opts, seeds=[greedy_start(problem)])
    head = {"scenario": task.scenario, "objectives": task.objectives}
    row = {**head, "method": task.method, "seed": task.seed, "points": len(front.points),
           "certified": sum(p.certified for p in front.points), "solves": front.solves, "front_cpu_s": front.cpu_s,
           "cpu_s": time.process_time() - t0}
    jobs = [{**head, **r} for r in front.rows()]
    return {"row": row, "jobs": jobs}


def judged(table: pd.DataFrame, points: pd.DataFrame, spec: SweepSpec) -> pd.DataFrame:
    """``table`` with each heuristic front's indicators against its exact front, and one row per attainment
    surface (see the module); fronts without an exact one in the sweep keep NaN indicators."""
    if table.empty:
        return table
    out = table.copy()
    for col in INDICATOR_COLUMNS:
        out[col] = np.nan
    out["surface"] = ""
    extra: list[dict[str, Any]] = []
    for (scenario, objectives), rows in out.groupby(["scenario", "objectives"], sort=False):
        criteria = parse_criteria(objectives, load_scenario(scenario).problem(), dict(spec.prices) or None)
        mine = points[(points["scenario"] == scenario) & (points["objectives"] == objectives)]
        exact_rows = rows[rows["method"] == "exact"]
        exact = _front(mine, exact_rows["label"].iloc[0], None, criteria, rows) if len(exact_rows) else None
        for label, group in rows[rows["method"] != "exact"].groupby("label", sort=False):
            fronts = [f for seed in group["seed"] if (f := _front(mine, label, seed, criteria, rows)) is not None]
            if exact is None or not exact.points or len(fronts) != len(group):
                continue
            for i, f in zip(group.index, fronts):
                out.loc[i, list(INDICATOR_COLUMNS)] = [getattr(indicators(f, exact), c) for c in INDICATOR_COLUMNS]
            base = group.iloc[0]
            for sf in attainment_surfaces(fronts):
                ind = indicators(surface_front(sf, exact), exact)
                extra.append({"scenario": scenario, "label": label, "objectives": objectives, "method": base["method"],
                              "seed": None, "surface": sf.level, "points": len(sf.values),
                              "front_cpu_s": float(group["front_cpu_s"].sum()),
                              **{c: getattr(ind, c) for c in INDICATOR_COLUMNS}})
    return pd.concat([out, pd.DataFrame(extra)], ignore_index=True) if extra else out


def _front(points: pd.DataFrame, label: str, seed: int | None, criteria: Any, rows: pd.DataFrame) -> Front | None:
    """The front of ``label`` (and ``seed``) rebuilt from its points' rows (values only); None when the sweep
    holds no such front."""
    task_rows = rows[(rows["label"] == label) & (rows["seed"].isna() if seed is None else rows["seed"] == seed)]
    if task_rows.empty:
        return None
    mine = points[(points["label"] == label) & (points["seed"].isna() if seed is None else points["seed"] == seed)]
    names = [c.name for c in criteria]
    empty = np.zeros((0, 0), np.int64)
    pts = tuple(FrontPoint(tuple(float(x) for x in r), empty, str(s))
                for r, s in zip(mine[names].to_numpy(float), mine["status"]))
    return Front(criteria=criteria, points=pts, method=label, seed=seed)
