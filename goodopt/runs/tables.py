"""Result tables: the row of one solve, the reference columns of a group, and the one table writer.

``gap_to_bound`` is the relative distance of a row's fitness to the *best
proven bound* of its group (the smallest upper bound any method reported on
the same problem); it is NaN when no method proved a bound.

:func:`write_table` writes ``NAME.csv`` and ``NAME.meta.json`` together
(see :mod:`goodopt.outputs`); the metadata records the table's SHA-256 and
the run's id, so tables of one run can be told from a mix (:func:`same_run`).
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from goodopt._version import __version__
from goodopt.outputs import OutputSet, json_default, meta_path, output_set, sha256_file, table_matches_meta
from goodopt.provenance import math_paths

from ..records import Record, RecordIn

if TYPE_CHECKING:
    from goodopt.problem import AllocationProblem
    from goodopt.solvers.result import SolveResult

#: Columns of a ``compare`` table.
COLUMNS = ("scenario", "n_jobs", "n_nodes", "n_gpus", "method", "seed", "status", "stopped_by_clock",
           "has_solution", "feasible",
           "fitness", "bound", "gap", "seconds", "build_s", "solve_s", "n_evaluations", "nodes",
           "best_bound", "gap_to_bound", "relative_fitness")


def result_row(problem: AllocationProblem, method: str, seed: int | None, res: SolveResult) -> Record:
    """The table row of one solve (without the scenario name and the reference columns)."""
    return {
        "n_jobs": problem.n_jobs, "n_nodes": problem.n_nodes, "n_gpus": problem.n_gpus,
        "method": method, "seed": seed, "status": str(res.status),
        "stopped_by_clock": res.status == "time_limit",  # machine-dependent: a wall-clock limit ended it
        "has_solution": res.has_solution,
        "feasible": res.feasible, "fitness": res.fitness, "bound": res.bound, "gap": res.gap,
        "seconds": res.stats.total_s, "build_s": res.stats.build_s, "solve_s": res.stats.solve_s,
        "n_evaluations": res.stats.n_evaluations, "nodes": res.stats.nodes,
    }


#: Columns of whole numbers that may be missing (a deterministic method has no seed): kept whole, not float.
WHOLE_COLUMNS = ("seed", "n_jobs", "restarts", "n_rounds", "pwl_breakpoints")


def frame(rows: Iterable[RecordIn]) -> pd.DataFrame:
    """A table from row mappings, whole-number columns as pandas' nullable integers (``0``, not ``0.0``)."""
    df = pd.DataFrame(list(rows))
    for col in WHOLE_COLUMNS:
        if col in df and df[col].dropna().map(lambda v: float(v).is_integer()).all():
            df[col] = df[col].astype("Int64")
    return df


def add_reference_columns(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Add ``best_bound`` (smallest proven bound in the group, NaN if none), ``gap_to_bound`` (NaN
    without a bound) and ``relative_fitness`` (fitness over the group's best fitness)."""
    df = df.copy()
    if df.empty:
        return df.assign(best_bound=[], gap_to_bound=[], relative_fitness=[])
    # an answer that breaks the problem's constraints is never ranked, nor is its fitness anyone's reference
    ranked = df["fitness"].where(_feasible(df))
    g = df.assign(_ranked=ranked).groupby(by, dropna=False)
    best_bound = g["bound"].transform(lambda b: b[np.isfinite(b.astype(float))].min())
    best_fit = g["_ranked"].transform("max")
    df["best_bound"] = best_bound
    gap = (best_bound - ranked) / best_bound.abs()
    df["gap_to_bound"] = gap.mask(gap.abs() <= 1e-9, 0.0)  # numerical noise of proven optima; NaN stays NaN
    df["relative_fitness"] = ranked / best_fit
    return df


def _feasible(df: pd.DataFrame) -> pd.Series:
    """Rows whose answer is a feasible allocation (tables without the columns: every row)."""
    ok = pd.Series(True, index=df.index)
    for col in ("feasible", "has_solution"):
        if col in df:
            ok &= df[col].fillna(False).astype(bool)
    return ok


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean fitness, gap to the best bound and seconds per (scenario, method)."""
    g = table.groupby(["scenario", "method"], sort=False)
    out = g.agg(fitness=("fitness", "mean"), gap_to_bound=("gap_to_bound", "mean"),
                relative_fitness=("relative_fitness", "mean"), seconds=("seconds", "mean"),
                status=("status", lambda s: ",".join(sorted(set(s)))))
    return out.reset_index()


def table_outputs(path: str | os.PathLike[str]) -> list[Path]:
    """The files :func:`write_table` writes for ``path``: the table and its metadata."""
    return [Path(path), meta_path(path)]


def write_table(table: pd.DataFrame, path: str | os.PathLike[str], **metadata: Any) -> Path:  # Any: JSON-shaped metadata values
    """Write ``table`` as CSV to ``path`` and its metadata to ``NAME.meta.json``, together.

    The metadata holds goodopt's version, Python's, the columns, the row count,
    the table's SHA-256, the run's id and ``metadata``.
    """
    with output_set() as out:
        write_table_into(out, table, path, **metadata)
    return Path(path)


def write_table_into(out: OutputSet, table: pd.DataFrame, path: str | os.PathLike[str], **metadata: Any) -> Path:  # Any: JSON-shaped metadata values
    """:func:`write_table` as part of the output set ``out`` (put in place when ``out`` is committed)."""
    path = Path(path)
    tmp = out.path(path)
    table.to_csv(tmp, index=False)
    meta = {"goodopt_version": __version__, "python": platform.python_version(), "columns": list(table.columns),
            "n_rows": len(table), "table": path.name, "table_sha256": sha256_file(tmp), "run_id": out.run_id,
            "math": math_paths(), **metadata}
    out.path(meta_path(path)).write_text(json.dumps(meta, indent=2, default=json_default))
    return path


def same_run(*tables: str | os.PathLike[str]) -> bool:
    """Whether the tables ``tables`` (paths) each match their metadata and all come from one run."""
    if not all(table_matches_meta(t) for t in tables):
        return False
    ids = {json.loads(meta_path(t).read_text()).get("run_id") for t in tables}
    return len(ids) == 1 and None not in ids
