"""Benchmarking on a library: its instances and certified values, runs made elsewhere, and how much a solve
moves when nothing but the order of the data changes.

* :func:`library_references` reads a library's ``values.csv``: each instance's scenario file and value (its
  certified fitness), the reference of the profiles, primal integrals and time-to-target curves;
* :func:`import_runs` adds external runs (another solver on the exported model, a colleague's heuristic):
  a CSV of ``instance, solver, seconds, status, answer``; each answer is judged by
  :func:`goodopt.library.check.check` (never taken at its word), its claimed status kept apart;
* :func:`variability` re-runs each instance with its jobs and nodes permuted (and other solver seeds):
  a certified optimum must not move; the spread of time is the method's performance variability
  (Lodi and Tramontani, 2013).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from goodopt.errors import ValidationError
from goodopt.library.check import check

from ..records import RecordIn

#: Columns of an import file.
IMPORT_COLUMNS = ("instance", "solver", "seconds", "status", "answer")
#: Each MILP solver's own seed parameter (``solver_options``), varied by :func:`variability`.
SEED_PARAMETERS = {"highs": "random_seed", "scip": "randomization/randomseedshift", "cpsat": "random_seed",
                   "gurobi": "Seed"}


@dataclass(frozen=True)
class Library:
    """A library folder's instances: scenario file and certified (or best known) fitness by name."""

    folder: Path
    scenarios: dict[str, Path]
    values: dict[str, float]


