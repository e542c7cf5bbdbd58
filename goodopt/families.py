"""Seeded scenario families for studying allocation methods.

Each family fixes a cluster shape, a load (jobs per GPU) and an objective;
a seed draws the jobs (applications, ages, re-allocation counts, training
progress, current placements) with :func:`goodopt.generate.random_scenario`.
Speedup curves differ across jobs through their applications, their
statistical efficiency (training progress) and their re-allocation factors.

Families span 16 to 2048 GPUs, job counts below and above the GPU count, one
or several GPU types. A scenario of a family is named ``family:NAME:SEED``
wherever a scenario name is accepted (``goodopt solve family:testbed-over:3``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .cluster import Cluster, NodeGroup
from .errors import ValidationError
from .generate import random_scenario
from .objective import Objective
from .outputs import atomic_dir
from .profiles import save_profile
from .scenario import Scenario, save_scenario
from .validation import suggest


@dataclass(frozen=True)
class Family:
    """A seeded family of scheduling rounds."""

    name: str
    groups: tuple[tuple[str, int, int], ...]  # (gpu_type, gpus_per_node, n_nodes)
    jobs_per_gpu: float
    description: str
    running_fraction: float = 0.6
    p: float = -1.0

    @property
    def n_gpus(self) -> int:
        return sum(g * n for _, g, n in self.groups)

    @property
    def n_jobs(self) -> int:
        return max(1, round(self.jobs_per_gpu * self.n_gpus))

    def cluster(self) -> Cluster:
        """The family's cluster."""
        return Cluster(tuple(NodeGroup(t, g, n) for t, g, n in self.groups))

    def scenario(self, seed: int) -> Scenario:
        """The family's scenario for ``seed`` (same seed, same scenario)."""
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValidationError("seed", f"must be a whole number >= 0, got {seed!r}")
        sc = random_scenario(seed, self.cluster(), self.n_jobs, running_fraction=self.running_fraction,
                             objective=Objective(p=self.p), name=f"family:{self.name}:{seed}")
        return Scenario(cluster=sc.cluster, jobs=sc.jobs, profiles=sc.profiles, objective=sc.objective,
                        name=sc.name, description=self.description)


_T4 = "t4"
FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("tiny", ((_T4, 4, 2),), 0.5, "2 x 4 T4, 4 jobs: small enough for brute force"),
    Family("testbed-under", ((_T4, 4, 16),), 0.5, "Pollux testbed (16 x 4 T4), 32 jobs (fewer jobs than GPUs)"),
    Family("testbed-over", ((_T4, 4, 16),), 1.5, "Pollux testbed (16 x 4 T4), 96 jobs (more jobs than GPUs)"),
    Family("mixed-64", ((_T4, 4, 8), ("a100", 8, 2), ("rtx2080ti", 8, 2)), 0.6,
           "64 GPUs of three types (8 x 4 T4, 2 x 8 A100, 2 x 8 RTX 2080Ti), 38 jobs"),
    Family("knob-32", ((_T4, 4, 8),), 0.25, "8 x 4 T4 = 32 GPUs, 8 jobs: spare GPUs to share out (the fairness knob)"),
    Family("cluster-16", ((_T4, 8, 2),), 0.4, "2 x 8 T4 = 16 GPUs, 6 jobs (the cluster-N scaling series)"),
    Family("cluster-64", ((_T4, 8, 8),), 0.4, "8 x 8 T4 = 64 GPUs, 26 jobs (the cluster-N scaling series)"),
    Family("cluster-256", ((_T4, 8, 32),), 0.4, "32 x 8 T4 = 256 GPUs, 102 jobs"),
    Family("cluster-1024", ((_T4, 8, 128),), 0.4, "128 x 8 T4 = 1024 GPUs, 410 jobs"),
    Family("cluster-2048", ((_T4, 8, 256),), 0.4, "256 x 8 T4 = 2048 GPUs, 819 jobs"),
    Family("mixed-2048", ((_T4, 4, 128), ("a100", 8, 96), ("rtx2080ti", 8, 96)), 0.4,
           "2048 GPUs of three types (128 x 4 T4, 96 x 8 A100, 96 x 8 RTX 2080Ti), 819 jobs"),
    Family("hetero-tiny", ((_T4, 2, 2), ("a100", 2, 1)), 0.5,
           "6 GPUs of two types (2 x 2 T4, 1 x 2 A100), 3 jobs: small enough for brute force"),
    Family("hetero-16", ((_T4, 4, 2), ("a100", 8, 1)), 1.0, "16 GPUs of two types (2 x 4 T4, 1 x 8 A100), 16 jobs"),
    Family("sia-64", ((_T4, 4, 6), ("a100", 8, 2), ("rtx2080ti", 8, 3)), 0.5,
           "Sia's default cluster: 6 x 4 T4 + 2 x 8 A100 + 3 x 8 RTX 2080Ti = 64 GPUs, 32 jobs"),
    Family("five-types-512", ((_T4, 4, 32), ("a100", 8, 16), ("rtx2080ti", 8, 8), ("v100", 8, 8),
                              ("rtx6000", 4, 32)), 0.4,
           "512 GPUs of five types (32 x 4 T4, 16 x 8 A100, 8 x 8 RTX 2080Ti, 8 x 8 V100, 32 x 4 RTX 6000), "
           "205 jobs"),
    Family("five-types-2048", ((_T4, 4, 128), ("a100", 8, 64), ("rtx2080ti", 8, 32), ("v100", 8, 64),
                               ("rtx6000", 4, 64)), 0.4,
           "2048 GPUs of five types (128 x 4 T4, 64 x 8 A100, 32 x 8 RTX 2080Ti, 64 x 8 V100, 64 x 4 RTX 6000), "
           "819 jobs"),
)}


