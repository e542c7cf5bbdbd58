"""The jobs x GPU-types throughput matrix Gavel's policies optimise over, and the names they go by."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arrays import ArrayIn
from ..errors import ShapeError, ValidationError
from ..records import Record

#: Gavel's policies (solved by :func:`goodopt.solvers.gavel.solve_gavel`).
POLICY_NAMES = ("max_min_fairness", "max_min_fairness_agnostic", "max_total_throughput", "min_cost",
                "finish_time_fairness", "min_makespan", "fifo", "max_min_fairness_packed",
                "max_total_throughput_packed", "finish_time_fairness_packed", "min_makespan_packed",
                "max_min_fairness_water_filling")


#: How an entity shares its weight among its jobs (hierarchical policies).
ENTITY_POLICIES = ("fairness", "fifo")
#: Entities as :func:`check_entities` gives them: sorted ``(name, (("policy", p), ("share", s), ("weight", w)))``.
EntitySpecs = tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]


#: The space-sharing variants: packed policy -> the policy it runs with the matrix's job pairs.
PACKED = {f"{base}_packed": base for base in ("max_min_fairness", "max_total_throughput", "finish_time_fairness",
                                               "min_makespan")}


@dataclass(frozen=True, eq=False)
class ThroughputMatrix:
    """Input of the time-fraction policies.

    Shapes (J jobs, K GPU types): ``throughput`` (J, K) steps/s at the job's
    scale factor; ``scale_factor``, ``weights``, ``remaining_steps``,
    ``elapsed_s`` (J,); ``capacity``, ``price_per_gpu_h`` (K,). For space
    sharing, ``pairs`` (P, 2) job indices of equal scale factor and
    ``pair_throughput`` (P, K, 2): each member's steps/s while the two share
    the GPUs (0 where they do not fit together). For hierarchical policies,
    ``entities`` (J,) gives each job's entity index, ``entity_weights`` (E,)
    the entities' weights and ``entity_policies`` (E,) how each shares its
    weight among its jobs (:data:`ENTITY_POLICIES`). ``isolated_s`` (J,) is
    finish-time fairness's denominator, each job's finish time in isolation;
    without it, ``elapsed_s + remaining_steps / equal-share throughput``
    (Gavel counts the isolated time of the work already done instead of the
    elapsed time: the simulator passes that under ``mechanism: gavel``).
    """

    job_names: tuple[str, ...]
    type_names: tuple[str, ...]
    throughput: np.ndarray
    scale_factor: np.ndarray
    capacity: np.ndarray
    # None: filled in by __post_init__ (weights 1, prices 1, arrival in job order)
    weights: np.ndarray = None  # type: ignore[assignment]
    price_per_gpu_h: np.ndarray = None  # type: ignore[assignment]
    remaining_steps: np.ndarray | None = None
    elapsed_s: np.ndarray | None = None
    arrival_order: np.ndarray = field(default=None)  # type: ignore[arg-type]
    pairs: np.ndarray | None = None
    pair_throughput: np.ndarray | None = None
    entities: np.ndarray | None = None
    entity_weights: np.ndarray | None = None
    entity_policies: tuple[str, ...] | None = None
    isolated_s: np.ndarray | None = None

    def __post_init__(self) -> None:
        J, K = len(self.job_names), len(self.type_names)
        t = np.asarray(self.throughput, dtype=float)
        if t.shape != (J, K):
            raise ShapeError(f"throughput must have shape (J, K) = ({J}, {K}), got {t.shape}")
        if np.any(~np.isfinite(t)) or np.any(t < 0):
            raise ValidationError("throughput", "must be finite and >= 0", "use 0 where a job cannot run")
        object.__setattr__(self, "throughput", t)
        s = np.asarray(self.scale_factor)
        if s.shape != (J,) or np.any(s < 1) or np.any(s != np.round(s)):
            raise ValidationError("scale_factor", "must be whole numbers >= 1, one per job")
        object.__setattr__(self, "scale_factor", s.astype(np.int64))
        cap = np.asarray(self.capacity)
        if cap.shape != (K,) or np.any(cap < 0):
            raise ValidationError("capacity", "must be GPU counts >= 0, one per GPU type")
        object.__setattr__(self, "capacity", cap.astype(np.int64))
        runnable = (t > 0) & (s[:, None] <= cap[None, :])
        bad = np.flatnonzero(~runnable.any(axis=1))
        if len(bad):
            raise ValidationError(f"throughput[{self.job_names[bad[0]]}]",
                                  "the job cannot run on any GPU type (zero throughput or scale factor > capacity)",
                                  "drop the job or give it a positive throughput on a type large enough")
        for name, default in (("weights", 1.0), ("price_per_gpu_h", 1.0)):
            n = J if name == "weights" else K
            v = np.full(n, default) if getattr(self, name) is None else np.asarray(getattr(self, name), dtype=float)
            if v.shape != (n,) or np.any(~np.isfinite(v)) or np.any(v <= 0):
                raise ValidationError(name, f"must be {n} finite numbers > 0")
            object.__setattr__(self, name, v)
        for name in ("remaining_steps", "elapsed_s", "isolated_s"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _per_job(name, getattr(self, name), J))
        order = np.arange(J) if self.arrival_order is None else np.asarray(self.arrival_order)
        object.__setattr__(self, "arrival_order", order)
        self._check_pairs(J, K)
        self._check_entities(J)

    def _check_entities(self, J: int) -> None:
        if self.entities is None:
            if self.entity_weights is not None or self.entity_policies is not None:
                raise ValidationError("entities", "entity weights and policies need each job's entity",
                                      "give entities (one index per job)")
            return
        e = np.asarray(self.entities)
        E = int(e.max()) + 1 if len(e) else 0
        if e.shape != (J,) or np.any(e < 0) or np.any(e != np.round(e)):
            raise ValidationError("entities", f"must be {J} entity indices >= 0, one per job")
        w = np.ones(E) if self.entity_weights is None else np.asarray(self.entity_weights, dtype=float)
        if w.shape[0] < E or np.any(~np.isfinite(w)) or np.any(w <= 0):
            raise ValidationError("entity_weights", f"must be at least {E} finite numbers > 0")
        pol = tuple(self.entity_policies or ("fairness",) * len(w))
        bad = [p for p in pol if p not in ENTITY_POLICIES]
        if len(pol) != len(w) or bad:
            raise ValidationError("entity_policies", f"must be one of {ENTITY_POLICIES} per entity, got {pol!r}",
                                  "e.g. ('fairness', 'fifo')")
        object.__setattr__(self, "entities", e.astype(np.int64))
        object.__setattr__(self, "entity_weights", w)
        object.__setattr__(self, "entity_policies", pol)

    def _check_pairs(self, J: int, K: int) -> None:
        if (self.pairs is None) != (self.pair_throughput is None):
            raise ValidationError("pairs", "pairs and pair_throughput go together", "give both or neither")
        if self.pairs is None:
            return
        q = np.asarray(self.pairs).reshape(-1, 2)
        t = np.asarray(self.pair_throughput, dtype=float)
        if np.any(q < 0) or np.any(q >= J) or np.any(q[:, 0] == q[:, 1]) or np.any(q != np.round(q)):
            raise ValidationError("pairs", f"must be pairs of two different job indices in [0, {J})")
        if np.any(self.scale_factor[q[:, 0]] != self.scale_factor[q[:, 1]]):
            raise ValidationError("pairs", "only jobs with the same scale factor share GPUs")
        if t.shape != (len(q), K, 2) or np.any(~np.isfinite(t)) or np.any(t < 0):
            raise ValidationError("pair_throughput", f"must be finite numbers >= 0 of shape ({len(q)}, {K}, 2)")
        object.__setattr__(self, "pairs", q.astype(np.int64))
        object.__setattr__(self, "pair_throughput", t)

    def with_isolated_s(self, isolated_s: ArrayIn) -> ThroughputMatrix:
        """This matrix with each job's finish time in isolation ``isolated_s`` (J,), the one field checked again
        (a simulator sets it on every allocation). Shapes: (J,)."""
        out = copy.copy(self)
        object.__setattr__(out, "isolated_s", _per_job("isolated_s", isolated_s, self.n_jobs))
        return out

    @property
    def pair_runnable(self) -> np.ndarray:
        """Where a pair may share a type: both members run alone there and together. Shapes: (P, K)."""
        if self.pairs is None or self.pair_throughput is None:
            return np.zeros((0, self.n_types), dtype=bool)
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        return (self.pair_throughput > 0).all(axis=2) & self.runnable[a] & self.runnable[b]

    @property
    def n_jobs(self) -> int:
        return len(self.job_names)

    @property
    def n_types(self) -> int:
        return len(self.type_names)

    @property
    def runnable(self) -> np.ndarray:
        """Where a job may run: positive throughput and enough GPUs of the type. Shapes: (J, K)."""
        return (self.throughput > 0) & (self.scale_factor[:, None] <= self.capacity[None, :])

    def equal_share(self) -> np.ndarray:
        """Gavel's ``X^equal``: each job's fair fraction of time, spread over its usable types by size.

        The fair fraction is ``f = min(1, N / sum_j s_j)`` with ``N`` the
        cluster's GPUs; job ``j`` gets ``f * n_k / N_j`` of its time on usable
        type ``k`` (``N_j`` = GPUs of its usable types). It satisfies the
        capacity rows because ``sum_j s_j f n_k / N_j <= n_k`` whenever
        every job can use every type; otherwise it is scaled down until it
        does. Shapes: -> (J, K).
        """
        f = min(1.0, self.capacity.sum() / float(self.scale_factor.sum()))
        return spread(np.full(self.n_jobs, f), self.runnable, self.capacity, self.scale_factor)

    def equal_share_throughput(self) -> np.ndarray:
        """Throughput under :meth:`equal_share`. Shapes: -> (J,)."""
        return (self.throughput * self.equal_share()).sum(axis=1)

    def effective_throughput(self, x: ArrayIn, y: ArrayIn | None = None) -> np.ndarray:
        """``sum_k X_jk T_jk`` plus, with pair fractions ``y``, each job's pair terms. Shapes: (J, K), (P, K)
        -> (J,)."""
        out = (np.asarray(x, dtype=float) * self.throughput).sum(axis=1)
        if y is not None and self.pairs is not None and self.pair_throughput is not None and len(self.pairs):
            y = np.asarray(y, dtype=float)
            for i in range(2):
                np.add.at(out, self.pairs[:, i], (y * self.pair_throughput[:, :, i]).sum(axis=1))
        return out


def _per_job(name: str, value: ArrayIn, J: int) -> np.ndarray:
    """``value`` as one finite number per job, >= 0 (> 0 for ``isolated_s``), or an error naming ``name``."""
    v = np.asarray(value, dtype=float)
    positive = name == "isolated_s"
    if v.shape != (J,) or np.any(~np.isfinite(v)) or np.any(v < 0) or (positive and np.any(v <= 0)):
        raise ValidationError(name, f"must be {J} finite numbers {'> 0' if positive else '>= 0'}")
    return v


def check_entities(value: object) -> EntitySpecs:
    """Entities (name -> {weight, policy: fairness | fifo, share}) as sorted ``(name, (("policy", p),
    ("share", s), ("weight", w)))`` pairs, each field checked (weight and share default to 1, policy to
    fairness; ``share`` is how often a generated job belongs to the entity)."""
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)) and all(isinstance(i, (list, tuple)) and len(i) == 2 for i in value):
        items = list(value)
    else:
        raise ValidationError("entities", f"must map entity -> {{weight, policy, share}}, got {value!r}",
                              "e.g. {alice: {weight: 2}, bob: {policy: fifo}}")
    out = []
    for name, spec in items:
        if spec is not None and not isinstance(spec, Mapping):
            raise ValidationError(f"entities.{name}", f"must be a mapping {{weight, policy, share}}, got {spec!r}",
                                  "e.g. {weight: 2, policy: fairness}")
        spec = dict(spec or {})
        unknown = sorted(set(spec) - {"weight", "policy", "share"})
        if unknown:
            raise ValidationError(f"entities.{name}.{unknown[0]}", "not an entity field",
                                  "an entity has weight, policy (fairness or fifo) and share")
        numbers = {}
        for key in ("weight", "share"):
            v = spec.get(key, 1.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ValidationError(f"entities.{name}.{key}", f"must be a number > 0, got {v!r}")
            numbers[key] = float(v)
        pol = spec.get("policy", "fairness")
        if pol not in ENTITY_POLICIES:
            raise ValidationError(f"entities.{name}.policy", f"must be one of {ENTITY_POLICIES}, got {pol!r}")
        out.append((str(name), (("policy", pol), ("share", numbers["share"]), ("weight", numbers["weight"]))))
    return tuple(sorted(out))


def entity_fields(entities: EntitySpecs, jobs: Iterable[Any]) -> Record:  # Any: jobs of any kind with an entity attribute
    """The :class:`ThroughputMatrix` entity fields for ``jobs`` (each with ``.entity``) under
    :func:`check_entities` output; ``{}`` without entities. A job of an unnamed entity is refused."""
    if not entities:
        return {}
    names = [name for name, _ in entities]
    spec = {name: dict(s) for name, s in entities}
    missing = sorted({j.entity for j in jobs} - set(names))
    if missing:
        raise ValidationError("entities", f"jobs belong to entity {missing[0]!r}, which has no weight",
                              f"name it under entities (known: {names})")
    return {"entities": np.array([names.index(j.entity) for j in jobs], dtype=np.int64),
            "entity_weights": np.array([spec[n]["weight"] for n in names]),
            "entity_policies": tuple(spec[n]["policy"] for n in names)}


def useful_pairs(throughput: ArrayIn, pair_throughput: ArrayIn) -> np.ndarray:
    """Which pair columns can help: sharing beats time-sharing the GPUs between the two alone, i.e.
    ``T^pair_a / T_a + T^pair_b / T_b > 1`` on the type. A column where the sum is <= 1 and neither member
    runs faster together than alone is matched by giving each member that share of time alone, on no more
    GPU-time, so dropping it leaves every policy's optimum unchanged. Shapes: throughput (P, K, 2) of the
    members alone, pair_throughput (P, K, 2) -> (P, K) bool."""
    alone = np.asarray(throughput, dtype=float)
    both = np.asarray(pair_throughput, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(alone > 0, both / np.where(alone > 0, alone, 1.0), 0.0)
    return (both > 0).all(axis=2) & ((ratio.sum(axis=2) > 1 + 1e-12) | (ratio > 1 + 1e-12).any(axis=2))


def spread(total: np.ndarray, usable: np.ndarray, capacity: ArrayIn, scale_factor: ArrayIn) -> np.ndarray:
    """Each job's time fraction ``total`` spread over its usable types in proportion to their GPUs, scaled
    down where a type would be over-full. Shapes: total (J,), usable (J, K), capacity (K,) -> (J, K)."""
    share = usable * np.asarray(capacity, dtype=float)[None, :]
    x = total[:, None] * share / np.maximum(share.sum(axis=1, keepdims=True), 1e-300)
    load = (np.asarray(scale_factor)[:, None] * x).sum(axis=0)
    return x * np.where(load > capacity, capacity / np.maximum(load, 1e-300), 1.0).min()
