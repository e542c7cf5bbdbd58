"""goodopt's certified solve on each MILP backend beside a Sia-style ILP (``make bench BENCH_ARGS="--only
sia-backends"``).

The same instances as :mod:`goodopt.bench.sia_ilp`'s smallest family (sia-64, seeds 0-9, Sia's objective), solved
by ``milp`` with ``solver`` set to each installed backend of :data:`goodopt.solvers.mip_solvers.SOLVERS`: the
exact method's MILP stages (the dives' models, the configuration and pattern-row models) run on that backend,
its LP stages (relaxation, certificate) on HiGHS, and every answer is judged by goodopt as on HiGHS. Beside it,
the Sia-style ILP of :func:`goodopt.bench.sia_ilp.sia_ilp_matrix` on HiGHS in the same run. One thread; each
CPU time the least of :data:`goodopt.bench.sia_ilp.REPEATS`. A seed's rows carry whether every backend found the
same fitness (to 1e-9 relative), and the summary per backend its median and worst seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..families import FAMILIES
from ..records import Record
from ..scenario import Objective
from ..solvers.api import solve
from ..solvers.mip_solvers import SOLVERS, adapter, missing
from .sia_ilp import NODE_LIMIT, baseline_limits, least_cpu, sia_ilp_matrix

FAMILY = "sia-64"
SEEDS = tuple(range(10))
#: Relative difference of two backends' fitness still read as the same optimum.
SAME_FITNESS_RTOL = 1e-9


def backend_rows(family: str = FAMILY, seeds: Sequence[int] = SEEDS, backends: Sequence[str] | None = None,
                 progress: Callable[[], None] | None = None) -> list[Record]:
    """One row per (seed, installed backend): CPU seconds, status and fitness of the certified solve, the Sia-style
    ILP's CPU seconds on HiGHS and the ratio, and whether the seed's backends agree on the fitness."""
    names = [name for name in (backends or tuple(SOLVERS)) if missing(name) is None]
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        pr = replace(FAMILIES[family].scenario(seed), objective=Objective.sia()).problem()
        ilp_cpu, _ = least_cpu(lambda: adapter("highs").solve(sia_ilp_matrix(pr), baseline_limits()))  # noqa: B023
        seed_rows = []
        for name in names:
            cpu, res = least_cpu(lambda: solve(pr, "milp", {"threads": 1, "node_limit": NODE_LIMIT,  # noqa: B023
                                                             "solver": name}))
            seed_rows.append({"family": family, "seed": seed, "solver": name, "cpu_s": cpu, "status": str(res.status),
                              "fitness": float(res.fitness), "sia_ilp_highs_cpu_s": ilp_cpu,
                              "ratio_to_sia_ilp": cpu / ilp_cpu})
        fits = np.array([r["fitness"] for r in seed_rows])
        same = bool(len(fits) and np.ptp(fits) <= SAME_FITNESS_RTOL * np.abs(fits).max(initial=1.0))
        rows += [{**r, "same_fitness": same} for r in seed_rows]
        if progress:
            progress()
    return rows


def backend_summary(rows: Sequence[Record]) -> list[Record]:
    """Per backend: seeds, median and worst CPU seconds (and that seed), the worst ratio to the Sia-style ILP, and
    whether every seed was certified optimal and agreed with the other backends."""
    out = []
    for name in dict.fromkeys(r["solver"] for r in rows):
        r = [x for x in rows if x["solver"] == name]
        cpu = np.array([x["cpu_s"] for x in r])
        worst = int(np.argmax(cpu))
        out.append({"solver": name, "seeds": len(r), "cpu_s_median": float(np.median(cpu)),
                    "cpu_s_worst": float(cpu[worst]), "worst_seed": r[worst]["seed"],
                    "worst_ratio_to_sia_ilp": max(x["ratio_to_sia_ilp"] for x in r),
                    "certified": all(x["status"] == "optimal" for x in r),
                    "same_fitness": all(x["same_fitness"] for x in r)})
    return out
