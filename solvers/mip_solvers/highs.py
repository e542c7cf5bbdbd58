"""HiGHS (highspy) as one of the engines: a fresh :class:`~goodopt.solvers.mip_solvers.highs_arrays.HighsSession` per solve.

Parameters: ``time_limit``, ``mip_max_nodes``, ``mip_rel_gap``, ``mip_abs_gap``, ``mip_feasibility_tolerance``
(the feasibility tolerance), ``threads``; ``native`` is ``highs_options``. The watch of
:mod:`goodopt.solvers.mip_solvers.solver_watch` holds it to its time limit and stops it on Ctrl-C. Status: HiGHS's model status
as :func:`goodopt.solvers.mip_solvers.highs_run.read_highs` maps it.
"""

from __future__ import annotations

import functools

from goodopt.formulations.matrix import MatrixModel

from goodopt.arrays import Array

from .base import Limits, Start
from .highs_arrays import HighsSession
from .highs_run import new_highs
from .outcome import MilpOutcome

NAME = "highs"
#: goodopt's limits (:class:`~.base.Limits`) -> this solver's parameters.
PARAMETERS = {"time_limit_s": "time_limit", "node_limit": "mip_max_nodes", "mip_rel_gap": "mip_rel_gap",
              "mip_abs_gap": "mip_abs_gap", "feasibility_tol": "mip_feasibility_tolerance", "threads": "threads"}


@functools.lru_cache(maxsize=1)
def version() -> str:
    h = new_highs()
    v = h.version() if hasattr(h, "version") else ""
    return f"HiGHS {v if isinstance(v, str) else ''}".strip()


def solve(model: MatrixModel, limits: Limits, start: Start = None, relax: bool = False) -> tuple[MilpOutcome,
                                                                                                Array | None]:
    native = dict(limits.native)
    if limits.feasibility_tol is not None:
        native.setdefault("mip_feasibility_tolerance", float(limits.feasibility_tol))
    session = HighsSession(model, threads=limits.threads, highs_options=native)
    if limits.log:
        session.h.setOptionValue("output_flag", True)
    return session.solve(time_limit_s=limits.time_limit_s, mip_rel_gap=limits.mip_rel_gap,
                         mip_abs_gap=limits.mip_abs_gap, warm_start=start, relax=relax,
                         node_limit=limits.node_limit)
