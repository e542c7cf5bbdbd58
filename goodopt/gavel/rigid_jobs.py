"""Rigid-job traces from Gavel's distributions, drawn with numpy (:mod:`.generator` draws Gavel's own jobs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import TraceError, ValidationError
from .published import GAVEL_DURATIONS, GAVEL_REFERENCE_TYPE, GAVEL_SCALE_FACTORS, GavelThroughputs, job_type_slug


def draw_job_type(throughputs: GavelThroughputs, rng: np.random.Generator,
                  scale_factors: Mapping[int, float] | None = None) -> tuple[str, int]:
    """A job type drawn uniformly and its scale factor (numpy's draws; Gavel's own sequence is
    :mod:`goodopt.gavel.generator`).

    Scale factors follow ``scale_factors`` (default :data:`GAVEL_SCALE_FACTORS`), restricted to those the job
    type was measured at (a type measured at one GPU only always gets 1).
    """
    jt = throughputs.job_types[int(rng.integers(len(throughputs.job_types)))]
    dist = dict(scale_factors or GAVEL_SCALE_FACTORS)
    sizes = np.array(list(dist))
    probs = np.array(list(dist.values()), dtype=float)
    ok = np.isin(sizes, throughputs.scale_factors(jt))
    return jt, int(rng.choice(sizes[ok], p=probs[ok] / probs[ok].sum()))


def gavel_jobs(throughputs: GavelThroughputs, seed: int, n_jobs: int) -> list[tuple[str, str, int]]:
    """Rigid throughput-only jobs drawn like Gavel's generator (:func:`draw_job_type`).

    Returns ``[(name, profile_name, scale_factor), ...]``.
    """
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(n_jobs)):
        jt, s = draw_job_type(throughputs, rng)
        slug = job_type_slug(jt)
        out.append((f"{slug}-{i}", slug, s))
    return out


@dataclass(frozen=True)
class RigidJob:
    """A rigid throughput-only job: ``total_steps`` steps of ``job_type`` on ``scale_factor`` GPUs of one type.

    ``duration_s`` is how long it runs alone on the reference type (Gavel's
    ``run_time``); ``weight`` its priority weight; ``entity`` the user or
    group it belongs to (hierarchical policies).
    """

    name: str
    job_type: str
    scale_factor: int
    arrival_s: float
    total_steps: float
    duration_s: float
    weight: float = 1.0
    entity: str = ""


def assign_entities(jobs: Sequence[RigidJob], shares: Mapping[str, float],
                    rng: np.random.Generator) -> tuple[RigidJob, ...]:
    """Each job given an entity drawn with probability ``shares[entity]`` (normalised)."""
    names = list(shares)
    p = np.array([float(shares[n]) for n in names])
    if not names or np.any(~np.isfinite(p)) or np.any(p <= 0):
        raise ValidationError("entities", f"shares must be numbers > 0, got {shares!r}", "e.g. {A: 1, B: 2}")
    picks = rng.choice(len(names), size=len(jobs), p=p / p.sum())
    return tuple(dataclasses.replace(j, entity=names[int(i)]) for j, i in zip(jobs, picks))


def gavel_trace(throughputs: GavelThroughputs, rate_per_h: float, n_jobs: int,
                rng: np.random.Generator, scale_factors: Mapping[int, float] | None = None) -> tuple[RigidJob, ...]:
    """``n_jobs`` jobs as Gavel's generator draws them, arriving as a Poisson process of ``rate_per_h``.

    Each job: a type and scale factor (:func:`draw_job_type`), a duration of
    ``60 * 10**U(1.5, 3)`` s with probability 0.8, else ``60 * 10**U(3, 4)`` s
    (:data:`GAVEL_DURATIONS`), and as many steps as that duration takes alone on
    the reference type (:data:`GAVEL_REFERENCE_TYPE`). The first job arrives at 0.
    """
    if not (isinstance(rate_per_h, (int, float)) and 0 < rate_per_h < float("inf")):
        raise ValidationError("rate_per_h", f"must be a positive number of jobs per hour, got {rate_per_h!r}")
    if GAVEL_REFERENCE_TYPE not in throughputs.gpu_types:
        raise TraceError(f"{throughputs.source}: no {GAVEL_REFERENCE_TYPE!r} throughputs to size jobs by")
    (p_short, short), (_, long) = GAVEL_DURATIONS
    jobs, t = [], 0.0
    for i in range(int(n_jobs)):
        jt, s = draw_job_type(throughputs, rng, scale_factors)
        lo, hi = short if rng.random() < p_short else long
        duration = 60.0 * 10.0 ** rng.uniform(lo, hi)
        rate = throughputs.rate(GAVEL_REFERENCE_TYPE, jt, s)
        jobs.append(RigidJob(f"{job_type_slug(jt)}-{i}", jt, s, t, duration * rate, duration))
        t += rng.exponential(3600.0 / rate_per_h)
    return tuple(jobs)
