"""The per-job tables of an allocation problem (see :mod:`goodopt.problem`): best goodput, micro-batch and
accumulation steps per (job, GPU type, GPU count, spread), each job's base configuration, and the measured
space sharing of throughput-only applications."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import goodput as gp
from .arrays import Array
from .cluster import Cluster
from .errors import ScenarioError
from .objective import Objective
from .profiles import ThroughputProfile
from .records import RecordIn

_TABLE_CHUNK = 2_000_000  # elements per vectorised block when building tables


def app_pairs(profiles: RecordIn, type_names: Sequence[str]) -> dict[tuple[str, str], Array]:
    """Measured space sharing between the throughput-only applications of ``profiles`` (application -> its
    profile, the problem's applications only; see :attr:`goodopt.problem.AllocationProblem.app_pairs`); ``{}`` when none has
    pair throughputs."""
    out: dict[tuple[str, str], Array] = {}
    app_of = {getattr(prof, "name", a): a for a, prof in profiles.items()}  # pairs name the other profile
    for a in sorted(profiles):
        prof = profiles[a]
        for k, gpu in enumerate(type_names):
            solo_a = prof.rates.get(gpu, {}).get((1, False), 0.0) if isinstance(prof, ThroughputProfile) else 0.0
            for other, (with_a, with_b) in (prof.pairs.get(gpu, {}).items() if solo_a > 0 else ()):
                b = app_of.get(other)
                if b is None:
                    continue
                solo_b = profiles[b].rates.get(gpu, {}).get((1, False), 0.0)
                if solo_b > 0:
                    rel = out.setdefault((a, b), np.zeros((len(type_names), 2)))
                    rel[k] = (with_a / solo_a, with_b / solo_b)
    return out


def goodput_tables(profiles: Sequence[Any], type_names: Sequence[str], phi: Array, k_max: int,
                   n_candidates: int, k_caps: Sequence[int] | None = None,
                   node_caps: Sequence[int] | None = None) -> tuple[Array, Array, Array]:  # Any: profiles of any kind (throughput-only or goodput)
    """Best goodput, micro-batch and accumulation steps per (job, type, k, multi); for a goodput model only
    counts up to ``k_caps[g]`` on type ``g`` (a type's GPUs: the problem has no use for more), and on one node
    only up to ``node_caps[g]`` (its largest node: no placement puts more there), 0 above.

    Vectorised over jobs, GPU counts, node spread and candidates: per GPU type,
    each distinct (parameters, batch limits) has its candidates' throughput
    scored once, then every job sharing them is scored with its own phi, in
    blocks of jobs (five-types-2048: 8.1 s of CPU when every job was scored
    whole). Single-node counts stop at the largest node: on five-types-2048
    they went up to 512 GPUs, and building its problem took 5.3 s of CPU
    where it now takes 1.9 s (the same tables but those entries; min of
    three, one machine).

    Shapes: -> three arrays (J, G, k_max + 1, 2).
    """
    n_jobs, n_types = len(profiles), len(type_names)
    shape = (n_jobs, n_types, k_max + 1, 2)
    good = np.zeros(shape)
    local = np.zeros(shape, dtype=np.int64)
    accum = np.zeros(shape, dtype=np.int64)
    rate_tables: dict[tuple[int, str], Array] = {}  # one per profile object and type (jobs share profiles)
    for j, prof in enumerate(profiles):
        if isinstance(prof, ThroughputProfile):  # measured rates at a fixed batch, efficiency 1
            for g, t in enumerate(type_names):
                key = (id(prof), t)
                if key not in rate_tables:
                    rate_tables[key] = prof.rate_table(t, k_max)
                good[j, g] = rate_tables[key]
                local[j, g] = np.where(good[j, g] > 0, prof.batch_size, 0)
    per_job = (k_max + 1) * n_candidates
    step = max(1, _TABLE_CHUNK // per_job)
    for g, t in enumerate(type_names):
        groups = _application_groups(profiles, t)
        top = k_max if k_caps is None else min(k_max, int(k_caps[g]))
        tops = (top if node_caps is None else min(top, int(node_caps[g])), top)  # one node, several
        for shared, members in groups.items():
            m0, m_max, m_min, m_top = shared[7:]
            rows = np.array(members, dtype=np.int64)
            for m, t_m in enumerate(tops):
                scored = _scored(shared, t_m, bool(m), n_candidates)  # (C, 1, t_m + 1)
                for start in range(0, len(rows), step):
                    block = rows[start:start + step]
                    out = gp.best_candidate_table(scored, phi[block], m0)
                    good[block, g, :t_m + 1, m], local[block, g, :t_m + 1, m], accum[block, g, :t_m + 1, m] = out
    # One GPU is never multi-node; multi-node with a single node is impossible. Keep both
    # columns consistent at k <= 1 so look-ups of degenerate rows stay well defined.
    good[:, :, :2, 1] = good[:, :, :2, 0]
    local[:, :, :2, 1] = local[:, :, :2, 0]
    return good, local, accum


#: Scored candidates remembered per process, and the largest remembered (candidates x GPU counts): a
#: simulation asks for the same job's candidates round after round until its agent refits.
SCORED_CACHE_SIZE = 1024
SCORED_CACHE_MAX = 20_000


_Scored = tuple[Array, Array, Array, Array, Array]


def _scored(shared: tuple[float, ...], top: int, multi: bool, n_candidates: int) -> _Scored:
    """:func:`goodopt.goodput.scored_candidates` for 0..``top`` GPUs of one group (``shared``: the seven
    parameters and the four batch limits, see :func:`_application_groups`), remembered when small; the arrays
    are read-only. Shapes: -> five arrays (C, 1, top + 1)."""
    if (top + 1) * n_candidates > SCORED_CACHE_MAX:
        return _score(shared, top, multi, n_candidates)
    return _score_remembered(shared, top, multi, n_candidates)


def _score(shared: tuple[float, ...], top: int, multi: bool, n_candidates: int) -> _Scored:
    m0, m_max, m_min, m_top = shared[7:]
    params = dict(zip(gp.ThroughputParams.names(), shared[:7]))
    out = gp.scored_candidates(params, np.arange(top + 1)[None, :], multi, m0, m_max, m_min, m_top,
                               n_candidates=n_candidates)
    for a in out:
        a.setflags(write=False)
    return out


_score_remembered = functools.lru_cache(maxsize=SCORED_CACHE_SIZE)(_score)


def _application_groups(profiles: Sequence[Any], gpu_type: str) -> dict[tuple[float, ...], list[int]]:
    """The jobs with a goodput model on ``gpu_type``, grouped by what their candidates' throughput depends on
    (the type's parameters and the batch limits, as one key): only phi differs within a group (jobs of one
    application)."""
    groups: dict[tuple[float, ...], list[int]] = {}
    for j, prof in enumerate(profiles):
        if not isinstance(prof, ThroughputProfile) and gpu_type in prof.gpu_types:
            gprof = prof.gpu_types[gpu_type]
            shared = (*gprof.params.as_array().tolist(), float(prof.init_batch_size),
                      float(prof.max_batch_size), float(gprof.min_local_bsz), float(gprof.max_local_bsz))
            groups.setdefault(shared, []).append(j)
    return groups


def base_configs(obj: Objective, cl: Cluster, names: Sequence[str], profiles: Sequence[Any], good: Array,
                 min_gpus: Array, max_gpus: Array, type_totals: Array) -> tuple[Array, Array, Array]:  # Any: profiles of any kind (throughput-only or goodput)
    """Base GPU count, type and goodput per job (see :mod:`goodopt.problem`). Shapes: -> (J,) x 3."""
    type_names = cl.gpu_type_names
    n_jobs = len(names)
    if obj.base == "min-config":
        return _base_min_config(names, good)
    preferred = obj.base_gpu_type or type_names[int(np.argmax(type_totals))]
    fair = -(-cl.n_gpus // n_jobs) if obj.base == "fair-share" else 1
    base_gpus = np.zeros(n_jobs, dtype=np.int64)
    base_type = np.zeros(n_jobs, dtype=np.int64)
    base_goodput = np.zeros(n_jobs)
    for j, prof in enumerate(profiles):
        order = [preferred] + [t for t in type_names if t != preferred]
        for t in order:
            g = type_names.index(t)
            if t not in prof.gpu_types:
                continue
            base = _base_on_type(good[j, g], fair, max(min_gpus[j], 1), min(max_gpus[j], type_totals[g]),
                                 cl.max_gpus_per_node(t))
            if base is None:
                continue
            base_gpus[j], base_goodput[j] = base
            base_type[j] = g
            break
        else:
            raise ScenarioError(
                f"jobs[{j}].application",
                f"job {names[j]!r} has no valid configuration on any GPU type of the cluster",
                "check its min/max GPUs and the profile's batch limits",
            )
    return base_gpus, base_type, base_goodput


def _base_on_type(good: Array, fair: int, lo: int, hi: int, node_size: int) -> tuple[int, float] | None:
    """Base ``(k, goodput)`` of one job on one type, or None when it has no valid count there.

    ``k`` is the fair share clamped to ``[lo, hi]``, then walked down to the
    nearest count that has a goodput on its own fewest-node spread (up, if
    none lies below); a job measured only at other spreads (a throughput-only
    job with a rate for 3 GPUs over two nodes and none on one) is based on
    its smallest measured count. Shapes: good (K + 1, 2).
    """
    ks = np.arange(good.shape[0])
    fewest_multi = (-(-ks // max(node_size, 1)) > 1).astype(np.int64)
    on_fewest = good[ks, fewest_multi]
    valid = np.flatnonzero((ks >= 1) & (on_fewest > 0))
    if len(valid):
        k = int(np.clip(fair, lo, max(min(hi, int(valid.max())), lo)))
        below, above = valid[valid <= k], valid[valid > k]
        k = int(below[-1]) if len(below) else int(above[0])
        return k, float(on_fewest[k])
    any_spread = np.flatnonzero((ks >= 1) & (good.max(axis=1) > 0))
    if not len(any_spread):
        return None
    k = int(any_spread[0])
    return k, float(good[k, 0] if good[k, 0] > 0 else good[k, 1])


def _base_min_config(names: Sequence[str], good: Array) -> tuple[Array, Array, Array]:
    """Sia's normalisation: each job's smallest positive goodput over all types and counts.

    Shapes: good (J, G, K + 1, 2) -> (J,) x 3.
    """
    J, G, K1, _ = good.shape
    flat = np.where(good > 0, good, np.inf).reshape(J, -1)
    idx = flat.argmin(axis=1)
    value = flat[np.arange(J), idx]
    bad = np.flatnonzero(~np.isfinite(value))
    if len(bad):
        j = int(bad[0])
        raise ScenarioError(f"jobs[{j}].application",
                            f"job {names[j]!r} has no valid configuration on any GPU type of the cluster",
                            "check its min/max GPUs and the profile's batch limits")
    g, k, _ = np.unravel_index(idx, (G, K1, 2))
    return k.astype(np.int64), g.astype(np.int64), value
