r"""The exact model as a file any MILP solver reads, and a map from its columns back to the instance.

:func:`reference_file` builds the reference model of a problem (:mod:`.reference`: the configuration level
under every GPU type's node-pattern rows, or the placement level; the same arrays every solver of ``milp
formulation=reference`` is handed) with a name for every column and row; :func:`write_model_files` writes it
as MPS or LP (the format by the suffix, HiGHS's writer), a comment at its top stating what the objective is,
and beside it ``NAME.map.json`` (:func:`map_path`)::

    objective  sense "maximise"; the model value V to the fitness F:
               F = r (1 + p V / W)^(1/p)   (F = r exp(V / W) at p = 0; F = V at p = +-inf)
               with r the reference fitness (greedy's allocation, or a known better one where greedy's
               saturates the terms: :func:`reference_run`) and W the weights' sum
    columns    per column: name, kind (config, idle, epigraph, max-job, pattern; gpus, uses-node,
               multi-node at the placement level) and what it is in the instance: job, GPU type,
               GPUs, nodes ("single" / "multi"), keep, node
    rows       per row: its family as numbered in the formulations' docstrings
               (:mod:`goodopt.formulations.row_families`), and each family's line

Rows are named ``FAMILY_K`` (``F0c_3`` for (0c), a letter first for LP readers), columns ``z_C`` (configuration
C), ``idle_J``, ``t``, ``y_J``, ``p_K`` (pattern columns), ``x_J_N``, ``use_J_N``, ``v_J_N``. Configurations
whose term alone cannot beat the reference allocation have upper bound 0 (0d), jobs whose idle term cannot,
idle bound 0 (0e): the model's optimum is the problem's.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from goodopt.formulations.matrix import MatrixModel
from goodopt.formulations.row_families import FAMILIES, row_name
from goodopt.formulations.scaled_objective import box_cox, fitness_of_value, reference_fitness

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem
from goodopt.records import Record

from ..config_model import ArrayModel, PyomoModel
from ..heuristics import greedy
from ..options import MilpOptions
from ..result import MethodOutcome
from .reference import reference_model
from .run import MilpRun

log = logging.getLogger(__name__)

#: The version of the map's layout.
MAP_VERSION = 1


@dataclass(frozen=True)
class ModelFile:
    """A model with a name and a meaning for every column and row, ready to write."""

    matrix: MatrixModel
    stage: str
    level: str  # "config" or "placement"
    columns: list[dict[str, Any]]
    row_families: list[str]
    objective: dict[str, Any]
    instance: dict[str, Any] = field(default_factory=dict)

    @property
    def column_names(self) -> list[str]:
        return [c["name"] for c in self.columns]

    @property
    def row_names(self) -> list[str]:
        seen: dict[str, int] = {}
        names = []
        for fam in self.row_families:
            k = seen.get(fam, 0)
            seen[fam] = k + 1
            names.append(row_name(fam, k))
        return names


#: At p < 0 a reference fitness ``r`` far below every job's best option ``t`` leaves each option's term
#: ``(1 - (r/t)^|p|) / |p|`` within ``(r/t)^|p|`` of its limit: below this the written objective no longer tells
#: the options apart to a solver's tolerances, nor maps back to the fitness exactly (greedy idling a job at
#: eps = 1e-4, p = -3: terms alike to 1e-12, the objective's fitness 2e-5 off).
SATURATION = 1e-3


def reference_run(problem: AllocationProblem, configs: str = "all", known: Array | None = None) -> MilpRun:
    """A run holding the problem's configurations (``configs="sia"``: Sia's set) and its objective scaled to
    greedy's allocation (as ``formulation=reference`` scales it) -- or, where greedy's fitness saturates every
    option (:data:`SATURATION`) and a better allocation is ``known`` (the library build's certified answer, a
    solve's best), to that one's."""
    run = MilpRun(problem, problem.evaluator(), MilpOptions(formulation="reference", configs=configs),
                  time.perf_counter())
    run.add_candidate(greedy(problem, run.cs)[0], "greedy")
    if known is not None and saturates(run):
        run.add_candidate(known, "known")
    run.scale_objective()
    return run


def saturates(run: MilpRun) -> bool:
    """Whether, at p < 0, the run's best fitness lies so far below every job's best option that the scaled
    terms all sit within :data:`SATURATION` of their limit."""
    p, best = run.pr.p, run.best()[2]
    if not (np.isfinite(p) and p < 0 and np.isfinite(best) and best > 0):
        return False
    return bool((best / reference_fitness(run.pr, run.cs)) ** (-p) < SATURATION)


def reference_file(problem: AllocationProblem, run: MilpRun | None = None, known: Array | None = None) -> ModelFile:
    """The reference model of ``problem`` (see the module's docstring; ``known``: :func:`reference_run`'s)."""
    run = run or reference_run(problem, known=known)
    model, stage = reference_model(run)
    return model_file(model, stage)


def model_file(model: ArrayModel | PyomoModel, stage: str) -> ModelFile:
    """Names and meanings of ``model``'s columns and rows (any model of a solve, over its configurations)."""
    pr = model.pr
    if isinstance(model, ArrayModel):
        mm, level = model.mm, "config"
        columns = _config_columns(model, mm)
    else:
        from ..mip_solvers.pyomo_route import compile_model

        mm, cols, _, _ = compile_model(model.model)
        level = "placement"
        columns = [_pyomo_column(model, v) for v in cols]
    instance = {"jobs": list(pr.job_names), "nodes": list(pr.node_names), "gpu_types": list(pr.type_names),
                "n_configs": model.cs.n_configs}
    return ModelFile(matrix=mm, stage=stage, level=level, columns=columns, row_families=list(mm.names),
                     objective=_objective(model), instance=instance)


def _objective(model: ArrayModel | PyomoModel) -> dict[str, Any]:
    pr, ob = model.pr, model.objective
    if ob is None:
        return {"sense": "maximise", "transform": "identity", "p": float(pr.p),
                "formula": "F = V (the epigraph value t is the fitness)"}
    return {"sense": "maximise", "transform": "box-cox", "p": float(pr.p), "reference_fitness": ob.reference,
            "weight_sum": ob.weight_sum,
            "formula": ("F = r exp(V / W)" if pr.p == 0 else "F = r (1 + p V / W)^(1/p)")
            + f" with p = {pr.p!r}, r = {ob.reference!r}, W = {ob.weight_sum!r}"}


def fitness_of(objective: Record, value: float) -> float:
    """The fitness of a model value ``V`` by a map's ``objective`` entry."""
    if objective["transform"] == "identity":
        return float(value)
    return fitness_of_value(value, objective["p"], objective["weight_sum"], objective["reference_fitness"])


def _config_column(model: ArrayModel | PyomoModel, c: int) -> dict[str, Any]:
    pr, cs = model.pr, model.cs
    return {"name": f"z_{c}", "kind": "config", "job": pr.job_names[int(cs.job[c])],
            "gpu_type": pr.type_names[int(cs.gpu_type[c])], "gpus": int(cs.n_gpus[c]),
            "nodes": "multi" if cs.multi[c] else "single", "keep": bool(cs.keep[c]),
            "speedup": float(cs.speedup[c])}


def _config_columns(model: ArrayModel, mm: MatrixModel) -> list[dict[str, Any]]:
    pr = model.pr
    J, C = pr.n_jobs, model.cs.n_configs
    cols = [_config_column(model, c) for c in range(C)]
    if mm.epigraph:
        cols.append({"name": "t", "kind": "epigraph"})
        if pr.p > 0:
            cols += [{"name": f"y_{j}", "kind": "max-job", "job": pr.job_names[j]} for j in range(J)]
    else:
        cols += [{"name": f"idle_{j}", "kind": "idle", "job": pr.job_names[j]} for j in range(J)]
    cols += [{"name": f"p_{k}", "kind": "pattern"} for k in range(mm.n_columns - len(cols))]
    return cols


def _pyomo_column(model: PyomoModel, v: Any) -> dict[str, Any]:
    pr = model.pr
    comp, idx = v.parent_component().local_name, v.index()
    if comp == "z":
        return _config_column(model, int(idx))
    if comp in ("x", "u", "v"):
        j, n = int(idx[0]), int(idx[1])
        kind, name = {"x": ("gpus", "x"), "u": ("uses-node", "use"), "v": ("multi-node", "v")}[comp]
        return {"name": f"{name}_{j}_{n}", "kind": kind, "job": pr.job_names[j], "node": pr.node_names[n],
                "gpu_type": pr.type_names[int(pr.node_type[n])]}
    if comp == "idle_u":
        return {"name": f"idle_{int(idx)}", "kind": "idle", "job": pr.job_names[int(idx)]}
    if comp == "y":
        return {"name": f"y_{int(idx)}", "kind": "max-job", "job": pr.job_names[int(idx)]}
    return {"name": "t", "kind": "epigraph"}


def map_path(model_path: str | Path) -> Path:
    """The map written beside a model file: ``NAME.map.json`` for ``NAME.mps`` or ``NAME.lp``."""
    p = Path(model_path)
    p = p.with_suffix("") if p.suffix.lower() == ".gz" else p
    return p.with_name(p.stem + ".map.json")


def map_data(mf: ModelFile) -> Record:
    """The map of :func:`write_model_files` as JSON-ready data."""
    families = sorted(set(mf.row_families), key=mf.row_families.index)
    return {"goodopt_model_map": MAP_VERSION, "stage": mf.stage, "level": mf.level, "objective": mf.objective,
            "instance": mf.instance, "columns": mf.columns, "rows": mf.row_families,
            "families": {f: FAMILIES.get(f, "") for f in families}}


def header(mf: ModelFile) -> list[str]:
    """The comment lines put at the model file's top."""
    ob = mf.objective
    return [f"goodopt exact model ({mf.stage}): {mf.matrix.n_columns} columns, {mf.matrix.n_rows} rows",
            f"maximise V; the fitness is {ob['formula']}",
            "columns and rows are mapped back to the instance by the .map.json file beside this one"]


def write_model_files(mf: ModelFile, path: str | Path) -> Record:
    """Write ``mf`` to ``path`` (.mps or .lp) and its map beside it, both or neither; returns what was written."""
    from goodopt.outputs import output_set, staged_file

    path = Path(path)
    suffix = path.suffix.lower()
    comment = "* " if suffix == ".mps" else "\\ "
    with output_set() as out:
        with staged_file(out.path(path), "model" + suffix, output=path) as staged:
            h = _named_highs(mf)
            h.writeModel(str(staged))
            body = staged.read_text()
            staged.write_text("".join(f"{comment}{line}\n" for line in header(mf)) + body)
        with open(out.path(map_path(path)), "w") as f:
            json.dump(map_data(mf), f, separators=(",", ":"))
    log.info("milp: wrote the %s model to %s and its map to %s", mf.stage, path, map_path(path))
    return {"path": str(path), "map": str(map_path(path)), "stage": mf.stage, "level": mf.level,
            "sense": "maximise", "objective_transform": mf.objective["formula"]}


def _named_highs(mf: ModelFile) -> Any:
    """A HiGHS instance holding ``mf`` with its column and row names."""
    from ..mip_solvers.highs_run import new_highs, pass_arrays

    mm = mf.matrix
    h = new_highs()
    pass_arrays(h, cost=mm.cost, lower=mm.lower, upper=mm.upper, row_lower=mm.row_lower, row_upper=mm.row_upper,
                indptr=mm.A.indptr, indices=mm.A.indices, data=mm.A.data, integer=mm.integer, maximise=True)
    for i, name in enumerate(mf.column_names):
        h.passColName(i, name)
    for i, name in enumerate(mf.row_names):
        h.passRowName(i, name)
    return h


def write_for_run(run: MilpRun, out: MethodOutcome) -> None:
    """``write_model`` of a finished solve: the whole (reference) model of the problem, or with
    ``write_model_kind="last-solved"`` the model the solve ended with (the reduced-cost dive's, say), and its
    map; recorded in ``out.extra["written_model"]``."""
    path = run.opts.write_model
    if run.opts.write_model_kind == "whole":
        mf = reference_file(run.pr, reference_run(run.pr, run.opts.configs, known=run.best()[0]))
        fitness = float(run.ev.fitness(out.alloc)) if out.alloc is not None else float("nan")
        value = value_of(mf.objective, fitness)
    elif run.last_model is not None:
        last: dict[str, Any] = next((st for st in reversed(run.info["stages"])
                                     if not st["model"].startswith("placement-check")), {})
        mf = model_file(run.last_model, last.get("model", ""))
        value = float(last.get("objective", float("nan")))
    else:
        log.warning("milp: no model was solved, so nothing was written to %s", path)
        return
    out.extra["written_model"] = {**write_model_files(mf, path), "kind": run.opts.write_model_kind,
                                  "objective": value}


def value_of(objective: Record, fitness: float) -> float:
    """The model value ``V`` of a fitness (the inverse of :func:`fitness_of`; NaN for a fitness of 0 or NaN)."""
    if objective["transform"] == "identity" or not (np.isfinite(fitness) and fitness > 0):
        return float(fitness) if objective["transform"] == "identity" else float("nan")
    return objective["weight_sum"] * float(box_cox(objective["p"], np.log(fitness / objective["reference_fitness"])))
