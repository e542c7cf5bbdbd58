"""goodopt's certified solve beside a Sia-style ILP in the same run (``make bench BENCH_ARGS="--only sia"``).

The baseline is the ILP Sia's paper solves, built here: over Sia's configuration set
(:func:`goodopt.formulations.configs.sia_configs`), one configuration per job at most ((0c)) and the GPUs of
each type ((R2)) -- no node rows, no pruning against an incumbent, no start -- on CBC (the solver of Sia's
artifact, run as its program on the model's MPS file) and on HiGHS (in-process), one thread, each stopping at
the relative gap Sia's artifact gives CBC (:data:`SIA_GAP`; HiGHS's default too). Its objective is goodopt's Box-Cox form of the scenario's objective
(Sia's objective here, :meth:`goodopt.scenario.Objective.sia`), so both sides optimise the same function; Sia's
own code and its goodput estimates are not run (the ratio an independent check measured against Sia's artifact
is in the README). goodopt's side is ``milp`` (certified, its node budget, one thread), over every
configuration and, beside it, over Sia's set (``configs: sia``: the same problem as the ILP's, with the
node rows that make its answers place), with what the larger set gains in fitness.

Each instance's CPU seconds (CBC's program included) are the least of :data:`REPEATS` where a solve takes
under :data:`goodopt.bench.solvers.REPEAT_BELOW_S`; a family's row gives the median and the worst ratio over its seeds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import ValidationError
from ..families import FAMILIES
from ..records import Record
from ..scenario import Objective
from ..solvers.api import solve
from ..solvers.details import MilpDetails
from ..solvers.mip_solvers import Limits, adapter
from ..validation import suggest
from .mip_solvers import cpu_now
from .solvers import least_cpu_of

#: (family, seeds) of the table: the issue's instances.
INSTANCES = (("sia-64", tuple(range(10))), ("five-types-512", tuple(range(5))), ("cluster-2048", tuple(range(5))),
             ("mixed-2048", tuple(range(5))), ("five-types-2048", tuple(range(5))))
#: The rows of Sia's ILP: at most one configuration per job, the GPUs of each type.
SIA_ROWS = ("0c", "1", "R2")
REPEATS = 3
#: Seconds a baseline solve may take (CBC can run for long on mixed-2048).
TIME_LIMIT_S = 60.0
#: The solvers of the baseline: Sia's artifact's (CBC) and goodopt's default (HiGHS).
BASELINE_SOLVERS = ("cbc", "highs")
NODE_LIMIT = 20_000
#: The relative gap of Sia's ILP: its artifact runs CBC with ``allowablePercentageGap = 100 * sia_solver_thresh``,
#: ``sia_solver_thresh = 1e-4`` (its simulator's configuration). goodopt's side is certified to
#: :data:`goodopt.solvers.result.CERTIFIED_GAP`, a hundred times closer.
SIA_GAP = 1e-4


def parse_instances(specs: Sequence[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The table's instances from ``FAMILY:SEEDS`` strings, SEEDS a range ``0-9`` or a list ``0,3,7`` of whole
    numbers (``--sia-instances`` of ``make bench``), each checked; a family named twice keeps both parts."""
    out = []
    for spec in specs:
        name, _, seeds = str(spec).partition(":")
        if not re.fullmatch(r"[0-9]{1,9}(-[0-9]{1,9}|(,[0-9]{1,9})*)", seeds):
            raise ValidationError("--sia-instances", f"instances are written FAMILY:SEEDS, got {spec!r}",
                                  "SEEDS is a range or a list of whole numbers: mixed-2048:5-9, sia-64:0,3")
        if name not in FAMILIES:
            raise ValidationError("--sia-instances", f"unknown family {name!r} in {spec!r}",
                                  f"{suggest(name, FAMILIES)}choose one of {', '.join(FAMILIES)}")
        first, dash, last = seeds.partition("-")
        chosen = tuple(range(int(first), int(last) + 1)) if dash else tuple(int(x) for x in seeds.split(","))
        if not chosen:
            raise ValidationError("--sia-instances", f"{spec!r} names no seed", "write the range low to high: 5-9")
        out.append((name, chosen))
    return tuple(out)


def baseline_limits() -> Limits:
    """How the Sia-style ILP is solved: one thread, :data:`TIME_LIMIT_S`, Sia's gap :data:`SIA_GAP`."""
    return Limits(threads=1, time_limit_s=TIME_LIMIT_S, mip_rel_gap=SIA_GAP)


