"""Gavel's job generator, draw for draw: a seed gives the very jobs Gavel's simulator runs.

Gavel's simulator (OSDI'20 artifact, ``scheduler.py`` and ``utils.py``) draws
its jobs from Python's ``random.Random(seed + 2)`` and its inter-arrival times
from ``random.Random(seed + 3)``. For each job, in this order:

1. a scale factor from ``r = uniform(0, 1)``: 1 GPU below 0.7, 2 up to 0.8,
   4 up to 0.95, else 8 (drawn even when only one-GPU jobs are generated);
2. a duration: with ``random() >= 0.8`` it is ``60 * 10**uniform(3, 4)`` s,
   else ``60 * 10**uniform(1.5, 3)`` s;
3. a job type by ``choice`` over Gavel's job table (:data:`GAVEL_JOB_TABLE`,
   in its order), redrawn until a multi-GPU job gets a type that can run
   distributed;
4. its steps: the duration times the job type's throughput on one V100 set of
   that many GPUs.

The first job arrives at 0, each next one ``-mean * log(1 - random())`` s
later (``mean = 3600 / rate``). With ``scale_factors`` other than Gavel's the
same ``r`` picks the size by the cumulative distribution of the given one
(``{1: 1.0}`` is Gavel's continuous-single setup, where the drawn size is
replaced by 1 exactly as Gavel does).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import TraceError, ValidationError
from .published import GAVEL_REFERENCE_TYPE, GAVEL_SCALE_FACTORS, GavelThroughputs, job_type_slug
from .rigid_jobs import RigidJob

#: Gavel's job table, in its order: (job type, whether it can run on several GPUs).
GAVEL_JOB_TABLE = (
    *((f"ResNet-18 (batch size {b})", True) for b in (16, 32, 64, 128, 256)),
    *((f"ResNet-50 (batch size {b})", True) for b in (16, 32, 64, 128)),
    *((f"Transformer (batch size {b})", True) for b in (16, 32, 64, 128, 256)),
    *((f"LM (batch size {b})", True) for b in (5, 10, 20, 40, 80)),
    *((f"Recommendation (batch size {b})", False) for b in (512, 1024, 2048, 4096, 8192)),
    ("A3C", False),
    ("CycleGAN", False),
)
#: Gavel's continuous-single setup (its Figure 8): every job on one GPU.
SINGLE_GPU = {1: 1.0}


#: Job sizes and their probabilities as a spec gives them: a mapping, or (size, probability) pairs; None or empty
#: for Gavel's. Keys and values are checked, so anything may come (sizes as strings, say).
ScaleFactors = Mapping[Any, Any] | Sequence[tuple[Any, Any]] | None


def check_scale_factors(scale_factors: ScaleFactors) -> dict[int, float]:
    """``{GPUs: probability}`` with sizes in 1, 2, 4, 8 and probabilities summing to 1 (empty: Gavel's)."""
    if scale_factors is None or (isinstance(scale_factors, (Mapping, tuple, list)) and len(scale_factors) == 0):
        return dict(GAVEL_SCALE_FACTORS)
    items = scale_factors.items() if isinstance(scale_factors, Mapping) else scale_factors
    out = {}
    for k, p in items:
        size = int(k) if isinstance(k, (int, str)) and str(k).isdigit() else None
        if size not in (1, 2, 4, 8):
            raise ValidationError("scale_factors", f"size {k!r} is not one of Gavel's 1, 2, 4, 8 GPUs")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 <= p <= 1):
            raise ValidationError(f"scale_factors.{size}", f"must be a probability in [0, 1], got {p!r}")
        out[size] = float(p)
    if abs(math.fsum(out.values()) - 1.0) > 1e-9:
        raise ValidationError("scale_factors", f"probabilities sum to {math.fsum(out.values()):g}",
                              "make them sum to 1, e.g. {1: 0.7, 2: 0.1, 4: 0.15, 8: 0.05}")
    return dict(sorted(out.items()))


def check_job_table(throughputs: GavelThroughputs, where: str = "generator") -> None:
    """Refuse a throughput file without Gavel's job types (its generator draws from exactly those)."""
    missing = [t for t, _ in GAVEL_JOB_TABLE if t not in throughputs.job_types]
    if missing:
        raise ValidationError(where, f"Gavel's generator draws Gavel's job types, and {throughputs.source} has no "
                              f"throughputs for {len(missing)} of them (e.g. {missing[0]!r})",
                              "use generator: numpy to draw from the file's own job types")


def _size(r: float, scale_factors: dict[int, float]) -> int:
    if scale_factors == GAVEL_SCALE_FACTORS:  # Gavel's own thresholds, boundaries included as it has them
        return 1 if r < 0.7 else 2 if r <= 0.8 else 4 if r <= 0.95 else 8
    cum = 0.0
    for size, p in scale_factors.items():
        cum = round(cum + p, 12)
        if r < cum:
            return size
    return max(s for s, p in scale_factors.items() if p > 0)


def gavel_trace_exact(throughputs: GavelThroughputs, rate_per_h: float, n_jobs: int, seed: int,
                      scale_factors: ScaleFactors = None) -> tuple[RigidJob, ...]:
    """``n_jobs`` jobs as Gavel's simulator generates them for ``seed`` (see the module docstring)."""
    if not (isinstance(rate_per_h, (int, float)) and 0 < rate_per_h < float("inf")):
        raise ValidationError("rate_per_h", f"must be a positive number of jobs per hour, got {rate_per_h!r}")
    sizes = check_scale_factors(scale_factors)
    check_job_table(throughputs)
    single = sizes == SINGLE_GPU
    jobs_rng, arrivals_rng = random.Random(seed + 2), random.Random(seed + 3)
    mean_gap = 3600.0 / rate_per_h
    jobs, t = [], 0.0
    for i in range(int(n_jobs)):
        s = _size(jobs_rng.uniform(0, 1), GAVEL_SCALE_FACTORS if single else sizes)
        if jobs_rng.random() >= 0.8:
            duration = 60.0 * 10 ** jobs_rng.uniform(3, 4)
        else:
            duration = 60.0 * 10 ** jobs_rng.uniform(1.5, 3)
        if single:
            s = 1
        while True:
            job_type, distributed = jobs_rng.choice(GAVEL_JOB_TABLE)
            if s == 1 or distributed:
                break
        rate = throughputs.rate(GAVEL_REFERENCE_TYPE, job_type, s)
        if rate <= 0:
            raise TraceError(f"{throughputs.source}: no {GAVEL_REFERENCE_TYPE} throughput of {job_type!r} on {s} GPUs")
        jobs.append(RigidJob(f"{job_type_slug(job_type)}-{i}", job_type, s, t, duration * rate, duration))
        t += -mean_gap * math.log(1.0 - arrivals_rng.random())
    return tuple(jobs)
