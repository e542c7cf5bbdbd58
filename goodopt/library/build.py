"""``goodopt library build``: a versioned library of allocation instances with certified values.

A library folder holds, per instance ``NAME`` (``FAMILY-SEED-OBJECTIVE``, the objective ``own`` (the family's
p-norm) or ``sia`` (Sia's, :meth:`goodopt.scenario.Objective.sia`))::

    instances/NAME.yaml        the scenario (its profiles under profiles/, by relative path)
    instances/NAME.mps.gz      the whole exact model (:mod:`goodopt.solvers.milp.export`), gzipped MPS
    instances/NAME.map.json.gz the model's map: objective transform, columns and rows back to the instance
    answers/NAME.json          the answer that certified the value: an allocation, {job: {node: GPUs}}
    library.solu               =opt= NAME VALUE (certified) or =best= / =bestdual= (not), in the model's units
    values.csv                 per instance: the value and bound as model values and as fitnesses, the
                               status, and the solver, version, CPU seconds and options that certified it
    manifest.json              the library's name and version, goodopt's version, the sha256 of every file

The folder is written whole or not at all. Instances are generated from their family and seed, so the same
names give the same scenarios on every machine; values are certified by goodopt's exact method (``milp`` on
HiGHS) and re-checked by :func:`goodopt.library.verify.verify`.
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..outputs import atomic_dir, sha256_file
from .solu import SoluEntry, solu_lines

log = logging.getLogger(__name__)

#: The library's name and version (a new version whenever its instances or the model's layout change).
LIBRARY = "goodopt-allocation"
VERSION = "2026.12"
OBJECTIVES = ("own", "sia")
#: Options of the certifying solve, recorded with each value.
CERTIFY_OPTIONS: dict[str, Any] = {"threads": 1}
VALUE_COLUMNS = ("name", "family", "seed", "objective", "n_gpus", "n_jobs", "status", "value", "bound",
                 "fitness", "fitness_bound", "solver", "solver_version", "cpu_s", "options")


@dataclass(frozen=True)
class Tier:
    """A named set of instances: families, seeds and objectives."""

    name: str
    families: tuple[str, ...]
    seeds: tuple[int, ...]
    objectives: tuple[str, ...] = OBJECTIVES


def tiers() -> dict[str, Tier]:
    """``small`` (every family up to 512 GPUs, seed 0; shipped in ``scenarios/library``) and ``large`` (every
    family, seeds 0-2; built and certified by ``make library``)."""
    from ..families import FAMILIES

    small = tuple(n for n, f in FAMILIES.items() if f.n_gpus <= 512)
    return {"small": Tier("small", small, (0,)), "large": Tier("large", tuple(FAMILIES), (0, 1, 2))}


def instance_name(family: str, seed: int, objective: str) -> str:
    return f"{family}-{seed}-{objective}"


def build(out_dir: str | Path, tier: Tier, *, time_limit_s: float | None = None,
          progress: Callable[[str], None] | None = None) -> Path:
    """Write the library of ``tier`` to ``out_dir`` (see the module's docstring). Returns ``out_dir``."""
    from ..families import family

    for obj in tier.objectives:
        if obj not in OBJECTIVES:
            raise ValidationError("objectives", f"{obj!r} is not one of {', '.join(OBJECTIVES)}")
    fams = [family(n) for n in tier.families]
    out_dir = Path(out_dir)
    marker = {"what": "goodopt library build", "library": LIBRARY, "version": VERSION, "tier": tier.name}
    with atomic_dir(out_dir, marker) as tmp:
        for sub in ("instances", "profiles", "answers"):
            (tmp / sub).mkdir()
        rows = []
        for fam in fams:
            for seed in tier.seeds:
                for obj in tier.objectives:
                    rows.append(_instance(tmp, fam, seed, obj, time_limit_s))
                    if progress is not None:
                        progress(rows[-1]["name"])
        _write_tables(tmp, rows)
        _write_manifest(tmp, tier)
    return out_dir


def _scenario(fam: Any, seed: int, objective: str) -> Any:
    from ..scenario import Objective

    sc = fam.scenario(seed)
    if objective == "sia":
        sc = replace(sc, objective=Objective.sia())
    return replace(sc, name=instance_name(fam.name, seed, objective))


def _instance(tmp: Path, fam: Any, seed: int, objective: str, time_limit_s: float | None) -> dict[str, Any]:
    """Write one instance's files and certify its value; returns its row of ``values.csv``."""
    from ..profiles import save_profile
    from ..scenario import save_scenario
    from ..solvers import solve
    from ..solvers.milp.export import reference_file, value_of, write_model_files

    sc = _scenario(fam, seed, objective)
    name = sc.name
    paths = {}
    for app, prof in sorted(sc.profiles.items()):
        if not (tmp / "profiles" / f"{app}.yaml").exists():
            save_profile(prof, tmp / "profiles" / f"{app}.yaml")
        paths[app] = f"../profiles/{app}.yaml"
    save_scenario(sc, tmp / "instances" / f"{name}.yaml", profile_paths=paths)
    pr = sc.problem()
    options = {**CERTIFY_OPTIONS, **({"time_limit_s": time_limit_s} if time_limit_s else {})}
    t0 = time.process_time()
    res = solve(pr, "milp", options)
    cpu = time.process_time() - t0
    # scaled to greedy's allocation, or to the certified answer where greedy's saturates the terms
    mf = reference_file(pr, known=res.x if res.has_solution else None)
    write_model_files(mf, tmp / "instances" / f"{name}.mps")
    _gzip(tmp / "instances" / f"{name}.mps")
    _gzip(tmp / "instances" / f"{name}.map.json")
    if res.has_solution:
        (tmp / "answers" / f"{name}.json").write_text(json.dumps(res.to_dict(pr)["allocation"], indent=1))
    status = "opt" if res.status == "optimal" else ("best" if res.has_solution else "unkn")
    value = value_of(mf.objective, res.fitness) if res.has_solution else math.nan
    bound = value_of(mf.objective, res.bound) if math.isfinite(res.bound) else math.nan
    log.info("library: %s %s fitness %.9g bound %.9g (%.2f s)", name, res.status, res.fitness, res.bound, cpu)
    return {"name": name, "family": fam.name, "seed": seed, "objective": objective, "n_gpus": fam.n_gpus,
            "n_jobs": pr.n_jobs, "status": status, "value": value, "bound": value if status == "opt" else bound,
            "fitness": res.fitness, "fitness_bound": res.bound, "solver": res.stats.solver or "highs",
            "solver_version": res.stats.solver_version, "cpu_s": round(cpu, 3), "options": json.dumps(options)}


def _gzip(path: Path) -> None:
    """``path`` replaced by ``path.gz`` (no name or time inside: the same bytes on every run)."""
    with open(path, "rb") as src, open(path.with_name(path.name + ".gz"), "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


def _write_tables(tmp: Path, rows: list[dict[str, Any]]) -> None:
    with open(tmp / "values.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(VALUE_COLUMNS))
        w.writeheader()
        w.writerows({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()} for r in rows)
    lines = [f"# {LIBRARY} {VERSION}: values of the instances' model files (maximised; see values.csv)"]
    for r in rows:
        lines += solu_lines(SoluEntry(r["name"], r["status"], r["value"], r["bound"]))
    (tmp / "library.solu").write_text("\n".join(lines) + "\n")


def _write_manifest(tmp: Path, tier: Tier) -> None:
    from .._version import __version__

    files = {str(p.relative_to(tmp)): sha256_file(p) for p in sorted(tmp.rglob("*"))
             if p.is_file() and not p.name.startswith(".")}
    manifest = {"library": LIBRARY, "version": VERSION, "tier": tier.name, "goodopt": __version__,
                "families": list(tier.families), "seeds": list(tier.seeds), "objectives": list(tier.objectives),
                "files": files}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