def library_references(folder: str | Path) -> Library:
    """The instances of the library in ``folder`` and their values (from its ``values.csv``)."""
    root = Path(folder)
    try:
        with open(root / "values.csv", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ValidationError("--library", f"{root} has no values.csv ({e})",
                              "pass a folder written by goodopt library build") from e
    scenarios = {r["name"]: root / "instances" / f"{r['name']}.yaml" for r in rows}
    values = {r["name"]: float(r["fitness"]) for r in rows if r["status"] in ("opt", "best")}
    return Library(folder=root, scenarios=scenarios, values=values)


def import_runs(path: str | Path, library: Library | None = None) -> pd.DataFrame:
    """Rows of a compare table from an import file (see the module's docstring); ``answer`` paths are taken
    relative to the file, ``instance`` is a library instance's name or a scenario path."""
    p = Path(path)
    try:
        with open(p, newline="") as f:
            reader = csv.DictReader(f)
            missing = set(IMPORT_COLUMNS) - set(reader.fieldnames or ())
            rows = list(reader)
    except OSError as e:
        raise ValidationError("--import", f"cannot read {p}: {e}", "pass a CSV of external runs") from e
    if missing:
        raise ValidationError("--import", f"{p} lacks the columns {sorted(missing)}",
                              f"give the columns {', '.join(IMPORT_COLUMNS)}")
    return pd.DataFrame([_imported(p, number, r, library) for number, r in enumerate(rows, 2)])


def _imported(p: Path, number: int, r: Mapping[str, str], library: Library | None) -> dict[str, Any]:
    inst = library.scenarios.get(r["instance"]) if library is not None else None
    inst = inst or Path(r["instance"])
    answer = Path(r["answer"]) if Path(r["answer"]).is_absolute() else p.parent / r["answer"]
    try:
        seconds = float(r["seconds"])
    except ValueError:
        seconds = math.nan
    if not (seconds >= 0):
        raise ValidationError("--import", f"{p}:{number}: seconds {r['seconds']!r} is not a time >= 0",
                              "give the run's seconds")
    rep = check(inst, answer)
    return {"scenario": rep.instance, "method": r["solver"], "seed": None, "status": judged_status(r["status"], rep),
            "claimed_status": r["status"], "has_solution": True, "feasible": rep.feasible,
            "fitness": rep.fitness if rep.feasible else math.nan, "bound": math.nan, "seconds": seconds,
            "imported": True, "violation": rep.violation, "trace": []}


def judged_status(claimed: str, rep: Any) -> str:  # rep: a check report (the library module imports this one)
    """An imported run's status as goodopt judges it: ``error`` for an infeasible answer; ``optimal`` only for a
    claimed optimum that reaches the library's value (1e-6 relative), ``numerical`` for one that falls short
    of it; ``completed`` otherwise (without a library value no claim of optimality can be checked)."""
    if not rep.feasible:
        return "error"
    if claimed.strip().lower() != "optimal" or not math.isfinite(rep.library_fitness):
        return "completed"
    ok = rep.fitness >= rep.library_fitness - 1e-6 * abs(rep.library_fitness)
    return "optimal" if ok else "numerical"


def variability(scenarios: Sequence[Any], methods: Sequence[str], k: int, *, options: RecordIn | None = None,
                time_limit_s: float | None = None, seed: int = 0) -> pd.DataFrame:  # Any: scenarios by name or object
    """Each scenario x method solved ``k + 1`` times: as given (permutation 0) and with jobs and nodes
    permuted by ``numpy.random.default_rng(seed + i)`` (and solver seed ``i``). One row per solve."""
    from goodopt.solvers import solve
    from goodopt.solvers.api import RANDOMISED, split_method
    from goodopt.sources import load_scenario

    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValidationError("--permutations", f"must be a whole number >= 1, got {k!r}")
    rows = []
    for sc in scenarios:
        sc = sc if not isinstance(sc, (str, Path)) else load_scenario(str(sc))
        base = sc.problem()
        for i in range(k + 1):
            rng = np.random.default_rng(seed + i)
            pr = base if i == 0 else base.permuted(rng.permutation(base.n_jobs), rng.permutation(base.n_nodes))
            for m in methods:
                opts = _seeded(m, dict((options or {}).get(m, {})), i, RANDOMISED, split_method)
                if time_limit_s is not None:
                    opts["time_limit_s"] = time_limit_s
                res = solve(pr, m, opts)
                rows.append({"scenario": sc.name, "method": m, "permutation": i, "status": str(res.status),
                             "fitness": res.fitness, "bound": res.bound, "seconds": res.stats.total_s})
    return pd.DataFrame(rows)


def _seeded(method: str, opts: dict[str, Any], i: int, randomised: Any, split: Any) -> dict[str, Any]:
    """``opts`` with seed ``i``: a randomised method's own, or the MILP solver's (``solver_options``)."""
    base, solver = split(method)
    if base in randomised:
        opts.setdefault("seed", i)
    elif base in ("milp", "milp-pwl") and i > 0:
        name = solver or opts.get("solver", "highs")
        if name in SEED_PARAMETERS:
            native = "highs_options" if name == "highs" else "solver_options"
            opts[native] = {**opts.get(native, {}), SEED_PARAMETERS[name]: i}
    return opts


def variability_summary(table: pd.DataFrame, rtol: float | None = None) -> pd.DataFrame:
    """Per scenario x method: the spread of seconds over the permutations (min, median, max, coefficient of
    variation) and of fitness, and whether a certified optimum moved (beyond ``rtol``, default the tolerance
    an optimum is certified to, :data:`goodopt.solvers.result.CERTIFIED_GAP`)."""
    from goodopt.solvers.result import CERTIFIED_GAP

    rtol = CERTIFIED_GAP if rtol is None else rtol
    rows = []
    for (sc, m), g in table.groupby(["scenario", "method"], sort=False):
        sec, fit = g["seconds"].to_numpy(float), g["fitness"].to_numpy(float)
        opt = g.loc[g["status"] == "optimal", "fitness"].to_numpy(float)
        moved = bool(len(opt) > 1 and (opt.max() - opt.min()) > rtol * max(abs(opt).max(), 1e-300))
        rows.append({"scenario": sc, "method": m, "runs": len(g), "seconds_min": sec.min(),
                     "seconds_median": float(np.median(sec)), "seconds_max": sec.max(),
                     "seconds_cv": float(sec.std() / sec.mean()) if sec.mean() > 0 else 0.0,
                     "fitness_spread": float(np.nanmax(fit) - np.nanmin(fit)) if np.isfinite(fit).any() else math.nan,
                     "optimal_runs": len(opt), "optimum_moved": moved})
    return pd.DataFrame(rows)
