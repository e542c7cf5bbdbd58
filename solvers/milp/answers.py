"""A solution of an exported model (:mod:`.export`) checked against the model file and mapped back to an
allocation of the instance.

:func:`model_arrays` reads the model file itself (HiGHS's reader), so the check is against what the solver
was handed, not against a model goodopt builds again. :func:`first_violation` finds the first column bound,
integrality or row the values break, by name and with its family's line; :func:`allocation_of` turns the
values into the allocation they mean: the GPUs of each job on each node (placement level), or the chosen
configuration of each job (configuration level), placed exactly (:func:`.exact_placement.place_choice`; the
node-pattern rows make every solution placeable).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from goodopt.formulations.configs import ConfigSet
from goodopt.formulations.matrix import CscArrays, MatrixModel
from goodopt.formulations.row_families import describe, family_of

from goodopt.arrays import Array
from goodopt.errors import ValidationError
from goodopt.problem import AllocationProblem
from goodopt.records import Record

from .exact_placement import place_choice
from .export import MAP_VERSION

#: Tolerances of the check: a bound or row may be missed by this much (times max(1, |bound|)), a value of an
#: integer column may lie this far from a whole number.
FEASIBILITY_TOL = 1e-6
INTEGRALITY_TOL = 1e-6


@dataclass(frozen=True)
class ModelArrays:
    """A model file as HiGHS reads it: maximise ``cost x`` over ``row_lower <= A x <= row_upper``."""

    col_names: list[str]
    row_names: list[str]
    cost: Array
    lower: Array
    upper: Array
    integer: Array
    A: Any  # (indptr, indices, data) column-wise
    row_lower: Array
    row_upper: Array
    sense: int  # +1 maximise, -1 minimise (as the file states)

    def matrix(self) -> MatrixModel:
        """The model as goodopt's solvers take it (a maximisation, rows labelled by their names)."""
        indptr, indices, data = (np.asarray(a) for a in self.A)
        return MatrixModel(cost=self.sense * self.cost, lower=self.lower, upper=self.upper, integer=self.integer,
                           A=CscArrays(indptr, indices, data, (len(self.row_lower), len(self.cost))),
                           row_lower=self.row_lower, row_upper=self.row_upper, names=tuple(self.row_names),
                           n_configs=0, epigraph=False)


