"""A front: its points (criteria values, allocation, how each was found), and non-dominance by moocore."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arrays import Array
from ..records import Record
from .criteria import Criterion


@dataclass(frozen=True)
class FrontPoint:
    """One allocation of a front. ``values``: its criteria (the evaluator's, in the front's order); ``status``:
    ``optimal`` (an exact point certified for its levels), the solver's stop (``time_limit``, ...) or
    ``heuristic``; ``levels``: the constraint levels it was solved under (exact points); ``bound``: the best
    efficiency any allocation meeting those levels can have (exact points)."""

    values: tuple[float, ...]
    alloc: Array
    status: str
    levels: tuple[float, ...] = ()
    bound: float = float("nan")

    @property
    def certified(self) -> bool:
        return self.status == "optimal"


@dataclass(frozen=True)
class Front:
    """The non-dominated points a method found, with what it cost. ``method``: ``exact``, ``nsga2``, ...;
    ``seed``: a heuristic's; ``cpu_s``: the process CPU seconds of the whole run; ``solves``: MILPs solved
    (exact) or evaluations (heuristics)."""

    criteria: tuple[Criterion, ...]
    points: tuple[FrontPoint, ...]
    method: str
    seed: int | None = None
    cpu_s: float = float("nan")
    solves: int = 0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def values(self) -> Array:
        """Shapes: -> (n_points, n_criteria)."""
        return np.array([p.values for p in self.points], float).reshape(-1, len(self.criteria))

    @property
    def maximise(self) -> list[bool]:
        return [c.maximise for c in self.criteria]

    def rows(self) -> list[Record]:
        """One tidy row per point (the CSV of ``goodopt pareto``)."""
        out = []
        for i, p in enumerate(self.points):
            row: dict[str, Any] = {"method": self.method, "seed": self.seed, "point": i, "status": p.status,
                                   "certified": p.certified}
            row.update({c.name: v for c, v in zip(self.criteria, p.values)})
            if p.levels:
                row.update({f"level_{c.name}": v for c, v in zip(self.criteria[1:], p.levels)})
                row["efficiency_bound"] = p.bound
            out.append(row)
        return out


def nondominated(values: Array, maximise: Sequence[bool]) -> Array:
    """Which rows of ``values`` no other row dominates (one of each set of equal rows kept). Shapes: (n, K) ->
    (n,) bool."""
    import moocore

    v = quantized(np.asarray(values, float))
    if len(v) == 0:
        return np.zeros(0, bool)
    keep = np.asarray(moocore.is_nondominated(v, maximise=list(maximise), keep_weakly=False), bool)
    return keep


def quantized(v: Array, digits: int = 12) -> Array:
    """``v`` rounded to ``digits`` significant digits: sums of the same prices or speedups in another order
    (1e-16 apart) compare equal. Where the power of ten is an exact double (up to 1e22) each value becomes the
    double nearest its rounded decimal (2.0 stays 2.0): an integer count of units over that power."""
    v = np.asarray(v, float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        k = digits - 1 - np.floor(np.log10(np.where((v == 0) | ~np.isfinite(v), 1.0, np.abs(v))))
        exact = np.abs(k) <= 22
        kk = np.where(exact, k, 0.0)
        up, down = 10.0 ** np.maximum(kk, 0), 10.0 ** np.maximum(-kk, 0)
        scale = 10.0 ** -k
        out = np.where(exact, np.round(v * up / down) * down / up, np.round(v / scale) * scale)
    return np.where(np.isfinite(v), out, v)


def nondominated_points(points: Sequence[FrontPoint], maximise: Sequence[bool]) -> tuple[FrontPoint, ...]:
    """The points of ``points`` that no other dominates, in order of the first criterion (best first)."""
    if not points:
        return ()
    v = np.array([p.values for p in points], float)
    keep = np.flatnonzero(nondominated(v, maximise))
    sign = -1.0 if maximise[0] else 1.0
    order = keep[np.lexsort((v[keep, 1] * (-1.0 if maximise[1] else 1.0), sign * v[keep, 0]))]
    return tuple(points[i] for i in order)


def enumerated_front(problem: Any, criteria: tuple[Criterion, ...], *, max_allocations: int = 2_000_000) -> Front:  # problem: an AllocationProblem (imported lazily, with the solvers)
    """The front of a tiny instance by scoring every allocation (the check of the exact front): the
    non-dominated set of the feasible allocations' criteria, one allocation per distinct vector."""
    import time

    from ..solvers.exhaustive import allocation_blocks
    from .criteria import evaluate_criteria

    t0 = time.process_time()
    maximise = [c.maximise for c in criteria]
    kept: list[FrontPoint] = []
    ev = problem.evaluator()
    for pop in allocation_blocks(problem, max_allocations=max_allocations):
        values, feasible = evaluate_criteria(problem, criteria, pop, ev)
        idx = np.flatnonzero(feasible)
        idx = idx[nondominated(values[idx], maximise)]
        kept = list(nondominated_points(kept + [FrontPoint(tuple(values[i]), pop[i].copy(), "enumerated")
                                                for i in idx], maximise))
    return Front(criteria=criteria, points=tuple(kept), method="enumeration", cpu_s=time.process_time() - t0)
