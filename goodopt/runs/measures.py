r"""Measures of a solve's course, from the incumbent and bound it recorded over time.

Each solve's trace is its ``(seconds, incumbent, bound)`` points in fitness units
(:attr:`goodopt.solvers.SolverStats.trace`), closed by its answer at its end. Against a reference value
``F*`` of the instance (a library's certified value, or the best any method found):

* the *primal gap* of an incumbent ``F`` (Berthold, Oper. Res. Lett. 41, 2013) is ``|F* - F| / max(|F*|, |F|)``,
  and 1 while there is no incumbent;
* the *primal integral* ``P(T) = \int_0^T gamma(t) dt`` sums it over the run up to ``T`` (the time limit, or
  the longest run on the instance), in seconds: 0 for an optimum found at once, ``T`` for nothing found;
* the *primal-dual integral* sums the gap between incumbent and bound the same way (1 while either is
  missing): how long the solve ran before it knew how good its answer was;
* the *time to target* ``x`` is the first time the incumbent lies within ``x`` (relative) of ``F*``
  (``inf`` if never), and the time-to-target curve of a method the fraction of instances within ``x`` by
  time ``t``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

Trace = Sequence[tuple[float, float, float]]


def primal_gap(value: float, reference: float) -> float:
    """Berthold's primal gap of ``value`` against ``reference`` (1 without a finite value)."""
    if not math.isfinite(value):
        return 1.0
    if value == reference:
        return 0.0
    if value * reference < 0:
        return 1.0
    return abs(reference - value) / max(abs(reference), abs(value))


def closed_trace(trace: Trace, seconds: float, fitness: float, bound: float) -> list[tuple[float, float, float]]:
    """The trace with the solve's answer as its last point (the re-scored fitness at the end)."""
    points = sorted((float(t), float(f), float(b)) for t, f, b in trace)
    return points + [(float(seconds), float(fitness), float(bound))]


def _steps(points: list[tuple[float, float, float]], horizon: float,
           gap: Callable[[float, float], float]) -> float:
    """``\\int_0^horizon`` of the step function ``gap(point)`` (1 before the first point)."""
    total, t_prev, g_prev = 0.0, 0.0, 1.0
    for t, f, b in points:
        t = min(max(t, 0.0), horizon)
        total += g_prev * (t - t_prev)
        t_prev, g_prev = t, gap(f, b)
    return total + g_prev * (horizon - t_prev)


def primal_integral(points: list[tuple[float, float, float]], reference: float, horizon: float) -> float:
    """``P(horizon)`` of a closed trace against ``reference``."""
    return _steps(points, horizon, lambda f, b: primal_gap(f, reference))


def primal_dual_integral(points: list[tuple[float, float, float]], horizon: float) -> float:
    """The integral of the gap between incumbent and bound of a closed trace."""
    def gap(f: float, b: float) -> float:
        if not (math.isfinite(f) and math.isfinite(b)):
            return 1.0
        return min(1.0, primal_gap(f, b))

    return _steps(points, horizon, gap)


def time_to_target(points: list[tuple[float, float, float]], reference: float, within: float) -> float:
    """The first time a closed trace's incumbent lies within ``within`` of ``reference`` (inf if never)."""
    for t, f, _ in points:
        if math.isfinite(f) and primal_gap(f, reference) <= within:
            return max(float(t), 0.0)
    return math.inf


def reference_values(table: pd.DataFrame, library: Mapping[str, float] | None = None) -> pd.Series:
    """Each scenario's reference ``F*``: the library's value where it has one, else the best feasible fitness
    any row found."""
    best = table["fitness"].where(table["feasible"].astype(bool)).groupby(table["scenario"]).max()
    if library:
        lib = pd.Series({k: v for k, v in library.items() if k in best.index}, dtype=float)
        best.loc[lib.index] = lib
    return best


def measures_table(table: pd.DataFrame, library: Mapping[str, float] | None = None, *,
                   horizon: float | None = None, targets: Sequence[float] = (0.0, 1e-2)) -> pd.DataFrame:
    """Per row of a compare table with traces: its primal and primal-dual integrals, primal gap at the end and
    times to the targets (``ttt_X``). ``horizon``: the time limit (default: the longest run of the instance)."""
    ref = reference_values(table, library)
    longest = table.groupby("scenario")["seconds"].transform("max")
    rows = []
    for i, r in table.iterrows():
        fitness = r["fitness"] if bool(r["feasible"]) else math.nan
        pts = closed_trace(r.get("trace") or [], r["seconds"], fitness, r["bound"])
        h = float(horizon if horizon is not None else longest[i])
        f_star = float(ref[r["scenario"]])
        row = {"scenario": r["scenario"], "method": r["method"], "seed": r["seed"], "reference": f_star,
               "primal_gap": primal_gap(fitness, f_star), "primal_integral": primal_integral(pts, f_star, h),
               "primal_dual_integral": primal_dual_integral(pts, h)}
        for x in targets:
            row[f"ttt_{x:g}"] = time_to_target(pts, f_star, x)
        rows.append(row)
    return pd.DataFrame(rows)


def time_to_target_curve(measures: pd.DataFrame, target: float, times: Sequence[float] | None = None) -> pd.DataFrame:
    """Per method, the fraction of instances within ``target`` of their reference by each time (seeds: the
    median time). Indexed by ``t``; one column per method."""
    col = f"ttt_{target:g}"
    per = measures.groupby(["scenario", "method"], sort=False)[col].median().unstack("method")
    per = per.reindex(columns=list(dict.fromkeys(measures["method"])))
    values = per.to_numpy(dtype=float)
    if times is None:
        grid = np.unique(np.concatenate([[0.0], values[np.isfinite(values)]]))
    else:
        grid = np.asarray(times, float)
    data = {m: [(per[m] <= t).mean() for t in grid] for m in per.columns}
    return pd.DataFrame(data, index=pd.Index(grid, name="t"))
