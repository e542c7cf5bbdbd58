"""Gavel's published data: its ``simulation_throughputs.json`` (job types x GPU types x scale factors, with
space-sharing pairs), its prices, cluster and job-size and duration distributions."""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import TraceError
from ..profiles import ThroughputProfile

#: Cloud on-demand prices per GPU-hour (USD) Gavel used for its cost policies.
GAVEL_PRICES_PER_GPU_H = {"k80": 0.45, "p100": 1.46, "v100": 2.48}


# ------------------------------------------------------------------ Gavel's file
_KEY = re.compile(r"^\('(?P<model>[^']+)', (?P<scale>\d+)\)$")


_BATCH = re.compile(r"^(?P<name>.+?) \(batch size (?P<bs>\d+)\)$")


def job_type_slug(model: str) -> str:
    """Profile name of a Gavel job type, e.g. ``'ResNet-50 (batch size 64)'`` -> ``resnet50-bs64``."""
    m = _BATCH.match(model)
    base, bs = (m["name"], m["bs"]) if m else (model, None)
    slug = re.sub(r"[^a-z0-9]+", "", base.lower())
    return f"{slug}-bs{bs}" if bs else slug


@dataclass(frozen=True)
class GavelThroughputs:
    """Gavel's measured throughputs.

    ``single[(gpu_type, job_type, scale, consolidated)]`` = steps/s alone;
    ``pairs[(gpu_type, job_a, job_b)]`` = (steps/s of a, steps/s of b) when
    the two scale-1 jobs share one GPU (space sharing).
    """

    single: dict[tuple[str, str, int, bool], float]
    pairs: dict[tuple[str, str, str], tuple[float, float]]
    gpu_types: tuple[str, ...]
    job_types: tuple[str, ...]
    source: str = ""

    def scale_factors(self, job_type: str) -> list[int]:
        return sorted({s for (_, jt, s, _) in self.single if jt == job_type})

    def rate(self, gpu_type: str, job_type: str, scale: int, consolidated: bool = True) -> float:
        """Steps/s of ``job_type`` at ``scale`` GPUs of ``gpu_type`` (0 if not measured)."""
        return float(self.single.get((gpu_type, job_type, int(scale), bool(consolidated)), 0.0))

    def profiles(self) -> dict[str, ThroughputProfile]:
        """One throughput-only profile per job type (slug names, see :func:`job_type_slug`).

        Scale factor 1 is single-node; larger ones are single-node when
        consolidated and multi-node when not.
        """
        out = {}
        for jt in self.job_types:
            rates = {}
            for g in self.gpu_types:
                table = {}
                for s in self.scale_factors(jt):
                    v = self.rate(g, jt, s, True)
                    if v > 0:
                        table[(s, False)] = v
                    u = self.rate(g, jt, s, False)
                    if s > 1 and u > 0:
                        table[(s, True)] = u
                if table:
                    rates[g] = table
            m = _BATCH.match(jt)
            pairs: dict[str, dict[str, tuple[float, float]]] = {}
            for (g, a, b), both in self.pairs.items():
                if a == jt:
                    pairs.setdefault(g, {})[job_type_slug(b)] = both
            out[job_type_slug(jt)] = ThroughputProfile(
                name=job_type_slug(jt), batch_size=int(m["bs"]) if m else 1, rates=rates,
                description=f"{jt} (Gavel's simulation_throughputs.json)", pairs=pairs)
        return out


def read_gavel_throughputs(path: str | os.PathLike[str]) -> GavelThroughputs:
    """Read Gavel's ``simulation_throughputs.json`` (a file, or a traces folder holding ``gavel/``)."""
    p = Path(path)
    if p.is_dir():
        p = p / "gavel" / "simulation_throughputs.json" if (p / "gavel").is_dir() else p / "simulation_throughputs.json"
    if not p.is_file():
        raise TraceError(f"Gavel throughput file not found: {p} (set GOODOPT_TRACES or pass the file)")
    try:
        raw = json.loads(p.read_bytes().decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"{p}: not valid UTF-8 JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise TraceError(f"{p}: must map GPU type -> job type -> throughputs, got {type(raw).__name__}")
    single, pairs, gpu_types, job_types = {}, {}, [], []
    for worker, jobs in raw.items():
        consolidated = not worker.endswith("_unconsolidated")
        gpu = worker.removesuffix("_unconsolidated")
        if gpu not in gpu_types:
            gpu_types.append(gpu)
        if not isinstance(jobs, dict):
            raise TraceError(f"{p}: entry {worker!r} must map job types to throughputs")
        for key, entry in jobs.items():
            model, scale = _parse_key(p, key)
            if model not in job_types:
                job_types.append(model)
            if not isinstance(entry, dict) or "null" not in entry:
                raise TraceError(f"{p}: {worker} / {key} has no 'null' (isolated) throughput")
            single[(gpu, model, scale, consolidated)] = _rate(p, f"{worker} / {key} / null", entry["null"])
            if consolidated and scale == 1:
                for other, both in entry.items():
                    if other == "null":
                        continue
                    other_model, other_scale = _parse_key(p, other)
                    if other_scale == 1 and isinstance(both, list) and len(both) == 2:
                        where = f"{worker} / {key} / {other}"
                        pairs[(gpu, model, other_model)] = (_rate(p, where, both[0]), _rate(p, where, both[1]))
    return GavelThroughputs(single=single, pairs=pairs, gpu_types=tuple(gpu_types), job_types=tuple(job_types),
                            source=str(p))


def _rate(path: Path, where: str, value: object) -> float:
    """A measured throughput: a finite number >= 0 (0: the job does not run there)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
        raise TraceError(f"{path}: {where}: a throughput must be a finite number >= 0, got {value!r}")
    return float(value)


def _parse_key(path: Path, key: str) -> tuple[str, int]:
    m = _KEY.match(key)
    if m is None:
        try:  # tolerate other spacing of the tuple
            model, scale = ast.literal_eval(key)
            return str(model), int(scale)
        except (ValueError, SyntaxError, TypeError):
            raise TraceError(f"{path}: cannot read job key {key!r} (expected \"('<model>', <scale>)\")") from None
    return m["model"], int(m["scale"])


#: Gavel's distribution of job scale factors in its generated workloads (GPUs: probability).
GAVEL_SCALE_FACTORS = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}


#: Gavel's default simulated cluster: 36 GPUs of each type, here 9 servers of 4 GPUs each.
GAVEL_CLUSTER = (("v100", 4, 9), ("p100", 4, 9), ("k80", 4, 9))


#: Gavel's generator's job durations (seconds on the reference GPU type): ``60 * 10**U(lo, hi)`` with the
#: first range's probability, else the second range.
GAVEL_DURATIONS = ((0.8, (1.5, 3.0)), (0.2, (3.0, 4.0)))


#: The GPU type whose throughput turns a drawn duration into a number of steps in Gavel's generator.
GAVEL_REFERENCE_TYPE = "v100"