def load_map(path: str | Path) -> Record:
    """A model's map (``NAME.map.json``), refused unless it is one goodopt wrote."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        data = json.loads(gzip.decompress(raw) if p.suffix == ".gz" else raw)
    except (OSError, ValueError) as e:
        raise ValidationError("map", f"cannot read the model map {p}: {e}",
                              "pass the .map.json written beside the model by --write-model") from e
    if not isinstance(data, dict) or data.get("goodopt_model_map") != MAP_VERSION:
        raise ValidationError("map", f"{p} is not a goodopt model map (version {MAP_VERSION})",
                              "pass the .map.json written beside the model by --write-model")
    return data


def model_arrays(path: str | Path) -> ModelArrays:
    """The model file at ``path`` (.mps or .lp) as arrays, with its names."""
    from ..mip_solvers.highs_run import read_model_file

    read = read_model_file(path)
    if read is None:
        raise ValidationError("instance", f"HiGHS cannot read the model file {path}",
                              "pass the .mps or .lp file written by --write-model or goodopt library build")
    h, sense = read
    lp = h.getLp()
    m = lp.a_matrix_
    integer = np.array([int(t) != 0 for t in lp.integrality_], bool) if len(lp.integrality_) else \
        np.zeros(lp.num_col_, bool)
    return ModelArrays(col_names=list(lp.col_names_), row_names=list(lp.row_names_), cost=np.asarray(lp.col_cost_),
                       lower=np.asarray(lp.col_lower_), upper=np.asarray(lp.col_upper_), integer=integer,
                       A=(np.asarray(m.start_), np.asarray(m.index_), np.asarray(m.value_)),
                       row_lower=np.asarray(lp.row_lower_), row_upper=np.asarray(lp.row_upper_), sense=sense)


def column_vector(model: ModelArrays, values: dict[str, float]) -> Array:
    """The model's columns from values by name (a column not named is 0; a row's name is passed over, as CBC
    lists rows too); a name the model does not have is refused."""
    pos = {n: i for i, n in enumerate(model.col_names)}
    rows = set(model.row_names)
    unknown = [n for n in values if n not in pos and n not in rows]
    if unknown:
        raise ValidationError("answer", f"{len(unknown)} names are not columns of the model, e.g. {unknown[0]!r}",
                              "pass a solution of this instance's exported model")
    x = np.zeros(len(model.col_names))
    for name, v in values.items():
        if name in pos:
            x[pos[name]] = v
    return x


def first_violation(model: ModelArrays, x: Array) -> str | None:
    """The first bound, integrality or row ``x`` breaks, named, or None."""
    tol = _tolerance(model.lower, model.upper)
    for i in np.flatnonzero((x < model.lower - tol) | (x > model.upper + tol)):
        return (f"column {model.col_names[i]} = {x[i]:.9g} lies outside its bounds "
                f"[{model.lower[i]:.9g}, {model.upper[i]:.9g}]")
    frac = model.integer & (np.abs(x - np.round(x)) > INTEGRALITY_TOL)
    for i in np.flatnonzero(frac):
        return f"column {model.col_names[i]} = {x[i]:.9g} is an integer column"
    indptr, indices, data = model.A
    act = CscArrays(indptr, indices, data, (len(model.row_names), len(x))).matvec(x)
    lo, hi = model.row_lower, model.row_upper
    slack = _tolerance(lo, hi)
    for r in np.flatnonzero((act < lo - slack) | (act > hi + slack)):
        name = model.row_names[r]
        fam = family_of(name)
        line = describe(fam)
        return (f"row {name} ({fam}{': ' + line if line else ''}) has activity {act[r]:.9g} outside "
                f"[{lo[r]:.9g}, {hi[r]:.9g}]")
    return None


def _tolerance(lo: Array, hi: Array) -> Array:
    """How far a value may lie outside ``[lo, hi]``: the tolerance times the larger finite bound (at least 1)."""
    def size(b: Array) -> Array:
        return np.abs(np.where(np.isfinite(b), b, 0.0))

    return FEASIBILITY_TOL * np.maximum(1.0, np.maximum(size(lo), size(hi)))


def allocation_of(problem: AllocationProblem, mapping: Record, names: list[str],
                  x: Array) -> tuple[Array | None, str]:
    """The allocation the column values ``x`` (by ``names``) stand for, or None and why not."""
    check_instance(problem, mapping)
    meta = {c["name"]: c for c in mapping["columns"]}
    value = dict(zip(names, np.round(x).astype(np.int64)))
    if mapping["level"] == "placement":
        alloc = np.zeros((problem.n_jobs, problem.n_nodes), np.int64)
        jobs = {n: i for i, n in enumerate(problem.job_names)}
        nodes = {n: i for i, n in enumerate(problem.node_names)}
        for name, v in value.items():
            c = meta.get(name)
            if c is not None and c["kind"] == "gpus":
                alloc[jobs[c["job"]], nodes[c["node"]]] = v
        return alloc, ""
    from .export import reference_run

    run = reference_run(problem)
    chosen = _chosen(problem, run.cs, [meta[n] for n, v in value.items() if v > 0 and meta.get(n, {}).get("kind")
                                       == "config"])
    placed, _, _ = place_choice(run, chosen)
    if placed is None:
        return None, "the chosen configurations cannot be placed on the instance's nodes"
    return placed, ""


def check_instance(problem: AllocationProblem, mapping: Record) -> None:
    """Refuse a map written for another instance (other jobs, nodes or GPU types)."""
    inst = mapping.get("instance", {})
    mine = {"jobs": list(problem.job_names), "nodes": list(problem.node_names), "gpu_types": list(problem.type_names)}
    for key, names in mine.items():
        if inst.get(key) != names:
            raise ValidationError("map", f"the map's {key} are not the instance's",
                                  "pass the map written with this instance's model")


def _chosen(problem: AllocationProblem, cs: ConfigSet, picked: list[dict[str, Any]]) -> Array:
    """Configuration per job (-1: none) of the picked config columns, matched by what they are, not by index."""
    keys = {(problem.job_names[int(cs.job[c])], problem.type_names[int(cs.gpu_type[c])], int(cs.n_gpus[c]),
             bool(cs.multi[c]), bool(cs.keep[c])): c for c in range(cs.n_configs)}
    chosen = np.full(problem.n_jobs, -1, np.int64)
    jobs = {n: i for i, n in enumerate(problem.job_names)}
    for c in picked:
        key = (c["job"], c["gpu_type"], int(c["gpus"]), c["nodes"] == "multi", bool(c["keep"]))
        if key not in keys:
            raise ValidationError("answer", f"column {c['name']} is a configuration the instance does not have",
                                  "pass a solution of this instance's exported model")
        j = jobs[c["job"]]
        if chosen[j] >= 0:
            raise ValidationError("answer", f"job {c['job']} has two configurations chosen",
                                  "its (0c) or (1) row is broken: check the answer against the model first")
        chosen[j] = keys[key]
    return chosen
