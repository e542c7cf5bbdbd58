"""Placing a choice of configurations exactly: the packing heuristic first, then per GPU type it could not
pack the node-pattern model (:mod:`goodopt.formulations.node_patterns`) or the job x node model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from goodopt.formulations import node_patterns
from goodopt.formulations.configs import ConfigSet

from goodopt.arrays import Array
from goodopt.placement import place_configs
from goodopt.problem import AllocationProblem

from ..mip_solvers.session import new_session
from ..result import Termination
from .models import placement_model, solver_kwargs
from .run import MilpRun


def place_choice(run: MilpRun, chosen: Array) -> tuple[Array | None, list[Array], bool]:
    """Place a choice of configurations exactly, type by type.

    The heuristic packer first; each GPU type it could not pack is packed
    again with its single-node moves first, and failing that decided by the
    node-pattern model (:mod:`goodopt.formulations.node_patterns`), or by the
    job x node model where patterns do not apply. The second packing spares
    most exact checks: over sia-64 (seeds 0-7), five-types-512 (0-3),
    five-types-2048 and mixed-2048 (0-1), both objectives, it placed 65 of
    the 113 types the check placed (each check a model and a HiGHS run). Returns ``(alloc,
    unplaceable, undecided)``: the allocation when every type placed (types
    share no nodes, so their rows combine), the configuration sets proven
    unplaceable, and whether some type stayed undecided (time limit).
    """
    pr, cs = run.pr, run.cs
    alloc, failed = place_configs(pr, cs, chosen)
    if not failed:
        return alloc, [], False
    bad_types = sorted({int(cs.gpu_type[chosen[j]]) for j in failed if chosen[j] >= 0})
    unplaceable, undecided = [], False
    for g in bad_types:
        of_type = (chosen >= 0) & (cs.gpu_type[np.maximum(chosen, 0)] == g)
        sub = np.where(of_type, chosen, -1)
        packed, failed_again = place_configs(pr, cs, sub, singles_first=True)
        rows, verdict = (packed, "placed") if not failed_again else place_type(run, sub, g)
        if verdict == "infeasible":
            unplaceable.append(sub[sub >= 0])
        elif verdict == "undecided":
            undecided = True
        elif rows is not None:
            alloc[of_type] = rows[of_type]
    if unplaceable or undecided or run.ev.violation(alloc) != 0:
        return None, unplaceable, undecided
    return alloc, [], False


def place_type(run: MilpRun, sub: Array, g: int) -> tuple[Array | None, str]:
    """Rows (J, N) placing ``sub``'s configurations of type ``g``, and ``"placed"``, ``"infeasible"`` or ``"undecided"``."""
    pr = run.pr
    name = f"placement-check type {pr.type_names[g]}"
    pm = node_patterns.pattern_model(pr, run.cs, sub, g)
    if isinstance(pm, str):  # "infeasible": the kept rows alone do not fit
        return None, "infeasible"
    if pm is not None:
        session = new_session(pm.matrix, threads=run.opts.threads, **solver_kwargs(run))
        kw = run.solve_kwargs(check=True)
        out, x = session.solve(time_limit_s=kw["time_limit_s"], node_limit=kw["node_limit"])
        run.stage(f"{name} (node patterns)", replace(out, compile_s=out.compile_s + session.setup_s))
        if out.termination == Termination.INFEASIBLE:
            return None, "infeasible"
        if x is None:
            return None, "undecided"
        return node_patterns.decode_patterns(pm, x), "placed"
    check = placement_model(run, fixed_choice=sub)
    chk = run.stage(name, lambda: check.solve(**run.solve_kwargs(check=True)))
    if chk.termination == Termination.INFEASIBLE:
        return None, "infeasible"
    if not chk.has_solution:
        return None, "undecided"
    return check.allocation(), "placed"


def placement_pairs(problem: AllocationProblem, cs: ConfigSet) -> int:
    """Number of (job, node) placement variables of the placement-level model."""
    nodes_per_type = np.bincount(problem.node_type, minlength=problem.n_gpu_types)
    pairs = 0
    for j in range(problem.n_jobs):
        types = np.unique(cs.gpu_type[cs.job_start[j]:cs.job_start[j + 1]])
        pairs += int(nodes_per_type[types].sum())
    return pairs
