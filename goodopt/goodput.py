"""The Pollux goodput model: throughput x statistical efficiency.

For a job on one GPU type with ``k`` GPUs over ``n`` nodes (``multi = n > 1``),
a per-GPU micro-batch of ``m`` examples and ``s`` extra gradient-accumulation
micro-steps:

* compute time of one micro-batch: ``T_c(m) = alpha_c + beta_c * m``;
* gradient synchronisation: ``T_s = 0`` if ``k == 1``, else
  ``alpha + beta * max(k - 2, 0)`` with ``(alpha_n, beta_n)`` when ``multi``
  and ``(alpha_r, beta_r)`` otherwise;
* step time with overlap ``gamma``: ``T_step = (T_c^gamma + T_s^gamma)^(1/gamma)``;
* iteration time ``T_iter = s * T_c(m) + T_step``, total batch
  ``M = k * m * (s + 1)``, throughput ``X = M / T_iter`` (examples/s);
* statistical efficiency ``E(M) = (phi + M0) / (phi + M)`` with ``phi`` the
  gradient noise scale in examples;
* goodput ``G = X * E(M)``.

All functions broadcast over numpy arrays; none loops over jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .arrays import Array, ArrayIn, ArrayOut
from .candidate_choice import choose_columns, choose_table
from .errors import ValidationError

#: Number of geometric candidate total batch sizes (as in Pollux).
N_BATCH_CANDIDATES = 50
_EPS = 1e-8  # tolerance of the floor/ceil roundings of batch sizes


@dataclass(frozen=True)
class ThroughputParams:
    """Throughput-model parameters of one application on one GPU type.

    Times are in seconds, batch sizes in examples.
    """

    alpha_c: float
    beta_c: float
    alpha_r: float
    beta_r: float
    alpha_n: float
    beta_n: float
    gamma: float

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not np.isfinite(value) or value < 0:
                raise ValidationError(f.name, f"must be a finite number >= 0, got {value!r}")
        if not 1.0 <= self.gamma <= 10.0:
            raise ValidationError("gamma", f"must lie in [1, 10], got {self.gamma!r}")
        if self.alpha_c + self.beta_c <= 0:
            raise ValidationError("alpha_c", "alpha_c and beta_c are both 0, so a step would take no time",
                                  "give the compute time per step a positive constant or slope")

    def as_array(self) -> np.ndarray:
        """The seven parameters in declaration order. Shapes: () -> (7,)."""
        return np.array([self.alpha_c, self.beta_c, self.alpha_r, self.beta_r, self.alpha_n, self.beta_n,
                         self.gamma], dtype=float)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


#: The model functions' parameters: a :class:`ThroughputParams`, or a mapping of its field names.
Params = ThroughputParams | Mapping[str, Any]


def _param(params: Params, name: str) -> Any:
    """A parameter as an array that broadcasts against the configuration arrays."""
    if isinstance(params, ThroughputParams):
        return getattr(params, name)
    return params[name]


def compute_time(params: Params, local_bsz: ArrayIn) -> ArrayOut:
    """Compute time of one micro-batch, ``alpha_c + beta_c * m``.

    Shapes: broadcast(params, local_bsz) -> same.
    """
    return _param(params, "alpha_c") + _param(params, "beta_c") * local_bsz


def sync_time(params: Params, n_gpus: ArrayIn, multi_node: ArrayIn) -> ArrayOut:
    """Gradient synchronisation time (0 on one GPU).

    Shapes: broadcast(params, n_gpus, multi_node) -> same.
    """
    n_gpus = np.asarray(n_gpus)
    multi_node = np.asarray(multi_node, dtype=bool)
    alpha = np.where(multi_node, _param(params, "alpha_n"), _param(params, "alpha_r"))
    beta = np.where(multi_node, _param(params, "beta_n"), _param(params, "beta_r"))
    t = alpha + beta * np.maximum(n_gpus - 2, 0)
    return np.where(n_gpus > 1, t, 0.0)


def step_time(params: Params, local_bsz: ArrayIn, n_gpus: ArrayIn, multi_node: ArrayIn) -> ArrayOut:
    """Time of the synchronising micro-step, ``(T_c^g + T_s^g)^(1/g)``.

    Shapes: broadcast(params, local_bsz, n_gpus, multi_node) -> same.
    """
    gamma = _param(params, "gamma")
    t_c = compute_time(params, local_bsz)
    t_s = sync_time(params, n_gpus, multi_node)
    return (t_c**gamma + t_s**gamma) ** (1.0 / gamma)


def iteration_time(params: Params, local_bsz: ArrayIn, accum_steps: ArrayIn, n_gpus: ArrayIn,
                   multi_node: ArrayIn) -> ArrayOut:
    """Time of one optimiser iteration, ``s * T_c(m) + T_step``.

    Shapes: broadcast(all arguments) -> same.
    """
    return accum_steps * compute_time(params, local_bsz) + step_time(
        params, local_bsz, n_gpus, multi_node
    )


def throughput(params: Params, local_bsz: ArrayIn, accum_steps: ArrayIn, n_gpus: ArrayIn,
               multi_node: ArrayIn) -> ArrayOut:
    """Examples per second, ``k * m * (s + 1) / T_iter``.

    Shapes: broadcast(all arguments) -> same.
    """
    total = n_gpus * local_bsz * (accum_steps + 1)
    return total / iteration_time(params, local_bsz, accum_steps, n_gpus, multi_node)


def efficiency(batch_size: ArrayIn, phi: ArrayIn, init_batch_size: ArrayIn) -> ArrayOut:
    """Statistical efficiency ``(phi + M0) / (phi + M)``; ``phi = inf`` gives 1.

    Shapes: broadcast(batch_size, phi, init_batch_size) -> same.
    """
    batch_size = np.asarray(batch_size, dtype=float)
    phi = np.asarray(phi, dtype=float)
    with np.errstate(invalid="ignore"):
        e = (phi + init_batch_size) / (phi + batch_size)
    return np.where(np.isinf(phi), 1.0, e)


def phi_from_gradients(grad_sqr: ArrayIn, grad_var: ArrayIn, init_batch_size: ArrayIn) -> ArrayOut:
    """Gradient noise scale ``phi = M0 * grad_var / grad_sqr`` (examples).

    Shapes: broadcast(grad_sqr, grad_var, init_batch_size) -> same.
    """
    grad_sqr = np.asarray(grad_sqr, dtype=float)
    grad_var = np.asarray(grad_var, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(grad_sqr > 0, init_batch_size * grad_var / grad_sqr, np.inf)


def goodput(params: Params, local_bsz: ArrayIn, accum_steps: ArrayIn, n_gpus: ArrayIn, multi_node: ArrayIn,
            phi: ArrayIn, init_batch_size: ArrayIn) -> ArrayOut:
    """Goodput ``X * E(M)`` of explicit configurations (examples/s at M0 efficiency).

    Shapes: broadcast(all arguments) -> same.
    """
    total = n_gpus * local_bsz * (accum_steps + 1)
    x = throughput(params, local_bsz, accum_steps, n_gpus, multi_node)
    return x * efficiency(total, phi, init_batch_size)


def candidate_batches(n_gpus: ArrayIn, init_batch_size: ArrayIn, max_batch_size: ArrayIn, min_local_bsz: ArrayIn,
                      max_local_bsz: ArrayIn, n_candidates: int = N_BATCH_CANDIDATES) -> tuple[Array, Array, Array]:
    """Pollux's candidate configurations for ``k`` GPUs.

    ``n_candidates`` geometric total batch sizes from ``max(M0, k*m_min)`` to
    ``M_max``; per-GPU batch ``ceil(M/k)`` split into ``s = ceil(local/m_max) - 1``
    accumulation steps (at least 1 when ``k == 1`` and ``local > M0``) and a
    micro-batch ``ceil(local/(s+1))``. Candidates whose micro-batch falls outside
    ``[m_min, m_max]`` or whose lower end exceeds ``M_max`` are flagged invalid.

    Shapes: broadcast(n_gpus, limits) = B -> local_bsz, accum_steps (int), valid
    (bool), each ``(n_candidates,) + B``.
    """
    k = np.asarray(n_gpus, dtype=float)
    m0 = np.asarray(init_batch_size, dtype=float)
    m_max_total = np.asarray(max_batch_size, dtype=float)
    lo = np.maximum(m0, np.maximum(k, 1) * min_local_bsz)
    hi = np.broadcast_to(m_max_total, np.broadcast(lo, m_max_total).shape)
    lo_b = np.broadcast_to(lo, hi.shape)
    reachable = lo_b <= hi + _EPS
    # geomspace with per-element endpoints; unreachable ranges collapse onto lo.
    frac = np.linspace(0.0, 1.0, n_candidates).reshape((n_candidates,) + (1,) * hi.ndim)
    safe_hi = np.where(reachable, hi, lo_b)
    batch = np.exp(np.log(lo_b) + frac * (np.log(safe_hi) - np.log(lo_b)))
    kk = np.maximum(k, 1)
    local = batch / kk
    accum = np.ceil(local / max_local_bsz - _EPS) - 1
    accum = np.where((k == 1) & (local > m0 + _EPS), np.maximum(accum, 1), accum)
    accum = np.maximum(accum, 0)
    micro = np.ceil(local / (accum + 1) - _EPS)
    valid = (micro >= min_local_bsz) & (micro <= max_local_bsz) & reachable & (k >= 1)
    return micro.astype(np.int64), accum.astype(np.int64), valid


def best_config(params: Any,  # Any: a ThroughputParams or its parameters as an array (see _param)
                n_gpus: ArrayIn, multi_node: ArrayIn, phi: ArrayIn, init_batch_size: ArrayIn, max_batch_size: ArrayIn,
                min_local_bsz: ArrayIn, max_local_bsz: ArrayIn, *,
                n_candidates: int = N_BATCH_CANDIDATES) -> tuple[ArrayOut, ArrayOut, ArrayOut]:
    """Goodput-maximising batch configuration for each (k, multi).

    Scores Pollux's geometric candidates (:func:`candidate_batches`); the default
    50 matches Pollux so results compare, a larger ``n_candidates`` is the finer
    search. Configurations with no valid candidate get goodput 0 and batch 0.

    Returns ``(goodput, local_bsz, accum_steps)``.

    Shapes: broadcast(all arguments) = B -> three arrays of shape B.
    """
    args = (n_gpus, multi_node, init_batch_size, max_batch_size, min_local_bsz, max_local_bsz)
    if not (isinstance(params, ThroughputParams) and all(np.ndim(a) == 0 for a in args)):
        return best_candidate(scored_candidates(params, *args, n_candidates=n_candidates), phi, init_batch_size)
    # one configuration (a job agent's choice, round after round until it refits): scored once
    key = tuple((np.asarray(a).dtype.str, np.asarray(a).tobytes()) for a in (params.as_array(), *args))
    scored, columns = _scored_remembered(key, params, args, int(n_candidates))
    if np.ndim(phi) or np.ndim(init_batch_size):
        return best_candidate(scored, phi, init_batch_size)
    # best_candidate's compiled loop on the remembered columns, without its broadcasting (the same call)
    good, local, steps = np.empty(1), np.empty(1, np.int64), np.empty(1, np.int64)
    choose_columns(*columns, np.array([phi], dtype=float), np.array([init_batch_size], dtype=float), good, local,
                   steps)
    return good.reshape(()), local.reshape(()), steps.reshape(())


#: Single configurations' scored candidates remembered per process (each about a kilobyte), oldest out first.
SCORED_ONE_CACHE_SIZE = 8192
_Scored = tuple[Any, Any, Any, Any, Any]
_SCORED_ONE: dict[tuple[Any, ...], tuple[_Scored, _Scored]] = {}


def _scored_remembered(key: tuple[tuple[str, bytes], ...], params: ThroughputParams, args: tuple[Any, ...],
                       n_candidates: int) -> tuple[_Scored, _Scored]:
    """:func:`scored_candidates` of one configuration, keyed by the types and bytes of its arguments, and the
    same arrays as the (C, 1) columns :func:`best_candidate` hands its compiled loop (the same key, the same
    arrays: they are read-only)."""
    full = (*key, n_candidates)
    hit = _SCORED_ONE.get(full)
    if hit is None:
        scored = scored_candidates(params, *args, n_candidates=n_candidates)
        c: list[Array] = [np.ascontiguousarray(np.asarray(a, dtype=t).reshape(-1, 1))
                          for a, t in zip(scored, (np.int64, np.int64, np.bool_, float, float))]
        columns: _Scored = (c[0], c[1], c[2], c[3], c[4])
        for a in (*scored, *columns):
            a.setflags(write=False)
        if len(_SCORED_ONE) >= SCORED_ONE_CACHE_SIZE:
            _SCORED_ONE.pop(next(iter(_SCORED_ONE)))  # the oldest entry
        hit = _SCORED_ONE[full] = (scored, columns)
    return hit


def scored_candidates(params: Any,  # Any: a ThroughputParams or its parameters as an array (see _param)
                      n_gpus: ArrayIn, multi_node: ArrayIn, init_batch_size: ArrayIn, max_batch_size: ArrayIn,
                      min_local_bsz: ArrayIn, max_local_bsz: ArrayIn, *,
                      n_candidates: int = N_BATCH_CANDIDATES) -> tuple[Array, Array, Array, Array, Array]:
    """The part of :func:`best_config` that does not depend on the gradient noise scale: the candidates'
    ``(micro-batch, accumulation steps, valid, total batch, throughput)``. Jobs of one application differ only
    in ``phi``, so a table of many jobs scores each application's candidates once (:func:`best_candidate` per
    job), with the same operations, hence the same numbers, as :func:`goodput`.

    Shapes: broadcast(all arguments) = B -> five arrays (n_candidates,) + B.
    """
    if int(n_candidates) < 2:
        raise ValidationError("n_candidates", f"must be >= 2, got {n_candidates!r}")
    micro, accum, valid = candidate_batches(
        n_gpus, init_batch_size, max_batch_size, min_local_bsz, max_local_bsz, int(n_candidates)
    )
    k = np.asarray(n_gpus)
    total = k * micro * (accum + 1)
    return micro, accum, valid, total, throughput(params, micro, accum, k, multi_node)


def best_candidate(scored: tuple[Array, Array, Array, Array, Array], phi: ArrayIn,
                   init_batch_size: ArrayIn) -> tuple[ArrayOut, ArrayOut, ArrayOut]:
    """:func:`best_config`'s answer from :func:`scored_candidates` and ``phi``.

    Shapes: scored (C,) + B each, phi broadcasting against B -> three arrays of shape broadcast(B, phi).

    Per candidate, the goodput is ``x * efficiency(total, phi, init_batch_size)`` where the candidate is valid,
    else 0; the answer is the first candidate of the largest (numpy's argmax: the first NaN if any), with
    micro-batch and accumulation steps 0 where that goodput is not above 0. One compiled loop carries this out
    (:mod:`goodopt.candidate_choice`, the same operations, hence the same numbers).
    """
    micro, accum, valid, total, x = scored
    C = np.shape(x)[0]
    shape = np.broadcast_shapes(*(np.shape(a)[1:] for a in scored), np.shape(phi), np.shape(init_batch_size))

    def columns(a: Any, dtype: Any) -> Array:  # Any: array-likes and a numpy dtype
        return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=dtype), (C, *shape)).reshape(C, -1))

    def flat(a: Any) -> Array:  # Any: an array-like
        return np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=float), shape).reshape(-1))

    M = int(np.prod(shape, dtype=np.int64))
    good, local, steps = np.empty(M), np.empty(M, np.int64), np.empty(M, np.int64)
    choose_columns(columns(micro, np.int64), columns(accum, np.int64), columns(valid, np.bool_),
                   columns(total, float), columns(x, float), flat(phi), flat(init_batch_size), good, local, steps)
    return good.reshape(shape), local.reshape(shape), steps.reshape(shape)


def best_candidate_table(scored: tuple[Array, Array, Array, Array, Array], phi: Array,
                         init_batch_size: float) -> tuple[Array, Array, Array]:
    """``best_candidate(scored, phi[:, None], init_batch_size)`` for one group's scored counts (the goodput
    tables' case), without broadcasting anything: one compiled call.

    Shapes: scored (C, 1, T) each (as :func:`scored_candidates` gives them for counts ``(1, T)``), phi (B,) ->
    three arrays (B, T).
    """
    micro, accum, valid, total, x = (a[:, 0, :] for a in scored)
    B, T = len(phi), x.shape[1]
    good, local, steps = np.empty((B, T)), np.empty((B, T), np.int64), np.empty((B, T), np.int64)
    choose_table(micro, accum, valid, total, x, np.asarray(phi, dtype=float), float(init_batch_size), good, local,
                 steps)
    return good, local, steps
