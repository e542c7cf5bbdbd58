"""Attainment across seeds: what a randomised front method reaches in its best, median and worst run.

A point of the criteria space is *attained* by a run when the run's front holds
a point at least as good in every criterion; the empirical attainment function
(Grunert da Fonseca, Fonseca and Hall, EMO 2001) gives, for every point, the
share of the seeds whose fronts attain it. Its ``k``% *attainment surface* is the
boundary of the points attained by at least ``k``% of the seeds: the
best-run surface (attained by at least one seed), the median surface (half of
them) and the worst-run surface (all of them). moocore computes the surfaces
(:func:`moocore.eaf`); each is then judged against the exact front with the
same indicators as a single front (:mod:`~goodopt.pareto.indicators`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..arrays import Array
from ..errors import ValidationError
from .front import Front, FrontPoint

#: The surfaces reported: attained by at least one seed, by half of them, by every one.
SURFACES = ("best", "median", "worst")


@dataclass(frozen=True)
class AttainmentSurface:
    """One attainment surface of a method over ``n_seeds`` seeds: ``level`` (one of :data:`SURFACES`),
    ``percentile`` (the share of the seeds, in %, that attains it) and its points in the criteria's own units
    and directions. Shapes: values (n, K)."""

    method: str
    level: str
    percentile: float
    n_seeds: int
    values: Array


def attainment_surfaces(fronts: Sequence[Front]) -> tuple[AttainmentSurface, ...]:
    """The best, median and worst attainment surfaces of ``fronts`` (one method's fronts over its seeds, the
    same criteria); a front without points attains nothing. With one seed the three surfaces are its front."""
    if not fronts:
        raise ValidationError("fronts", "holds no front", "pass the fronts of one method over its seeds")
    methods = {f.method for f in fronts}
    criteria = {f.criteria for f in fronts}
    if len(methods) != 1 or len(criteria) != 1:
        raise ValidationError("fronts", f"must be one method's over its seeds with the same criteria, got "
                              f"{sorted(methods)}", "group the fronts by method first")
    front0 = fronts[0]
    sign = np.where(front0.maximise, -1.0, 1.0)  # moocore's EAF minimises every criterion
    values = [f.values * sign for f in fronts]
    n = len(fronts)
    sets = np.concatenate([np.full(len(v), i + 1) for i, v in enumerate(values)])
    points = np.concatenate(values) if sets.size else np.zeros((0, len(sign)))
    levels = {"best": 100.0 / n, "median": 50.0, "worst": 100.0}
    return tuple(AttainmentSurface(front0.method, name, levels[name], n,
                                   _surface(points, sets, levels[name], n) * sign) for name in SURFACES)


def _surface(points: Array, sets: Array, percentile: float, n_sets: int) -> Array:
    """The points of the ``percentile``% attainment surface (minimised units). Shapes: points (m, K), sets (m,)
    -> (s, K)."""
    import moocore

    k, present = points.shape[1], len(np.unique(sets))
    needed = int(np.ceil(percentile / 100.0 * n_sets - 1e-9))  # seeds that must attain a point of the surface
    if not len(points) or needed > present:
        return np.zeros((0, k))
    # moocore counts shares of the sets it is given (seeds with an empty front attain nothing but still count),
    # at least ceil(share x sets) of them: half a set below the count asked for is that count exactly
    eaf = np.asarray(moocore.eaf(points, sets, percentiles=[100.0 * (needed - 0.5) / present]), float)
    return eaf[:, :k]


def surface_front(surface: AttainmentSurface, like: Front) -> Front:
    """``surface`` as a :class:`Front` of ``like``'s criteria (points without allocations), for the
    indicators and the figure."""
    empty = np.zeros((0, 0), np.int64)
    points = tuple(FrontPoint(tuple(map(float, v)), empty, "attainment") for v in surface.values)
    return Front(criteria=like.criteria, points=points, method=f"{surface.method} {surface.level}",
                 info={"percentile": surface.percentile, "n_seeds": surface.n_seeds})