def sia_ilp_matrix(problem: Any) -> Any:  # problem: an AllocationProblem or a Scenario; returns the ILP's arrays
    """Sia's ILP over its configuration set as a :class:`~goodopt.formulations.matrix.MatrixModel`."""
    from ..formulations.config_matrix import config_matrix
    from ..formulations.configs import sia_configs
    from ..formulations.scaled_objective import reference_fitness, scaled_objective

    cs = sia_configs(problem)
    objective = scaled_objective(problem, cs, reference_fitness(problem, cs, None), None)
    mm = config_matrix(problem, cs, objective)
    keep = np.flatnonzero(np.isin(np.asarray(mm.names), SIA_ROWS))
    return _rows(mm, keep)


def _rows(mm: Any, keep: np.ndarray) -> Any:
    """``mm`` with only the rows ``keep``."""
    from ..formulations.matrix import CscArrays

    dense_rows = np.full(mm.n_rows, -1, np.int64)
    dense_rows[keep] = np.arange(len(keep))
    cols = np.repeat(np.arange(mm.n_columns), np.diff(mm.A.indptr))
    new = dense_rows[mm.A.indices]
    on = new >= 0
    A = CscArrays.from_triplets(new[on], cols[on], mm.A.data[on], (len(keep), mm.n_columns))
    return replace(mm, A=A, row_lower=mm.row_lower[keep], row_upper=mm.row_upper[keep],
                   names=tuple(mm.names[i] for i in keep), pattern_types=(), aggregate_types=())


def least_cpu(run: Callable[[], Any]) -> tuple[float, Any]:  # Any: whatever the timed call returns, handed back
    """The least CPU seconds of ``run()`` over :data:`REPEATS` (fewer for a slow one), and its result."""
    best, result, _ = least_cpu_of(run, clock=cpu_now, repeats=REPEATS)
    return best, result


def instance_row(family: str, seed: int) -> Record:
    """goodopt's certified solve and the Sia-style ILP on one instance under Sia's objective."""
    pr = replace(FAMILIES[family].scenario(seed), objective=Objective.sia()).problem()
    g_cpu, res = least_cpu(lambda: solve(pr, "milp", {"threads": 1, "node_limit": NODE_LIMIT}))
    s_cpu, same = least_cpu(lambda: solve(pr, "milp", {"threads": 1, "node_limit": NODE_LIMIT, "configs": "sia"}))
    mm = sia_ilp_matrix(pr)
    row: dict[str, Any] = {"family": family, "seed": seed, "goodopt_cpu_s": g_cpu, "goodopt_status": str(res.status),
                           "goodopt_configs": res.details(MilpDetails).n_configs, "sia_configs": mm.n_configs,
                           "sia_set_cpu_s": s_cpu, "sia_set_status": same.details(MilpDetails).restricted_status,
                           "fitness": res.fitness, "sia_set_fitness": same.fitness,
                           "full_set_gain": res.fitness / same.fitness - 1.0}
    for name in BASELINE_SOLVERS:
        cpu, (out, _) = least_cpu(lambda: adapter(name).solve(mm, baseline_limits()))  # noqa: B023 -- called at once
        row.update({f"sia_ilp_{name}_cpu_s": cpu, f"sia_ilp_{name}_status": str(out.termination),
                    f"ratio_to_{name}": g_cpu / cpu, f"sia_set_ratio_to_{name}": s_cpu / cpu})
    return row


def sia_table(instances: Sequence[tuple[str, Sequence[int]]] = INSTANCES,
              progress: Callable[[], None] | None = None) -> tuple[list[Record], list[Record]]:
    """Per instance rows, and per family: the median and the worst (largest) ratio over its seeds."""
    rows = []
    for family, seeds in instances:
        for seed in seeds:
            rows.append(instance_row(family, seed))
            if progress:
                progress()
    summary = []
    for family, _ in instances:
        r = [x for x in rows if x["family"] == family]
        out: dict[str, Any] = {"family": family, "seeds": len(r),
                               "goodopt_cpu_s_median": float(np.median([x["goodopt_cpu_s"] for x in r])),
                               "goodopt_cpu_s_worst": max(x["goodopt_cpu_s"] for x in r),
                               "goodopt_certified": all(x["goodopt_status"] == "optimal" for x in r),
                               "sia_set_certified": all(x["sia_set_status"] == "optimal" for x in r),
                               "median_full_set_gain": float(np.median([x["full_set_gain"] for x in r]))}
        for name in BASELINE_SOLVERS:
            for side in ("", "sia_set_"):
                ratios = np.array([x[f"{side}ratio_to_{name}"] for x in r])
                out.update({f"median_{side}ratio_to_{name}": float(np.median(ratios)),
                            f"worst_{side}ratio_to_{name}": float(ratios.max()),
                            f"worst_seed_{side}{name}": r[int(np.argmax(ratios))]["seed"]})
        summary.append(out)
    return rows, summary