#: Seeds whose instance greedy does *not* solve optimally (verified against the exact MILP
#: in the tests), e.g. ``family:tiny:35`` where greedy is 5.6% below the optimum.
GREEDY_SUBOPTIMAL: dict[str, tuple[int, ...]] = {"tiny": (3, 10, 15, 19, 21, 35)}


def family(name: str) -> Family:
    """The family called ``name`` (a :class:`ValidationError` lists the known ones)."""
    if name not in FAMILIES:
        raise ValidationError("family", f"unknown family {name!r}",
                              f"{suggest(name, FAMILIES)}choose one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


def family_scenario(spec: str) -> Scenario:
    """Scenario from ``family:NAME:SEED``."""
    name, seed = parse_family(spec)
    return family(name).scenario(seed)


def parse_family(spec: str) -> tuple[str, int]:
    """``(name, seed)`` of ``family:NAME:SEED``, both checked (the seed in ASCII digits, below 2**32)."""
    parts = str(spec).split(":")
    if len(parts) != 3 or parts[0] != "family" or not re.fullmatch(r"[0-9]{1,10}", parts[2]) \
            or int(parts[2]) >= 2 ** 32:
        raise ValidationError("scenario", f"family scenarios are written family:NAME:SEED, got {spec!r}",
                              f"SEED is a whole number in [0, 2**32); e.g. family:testbed-over:0; "
                              f"families: {', '.join(FAMILIES)}")
    family(parts[1])
    return parts[1], int(parts[2])


#: Columns of the index an export writes beside the instance files.
#: Most seeds per family an export writes.
MAX_EXPORT_SEEDS = 1000
EXPORT_COLUMNS = ("file", "family", "seed", "n_gpus", "n_nodes", "n_jobs", "gpu_types", "p", "description")


def export_families(out_dir: str | os.PathLike[str], seeds: int = 3, names: Iterable[str] | None = None) -> Path:
    """Write every family's scenarios for seeds ``0 .. seeds-1`` as self-contained instance files.

    ``out_dir`` gets ``NAME-SEED.yaml`` per scenario (goodopt's scenario format, readable with
    :func:`goodopt.load_scenario`), the application profiles they use under ``profiles/`` (referenced by
    relative path, so the folder travels alone) and ``index.csv`` (:data:`EXPORT_COLUMNS`). The folder is
    written whole or not at all. Returns ``out_dir``.
    """
    import csv


    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_EXPORT_SEEDS:
        raise ValidationError("seeds", f"must be a whole number in [1, {MAX_EXPORT_SEEDS}], got {seeds!r}")
    chosen = [family(n) for n in (names or FAMILIES)]
    out_dir = Path(out_dir)
    with atomic_dir(out_dir, {"what": "goodopt families --export", "seeds": seeds,
                              "families": [f.name for f in chosen]}) as tmp:
        (tmp / "profiles").mkdir()
        rows, saved = [], set()
        for fam in chosen:
            for seed in range(seeds):
                sc = fam.scenario(seed)
                paths = {}
                for app, prof in sorted(sc.profiles.items()):
                    if app not in saved:
                        save_profile(prof, tmp / "profiles" / f"{app}.yaml")
                        saved.add(app)
                    paths[app] = f"profiles/{app}.yaml"
                file = f"{fam.name}-{seed}.yaml"
                save_scenario(sc, tmp / file, profile_paths=paths)
                rows.append({"file": file, "family": fam.name, "seed": seed, "n_gpus": fam.n_gpus,
                             "n_nodes": sc.cluster.n_nodes, "n_jobs": len(sc.jobs),
                             "gpu_types": "+".join(dict.fromkeys(t for t, _, _ in fam.groups)),
                             "p": sc.objective.p, "description": fam.description})
        with open(tmp / "index.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(EXPORT_COLUMNS))
            w.writeheader()
            w.writerows(rows)
    return out_dir
