"""Jobs x GPU-types throughput data: Gavel's input, its published file, and conversions.

:class:`ThroughputMatrix` is what Gavel's policies optimise over: for each job
its scale factor (GPUs it runs on), its throughput on every GPU type at that
scale (steps/s; 0 = cannot run there), its priority weight and, for the
finish-time and makespan policies, its remaining steps and elapsed time.
Per-type capacities (GPUs) and prices complete it.

Sources:

* :func:`read_gavel_throughputs` — Gavel's ``simulation_throughputs.json``
  (26 job types x {k80, p100, v100} x scale factors 1, 2, 4, 8, consolidated
  and unconsolidated, plus space-sharing pairs), as :class:`GavelThroughputs`;
  :meth:`GavelThroughputs.profiles` turns its job types into throughput-only
  profiles (:class:`~goodopt.profiles.ThroughputProfile`) that every goodopt
  method can schedule;
* :func:`matrix_from_problem` — any :class:`~goodopt.problem.AllocationProblem`
  (each job at a chosen GPU count, packed on the fewest nodes).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import ShapeError, TraceError, ValidationError
from .profiles import ThroughputProfile

#: Gavel's policies (solved by :func:`goodopt.solvers.gavel.solve_gavel`).
POLICY_NAMES = ("max_min_fairness", "max_min_fairness_agnostic", "max_total_throughput", "min_cost",
                "finish_time_fairness", "min_makespan", "fifo", "max_min_fairness_packed",
                "max_total_throughput_packed", "finish_time_fairness_packed", "min_makespan_packed",
                "max_min_fairness_water_filling")
#: How an entity shares its weight among its jobs (hierarchical policies).
ENTITY_POLICIES = ("fairness", "fifo")
#: The space-sharing variants: packed policy -> the policy it runs with the matrix's job pairs.
PACKED = {f"{base}_packed": base for base in ("max_min_fairness", "max_total_throughput", "finish_time_fairness",
                                               "min_makespan")}
#: Cloud on-demand prices per GPU-hour (USD) Gavel used for its cost policies.
GAVEL_PRICES_PER_GPU_H = {"k80": 0.45, "p100": 1.46, "v100": 2.48}


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
    weights: np.ndarray | None = None
    price_per_gpu_h: np.ndarray | None = None
    remaining_steps: np.ndarray | None = None
    elapsed_s: np.ndarray | None = None
    arrival_order: np.ndarray | None = field(default=None)
    pairs: np.ndarray | None = None
    pair_throughput: np.ndarray | None = None
    entities: np.ndarray | None = None
    entity_weights: np.ndarray | None = None
    entity_policies: tuple[str, ...] | None = None
    isolated_s: np.ndarray | None = None

    def __post_init__(self):
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
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v, dtype=float)
                if v.shape != (J,) or np.any(~np.isfinite(v)) or np.any(v < 0) \
                        or (name == "isolated_s" and np.any(v <= 0)):
                    raise ValidationError(name, f"must be {J} finite numbers {'> 0' if name == 'isolated_s' else '>= 0'}")
                object.__setattr__(self, name, v)
        order = np.arange(J) if self.arrival_order is None else np.asarray(self.arrival_order)
        object.__setattr__(self, "arrival_order", order)
        self._check_pairs(J, K)
        self._check_entities(J)

    def _check_entities(self, J):
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

    def _check_pairs(self, J, K):
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

    @property
    def pair_runnable(self) -> np.ndarray:
        """Where a pair may share a type: both members run alone there and together. Shapes: (P, K)."""
        if self.pairs is None:
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

    def effective_throughput(self, x, y=None) -> np.ndarray:
        """``sum_k X_jk T_jk`` plus, with pair fractions ``y``, each job's pair terms. Shapes: (J, K), (P, K)
        -> (J,)."""
        out = (np.asarray(x, dtype=float) * self.throughput).sum(axis=1)
        if y is not None and self.pairs is not None and len(self.pairs):
            y = np.asarray(y, dtype=float)
            for i in range(2):
                np.add.at(out, self.pairs[:, i], (y * self.pair_throughput[:, :, i]).sum(axis=1))
        return out


def check_entities(value) -> tuple:
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


def entity_fields(entities: tuple, jobs) -> dict:
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


def pairs_from_problem(problem, matrix: ThroughputMatrix) -> dict:
    """The ``pairs`` and ``pair_throughput`` of ``matrix`` (built from ``problem``): one-GPU jobs whose
    applications were measured sharing a GPU (:attr:`~goodopt.problem.AllocationProblem.app_pairs`), where
    sharing beats taking turns; the measured relative speeds times each member's throughput alone.
    Shapes: -> pairs (P, 2), pair_throughput (P, K, 2)."""
    apps = sorted({a for pair in problem.app_pairs for a in pair})
    if not apps:
        raise ValidationError("pairs", "the scenario's applications have no measured pair throughputs (space "
                              "sharing)", "use throughput-only profiles with pairs (e.g. the gavel-default "
                              "scenario), or the policy without _packed")
    index = {a: i for i, a in enumerate(apps)}
    K = matrix.n_types
    rel = np.zeros((len(apps), len(apps), K, 2))
    for (a, b), r in problem.app_pairs.items():
        rel[index[a], index[b]] = r
        if not rel[index[b], index[a]].any():
            rel[index[b], index[a]] = r[:, ::-1]
    ones = np.flatnonzero((matrix.scale_factor == 1) & np.isin(problem.applications, apps))
    i, j = np.triu_indices(len(ones), k=1)
    i, j = ones[i], ones[j]
    app = np.array([index.get(a, 0) for a in problem.applications])
    alone = np.stack([matrix.throughput[i], matrix.throughput[j]], axis=2)  # (P, K, 2)
    both = rel[app[i], app[j]] * alone
    both[~useful_pairs(alone, both)] = 0.0
    keep = both.any(axis=(1, 2))
    return {"pairs": np.stack([i[keep], j[keep]], axis=1).astype(np.int64), "pair_throughput": both[keep]}


def useful_pairs(throughput, pair_throughput) -> np.ndarray:
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


def spread(total, usable, capacity, scale_factor) -> np.ndarray:
    """Each job's time fraction ``total`` spread over its usable types in proportion to their GPUs, scaled
    down where a type would be over-full. Shapes: total (J,), usable (J, K), capacity (K,) -> (J, K)."""
    share = usable * np.asarray(capacity, dtype=float)[None, :]
    x = total[:, None] * share / np.maximum(share.sum(axis=1, keepdims=True), 1e-300)
    load = (np.asarray(scale_factor)[:, None] * x).sum(axis=0)
    return x * np.where(load > capacity, capacity / np.maximum(load, 1e-300), 1.0).min()


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

    single: dict
    pairs: dict
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
            pairs = {}
            for (g, a, b), both in self.pairs.items():
                if a == jt:
                    pairs.setdefault(g, {})[job_type_slug(b)] = both
            out[job_type_slug(jt)] = ThroughputProfile(
                name=job_type_slug(jt), batch_size=int(m["bs"]) if m else 1, rates=rates,
                description=f"{jt} (Gavel's simulation_throughputs.json)", pairs=pairs)
        return out


def read_gavel_throughputs(path) -> GavelThroughputs:
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


def _rate(path, where: str, value) -> float:
    """A measured throughput: a finite number >= 0 (0: the job does not run there)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
        raise TraceError(f"{path}: {where}: a throughput must be a finite number >= 0, got {value!r}")
    return float(value)


