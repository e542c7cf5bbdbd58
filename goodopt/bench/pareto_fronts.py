"""The heuristic fronts against the exact one (``make bench BENCH_ARGS="--only pareto"``): NSGA-II and NSGA-III
over seeds, each front's indicators against the exact front of the same instance, and its CPU seconds beside
the exact front's, both measured in this run (:mod:`goodopt.pareto`)."""

from __future__ import annotations

from collections.abc import Callable

from ..families import FAMILIES
from ..pareto.attainment import attainment_surfaces, surface_front
from ..pareto.criteria import parse_criteria
from ..pareto.exact import ExactFrontOptions, exact_front
from ..pareto.heuristic import HeuristicFrontOptions, heuristic_front
from ..pareto.indicators import indicators
from ..pareto.study import greedy_start
from ..records import Record

#: (family, seed, exact points at most, seconds a MILP may take): the instances of the table.
INSTANCES = (("sia-64", 0, 40, 60.0), ("five-types-512", 0, 12, 30.0))
OBJECTIVES = "efficiency,fairness"
ALGORITHMS = ("nsga2", "nsga3")
SEEDS = (0, 1, 2)


def pareto_table(progress: Callable[[], None] | None = None) -> list[Record]:
    """One row per instance and heuristic run: its front's size, CPU seconds and indicators, with the exact front's
    size, certified points and CPU seconds; then per instance and heuristic one row per attainment surface over
    its seeds (``surface``: best, median, worst; its CPU seconds those of all its seeds)."""
    rows = []
    for family, seed, max_points, limit in INSTANCES:
        pr = FAMILIES[family].scenario(seed).problem()
        criteria = parse_criteria(OBJECTIVES, pr)
        exact = exact_front(pr, criteria, ExactFrontOptions(max_points=max_points, time_limit_s=limit))
        certified = sum(p.certified for p in exact.points)
        start = [greedy_start(pr)]
        base = {"family": family, "seed": seed, "objectives": OBJECTIVES}
        tail = {"exact_points": len(exact.points), "exact_certified": certified, "exact_milps": exact.solves,
                "exact_cpu_s": exact.cpu_s}
        for name in ALGORITHMS:
            fronts = []
            for s in SEEDS:
                front = heuristic_front(pr, criteria, name, HeuristicFrontOptions(seed=s), seeds=start)
                fronts.append(front)
                rows.append({**base, "method": name, "run_seed": s, "surface": "", "points": len(front.points),
                             "cpu_s": front.cpu_s, **vars(indicators(front, exact)), **tail,
                             "ratio_to_exact_cpu": front.cpu_s / exact.cpu_s})
                if progress:
                    progress()
            cpu = sum(f.cpu_s for f in fronts)
            rows += [{**base, "method": name, "run_seed": "", "surface": sf.level, "points": len(sf.values),
                      "cpu_s": cpu, **vars(indicators(surface_front(sf, exact), exact)), **tail,
                      "ratio_to_exact_cpu": cpu / exact.cpu_s} for sf in attainment_surfaces(fronts)]
    return rows
