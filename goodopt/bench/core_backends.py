"""The reduced-cost dive's core MILP on each MILP backend (``make bench BENCH_ARGS="--only core-backends"``).

On five-types-2048 under Sia's objective, goodopt's certified solve spends most of its time in one MILP: the
reduced-cost dive's core, the configurations whose reduced-cost bound keeps them open under every GPU type's
node-pattern rows (:mod:`goodopt.solvers.milp.dive`). This part has the solve (HiGHS, one thread) write that core
as it left it (``write_model_kind="last-solved"``: an MPS file any solver reads, with its map), reads the file
back and solves the same model on every installed backend alike: one thread, no start, a dive's node budget and
the absolute gap the dive stops at (a tenth of the certified fitness gap, in the model's units). Each solver
keeps its own other defaults (HiGHS its restart, which the dive turns off). Per seed and backend: CPU seconds
(the least of :data:`~goodopt.bench.sia_ilp.REPEATS`), status, nodes, objective and bound, and whether the
objective is the dive's own to within that gap; beside them, the CPU seconds of the whole certified solve.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..families import FAMILIES
from ..formulations.matrix import MatrixModel
from ..records import Record
from ..scenario import Objective
from ..solvers.api import solve
from ..solvers.milp.answers import load_map, model_arrays
from ..solvers.milp.dive import DIVE_NODE_LIMIT
from ..solvers.milp.export import map_path
from ..solvers.milp.run import model_gaps
from ..solvers.mip_solvers import SOLVERS, Limits, adapter, missing
from ..solvers.options import MilpOptions
from .sia_ilp import NODE_LIMIT, TIME_LIMIT_S, least_cpu

FAMILY = "five-types-2048"
SEEDS = tuple(range(5))


def written_core(family: str, seed: int, folder: Path) -> tuple[MatrixModel, Record] | None:
    """The model the certified solve of ``family``/``seed`` (Sia's objective) ended with, read back from the MPS
    file it wrote, and what the solve said of it (``stage``, ``objective``, ``mip_abs_gap``, ``solve_cpu_s``);
    None when the solve did not end in a reduced-cost dive."""
    pr = replace(FAMILIES[family].scenario(seed), objective=Objective.sia()).problem()
    path = folder / f"{family}-{seed}-core.mps"
    options = {"threads": 1, "node_limit": NODE_LIMIT}
    cpu, _ = least_cpu(lambda: solve(pr, "milp", options))
    res = solve(pr, "milp", {**options, "write_model": str(path), "write_model_kind": "last-solved"})
    written = res.extra.get("written_model") or {}
    if not str(written.get("stage", "")).startswith("reduced-cost dive"):
        return None
    mm, objective = model_arrays(path).matrix(), load_map(map_path(path))["objective"]
    gap = model_gaps(MilpOptions().mip_rel_gap, objective.get("weight_sum"))["mip_abs_gap"]
    return mm, {"stage": written["stage"], "objective": float(written["objective"]), "mip_abs_gap": gap,
                "solve_cpu_s": cpu, "status": str(res.status)}


def core_rows(family: str = FAMILY, seeds: Sequence[int] = SEEDS, backends: Sequence[str] | None = None,
              progress: Callable[[], None] | None = None) -> list[Record]:
    """One row per (seed whose solve ended in a dive, installed backend): the core's size, the backend's CPU
    seconds, status (and its own words), nodes, objective and bound on it, whether that objective is the dive's
    to within its gap, and the whole certified solve's CPU seconds and status."""
    names = [name for name in (backends or tuple(SOLVERS)) if missing(name) is None]
    rows: list[Record] = []
    with tempfile.TemporaryDirectory(prefix="goodopt-core-") as tmp:
        for seed in seeds:
            core = written_core(family, seed, Path(tmp))
            if core is not None:
                rows += _backend_rows(family, seed, *core, names)
            if progress:
                progress()
    return rows


def _backend_rows(family: str, seed: int, mm: MatrixModel, said: Record, names: Sequence[str]) -> list[Record]:
    gap = said["mip_abs_gap"]
    limits = Limits(threads=1, node_limit=DIVE_NODE_LIMIT, mip_rel_gap=0.0, mip_abs_gap=gap,
                    time_limit_s=TIME_LIMIT_S)
    rows = []
    for name in names:
        cpu, (out, _) = least_cpu(lambda: adapter(name).solve(mm, limits))  # noqa: B023
        agrees = bool(out.has_solution and abs(out.objective - said["objective"]) <= gap)
        rows.append({"family": family, "seed": seed, "columns": mm.n_columns, "rows": mm.n_rows, "solver": name,
                     "cpu_s": cpu, "status": str(out.termination), "raw_status": out.raw_status, "nodes": out.nodes,
                     "objective": out.objective, "bound": out.bound, "dive_objective": said["objective"], "agrees_with_dive": agrees,
                     "certified_solve_cpu_s": said["solve_cpu_s"], "certified_solve_status": said["status"]})
    return rows


def core_summary(rows: Sequence[Record]) -> list[Record]:
    """Per backend: the cores solved, median and worst CPU seconds (and that seed), how many it closed within the
    node budget, and whether every objective was the dive's."""
    out: list[Record] = []
    for name in dict.fromkeys(r["solver"] for r in rows):
        r: list[Any] = [x for x in rows if x["solver"] == name]
        cpu = np.array([x["cpu_s"] for x in r])
        worst = int(np.argmax(cpu))
        out.append({"solver": name, "cores": len(r), "cpu_s_median": float(np.median(cpu)),
                    "cpu_s_worst": float(cpu[worst]), "worst_seed": r[worst]["seed"],
                    "closed": sum(x["status"] == "optimal" for x in r),
                    "all_agree": all(x["agrees_with_dive"] for x in r)})
    return out