def _parse_key(path, key):
    m = _KEY.match(key)
    if m is None:
        try:  # tolerate other spacing of the tuple
            model, scale = ast.literal_eval(key)
            return str(model), int(scale)
        except (ValueError, SyntaxError, TypeError):
            raise TraceError(f"{path}: cannot read job key {key!r} (expected \"('<model>', <scale>)\")") from None
    return m["model"], int(m["scale"])


# -------------------------------------------------------------- from a problem
def matrix_from_problem(problem, n_gpus=None, *, price_per_gpu_h=None) -> ThroughputMatrix:
    """Throughput matrix of an allocation problem, each job at ``n_gpus`` GPUs.

    ``n_gpus`` (J,) defaults to each job's ``min_gpus``; the throughput on a
    type is the goodput-table entry for that count on the fewest nodes of the
    type (0 where the job cannot run). Shapes: n_gpus (J,) -> matrix (J, G).
    """
    pr = problem
    k = np.asarray(pr.min_gpus if n_gpus is None else n_gpus, dtype=np.int64)
    if k.shape != (pr.n_jobs,) or np.any(k < 1):
        raise ValidationError("n_gpus", f"must be {pr.n_jobs} GPU counts >= 1")
    cap = np.bincount(pr.node_type, weights=pr.node_capacity, minlength=pr.n_gpu_types).astype(np.int64)
    largest = np.array([pr.node_capacity[pr.node_type == g].max() for g in range(pr.n_gpu_types)])
    kc = np.minimum(k, pr.max_k)
    multi = (k[:, None] > largest[None, :]).astype(int)
    t = pr.goodput_table[np.arange(pr.n_jobs)[:, None], np.arange(pr.n_gpu_types)[None, :], kc[:, None], multi]
    t = np.where(k[:, None] > pr.max_k, 0.0, t)
    prices = price_per_gpu_h
    if prices is None:
        prices = [GAVEL_PRICES_PER_GPU_H.get(name, 1.0) for name in pr.type_names]
    return ThroughputMatrix(job_names=pr.job_names, type_names=pr.type_names, throughput=t, scale_factor=k,
                            capacity=cap, weights=pr.weights, price_per_gpu_h=np.asarray(prices, dtype=float))


#: Gavel's distribution of job scale factors in its generated workloads (GPUs: probability).
GAVEL_SCALE_FACTORS = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}
#: Gavel's default simulated cluster: 36 GPUs of each type, here 9 servers of 4 GPUs each.
GAVEL_CLUSTER = (("v100", 4, 9), ("p100", 4, 9), ("k80", 4, 9))


def draw_job_type(throughputs: GavelThroughputs, rng: np.random.Generator,
                  scale_factors=None) -> tuple[str, int]:
    """A job type drawn uniformly and its scale factor (numpy's draws; Gavel's own sequence is
    :mod:`goodopt.gavel_generator`).

    Scale factors follow ``scale_factors`` (default :data:`GAVEL_SCALE_FACTORS`), restricted to those the job
    type was measured at (a type measured at one GPU only always gets 1).
    """
    jt = throughputs.job_types[int(rng.integers(len(throughputs.job_types)))]
    dist = dict(scale_factors or GAVEL_SCALE_FACTORS)
    sizes = np.array(list(dist))
    probs = np.array(list(dist.values()), dtype=float)
    ok = np.isin(sizes, throughputs.scale_factors(jt))
    return jt, int(rng.choice(sizes[ok], p=probs[ok] / probs[ok].sum()))


def gavel_jobs(throughputs: GavelThroughputs, seed: int, n_jobs: int):
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


#: Gavel's generator's job durations (seconds on the reference GPU type): ``60 * 10**U(lo, hi)`` with the
#: first range's probability, else the second range.
GAVEL_DURATIONS = ((0.8, (1.5, 3.0)), (0.2, (3.0, 4.0)))
#: The GPU type whose throughput turns a drawn duration into a number of steps in Gavel's generator.
GAVEL_REFERENCE_TYPE = "v100"


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


def assign_entities(jobs, shares: dict, rng: np.random.Generator) -> tuple[RigidJob, ...]:
    """Each job given an entity drawn with probability ``shares[entity]`` (normalised)."""
    names = list(shares)
    p = np.array([float(shares[n]) for n in names])
    if not names or np.any(~np.isfinite(p)) or np.any(p <= 0):
        raise ValidationError("entities", f"shares must be numbers > 0, got {shares!r}", "e.g. {A: 1, B: 2}")
    picks = rng.choice(len(names), size=len(jobs), p=p / p.sum())
    return tuple(dataclasses.replace(j, entity=names[int(i)]) for j, i in zip(jobs, picks))


def gavel_trace(throughputs: GavelThroughputs, rate_per_h: float, n_jobs: int,
                rng: np.random.Generator, scale_factors=None) -> tuple[RigidJob, ...]:
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


def gavel_scenario(throughputs: GavelThroughputs, seed: int = 0, n_jobs: int = 60, *, cluster_groups=GAVEL_CLUSTER,
                   max_age_s: float = 7200.0):
    """A scheduling round on Gavel's default cluster with :func:`gavel_jobs` (all waiting, rigid sizes).

    Returns the :class:`~goodopt.scenario.Scenario`; its profiles are the file's job types.
    """
    from .cluster import Cluster, NodeGroup
    from .scenario import Job, Scenario

    profiles = throughputs.profiles()
    rng = np.random.default_rng(seed + 1)
    jobs, used = [], {}
    for name, slug, s in gavel_jobs(throughputs, seed, n_jobs):
        jobs.append(Job(name=name, application=slug, age_s=float(np.round(rng.uniform(0, max_age_s))),
                        n_reallocs=0, min_gpus=s, max_gpus=s))
        used[slug] = profiles[slug]
    cluster = Cluster(tuple(NodeGroup(t, g, n) for t, g, n in cluster_groups))
    desc = (f"Gavel's default cluster (36 V100 + 36 P100 + 36 K80 as 9 servers of 4 each), {n_jobs} rigid "
            f"throughput-only jobs drawn like Gavel's generator (seed {seed})")
    return Scenario(cluster=cluster, jobs=tuple(jobs), profiles=used, name="gavel-default", description=desc)
