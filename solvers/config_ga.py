"""The GA over configurations: the ``ga`` method's engine for large clusters (``engine="configs"``).

The allocation GA works on dense (population x jobs x nodes) arrays; at 2048
GPUs (819 jobs, 256 nodes) one population of those is 170 MB and each
generation's repair touches all of it. This engine keeps Pollux's scheme (a
population of feasible allocations, crossover, mutation, repair, survival of
the best) but changes what an individual is:

* **genome**: one configuration per job (an index into
  :func:`~goodopt.formulations.configs.enumerate_configs`, or -1 for none),
  with the placement that realises it (its (J, N) rows, its free GPUs per
  node and its multi-node jobs per node);
* **decoding is incremental**: a child starts as a copy of its first parent
  and changes only a few jobs; each change is placed into the free GPUs plus
  the job's own (:func:`~goodopt.placement.place_one`: best fit
  on one node, or nodes no other multi-node job uses) and is dropped when it
  does not fit, so every individual is feasible at every step (the repair);
* **scoring is incremental**: a placed configuration realises its speedup
  exactly, so an individual's score is the sum of its jobs' ranking terms
  (:func:`~goodopt.formulations.scaled_objective.rank_utility`), updated per changed
  job; the final population is re-scored by the evaluator and its best
  member by true fitness is the answer.

Operators (all randomness from the run's ``numpy.random.Generator``): binary
tournaments on the score; crossover copies up to :data:`CROSS_JOBS` of the
second parent's differing job choices into the first (with probability
``crossover_prob``); mutation changes ``1 + Geometric`` jobs, each by one step
along its (type, spread) frontier (more or fewer GPUs), to another of its
configurations, or to idle; survival keeps the best ``pop_size`` of parents and
children. Seeds (the current allocation, warm starts such as LP rounding) are
mapped to configurations first (rows of pruned shapes shrink to the
configuration they dominate).

At ``p = +-inf`` the ranking terms are those of ``p = +-8`` (as in greedy);
the evaluator's choice among the final population uses the true fitness.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from goodopt.formulations.configs import ConfigSet, enumerate_configs
from goodopt.formulations.scaled_objective import rank_utility

from goodopt.arrays import Array, ArrayIn
from goodopt.evaluator import Evaluator
from goodopt.placement import move_job
from goodopt.problem import AllocationProblem

from .heuristics import canonicalize

#: At most this many of the second parent's differing job choices enter a child.
CROSS_JOBS = 8
#: The arrays a member owns (the rest is shared by the population).
_MEMBER_FIELDS = ("chosen", "alloc", "free", "multi_count", "score")
#: Mean number of job changes per mutation, beyond the first.
EXTRA_CHANGES = 1.0
#: Probability that a child's mutation is a ruin and recreate (:func:`ruin_recreate`).
RUIN_PROB = 0.5
#: A recreated job tries at most this many of its best configurations.
RECREATE_TRIES = 8
#: Growth steps after a recreation.
RECREATE_STEPS = 16


class ConfigPopulation:
    """Members' configurations and placements, changed one job at a time.

    Shapes (P members, J jobs, N nodes): ``chosen`` (P, J) int; ``alloc`` (P, J, N) of the smallest integer
    type that holds a node's GPUs; ``free`` and
    ``multi_count`` (P, N) int; ``score`` (P,) float.
    """

    def __init__(self, problem: AllocationProblem, configs: ConfigSet, chosen: ArrayIn, alloc: ArrayIn) -> None:
        pr, cs = problem, configs
        self.pr, self.cs = pr, cs
        self.chosen = np.asarray(chosen, dtype=np.int64)
        self.alloc = np.asarray(alloc, dtype=_count_dtype(int(pr.node_capacity.max(initial=0))))  # the bulk
        self.free = pr.node_capacity[None, :] - self.alloc.sum(axis=1, dtype=np.int64)
        multi = (self.alloc > 0).sum(axis=2) > 1  # (P, J)
        self.multi_count = np.einsum("pj,pjn->pn", multi.astype(np.int64), (self.alloc > 0).astype(np.int64))
        self.u_cfg = rank_utility(pr, cs.speedup, cs.job)  # (C,)
        self.u_idle = rank_utility(pr, np.zeros(pr.n_jobs), np.arange(pr.n_jobs))  # (J,)
        self.score = self._terms(self.chosen).sum(axis=1)
        self.by_value = np.lexsort((-self.u_cfg, cs.job))  # each job's configurations, best term first
        self.up = step_up(cs)
        self._hash = np.random.default_rng(0).integers(1, 2**62, size=pr.n_jobs)  # genotype fingerprints

    def _terms(self, chosen: Array) -> Array:
        if not len(self.u_cfg):  # no job has a configuration: every job idles
            return np.broadcast_to(self.u_idle[None, :], chosen.shape)
        return np.where(chosen >= 0, self.u_cfg[np.maximum(chosen, 0)], self.u_idle[None, :])

    def take(self, idx: ArrayIn) -> ConfigPopulation:
        """The members ``idx`` (copies), in that order."""
        out = object.__new__(ConfigPopulation)
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k not in _MEMBER_FIELDS})
        for name in _MEMBER_FIELDS:
            setattr(out, name, getattr(self, name)[idx].copy())
        return out

    def best_of(self, other: ConfigPopulation, n: int) -> ConfigPopulation:
        """The ``n`` best distinct members of ``self`` and ``other`` by score (``self``'s first on ties),
        best first; repeated genotypes only fill what distinct ones leave."""
        merged = np.concatenate([self.score, other.score])
        with np.errstate(over="ignore"):  # fingerprints wrap around; equal genotypes still match
            prints = np.concatenate([self.chosen, other.chosen]) @ self._hash
        _, first = np.unique(prints, return_index=True)
        repeat = np.ones(len(merged), bool)
        repeat[first] = False  # a genotype seen before goes behind every distinct one
        order = np.lexsort((-merged, repeat))[:n]
        mine = order < len(self.score)
        out = object.__new__(ConfigPopulation)
        out.__dict__.update({k: v for k, v in self.__dict__.items() if k not in _MEMBER_FIELDS})
        for name in _MEMBER_FIELDS:
            a, b = getattr(self, name), getattr(other, name)
            arr = np.empty((len(order), *a.shape[1:]), dtype=a.dtype)
            arr[mine] = a[order[mine]]
            arr[~mine] = b[order[~mine] - len(self.score)]
            setattr(out, name, arr)
        return out

    def try_set(self, m: int, j: int, c: int) -> bool:
        """Move job ``j`` of member ``m`` to configuration ``c`` (-1: none) if it can be placed."""
        moved = move_job(self.pr, self.cs, j, c, self.alloc[m, j], self.free[m], self.multi_count[m])
        if moved is None:
            return False
        self.alloc[m, j], self.free[m], self.multi_count[m] = moved
        before = self.chosen[m, j]
        self.score[m] += (self.u_cfg[c] if c >= 0 else self.u_idle[j]) - (
            self.u_cfg[before] if before >= 0 else self.u_idle[j])
        self.chosen[m, j] = c
        return True


def seed_population(problem: AllocationProblem, configs: ConfigSet, seeds: Iterable[Array]) -> ConfigPopulation:
    """Members from feasible (J, N) allocations: the current one first, then ``seeds``, each mapped to
    configurations (rows of pruned shapes shrink to the configuration they dominate)."""
    pr = problem
    rows: list[Array] = []
    chosen: list[Array] = []
    for a in [pr.current, *seeds]:
        a2, ch = canonicalize(pr, configs, a)
        a2[ch < 0] = 0
        rows.append(a2)
        chosen.append(ch)
    return ConfigPopulation(pr, configs, np.stack(chosen), np.stack(rows))


def _neighbour(cs: ConfigSet, j: int, c: int, rng: np.random.Generator) -> int:
    """A configuration of job ``j`` near ``c``: one frontier step up or down in its (type, spread) class,
    another of its configurations, or none."""
    lo, hi = int(cs.job_start[j]), int(cs.job_start[j + 1])
    if hi == lo:
        return -1
    r = rng.random()
    if c >= 0 and not cs.keep[c] and r < 0.6:
        sl = np.arange(lo, hi)
        same = sl[(cs.gpu_type[sl] == cs.gpu_type[c]) & (cs.multi[sl] == cs.multi[c]) & ~cs.keep[sl]]
        pos = int(np.searchsorted(cs.n_gpus[same], cs.n_gpus[c]))
        step = pos + (1 if rng.random() < 0.6 else -1)
        if 0 <= step < len(same):
            return int(same[step])
        return -1 if step < 0 else c
    if r < 0.9:
        return int(rng.integers(lo, hi))
    return -1


def ruin_recreate(pop: ConfigPopulation, m: int, rng: np.random.Generator) -> None:
    """Empty a few jobs of member ``m`` -- every job on a random node and on a second node of its type
    (half the time: it frees whole nodes, which single-node configurations need) or a random handful --
    and fill them again as greedy would: each first in its configuration of best term per GPU that fits,
    then, while GPUs are left, the job whose next frontier step gains most per extra GPU grows by it (at
    most :data:`RECREATE_STEPS` steps)."""
    pr, cs = pop.pr, pop.cs
    if rng.random() < 0.5:
        n = int(rng.integers(pr.n_nodes))
        same = np.flatnonzero(pr.node_type == pr.node_type[n])
        nodes = [n, int(same[rng.integers(len(same))])]
        ruined = np.flatnonzero((pop.alloc[m][:, nodes] > 0).any(axis=1))
    else:
        ruined = rng.choice(pr.n_jobs, size=min(pr.n_jobs, 1 + int(rng.poisson(3.0))), replace=False)
    for j in ruined:
        pop.try_set(m, int(j), -1)
    for j in rng.permutation(ruined):
        lo, hi = int(cs.job_start[j]), int(cs.job_start[j + 1])
        if hi == lo:
            continue
        c = np.arange(lo, hi)
        order = c[np.argsort(-(pop.u_cfg[c] - pop.u_idle[j]) / cs.n_gpus[c], kind="stable")]
        for ci in order[:RECREATE_TRIES]:
            if pop.try_set(m, int(j), int(ci)):
                break
    live = [int(j) for j in ruined if pop.chosen[m, j] >= 0 and not cs.keep[pop.chosen[m, j]]]
    for _ in range(RECREATE_STEPS):
        best: tuple[int, int] | None = None
        best_gain = 0.0
        for job in live:
            nxt = int(pop.up[pop.chosen[m, job]])
            if nxt >= 0:
                c0 = int(pop.chosen[m, job])
                gain = (pop.u_cfg[nxt] - pop.u_cfg[c0]) / max(int(cs.n_gpus[nxt] - cs.n_gpus[c0]), 1)
                if gain > best_gain:
                    best, best_gain = (job, nxt), gain
        if best is None:
            break
        if not pop.try_set(m, best[0], best[1]):
            live.remove(best[0])


def step_up(cs: ConfigSet) -> Array:
    """Per configuration, the next larger move configuration of its job in its (type, spread) class, or -1
    (keep configurations have none). Shapes: -> (C,)."""
    up = np.full(cs.n_configs, -1, dtype=np.int64)
    order = np.lexsort((cs.n_gpus, cs.multi, cs.gpu_type, cs.keep, cs.job))
    a, b = order[:-1], order[1:]
    same = (cs.job[a] == cs.job[b]) & (cs.gpu_type[a] == cs.gpu_type[b]) & (cs.multi[a] == cs.multi[b]) \
        & ~cs.keep[a] & ~cs.keep[b] & (cs.n_gpus[b] > cs.n_gpus[a])
    up[a[same]] = b[same]
    return up


def _count_dtype(most: int) -> type[np.integer[Any]]:
    """The smallest integer type that holds ``most``."""
    for t in (np.int8, np.int16, np.int32):
        if most <= np.iinfo(t).max:
            return t
    return np.int64


def make_children(pop: ConfigPopulation, parents: Array, mates: Array, cross: Array,
                  rng: np.random.Generator) -> ConfigPopulation:
    """Children of ``parents``: copies, then crossover with ``mates`` where ``cross``, then mutation (ruin
    and recreate, or a few single-job changes)."""
    kids = pop.take(parents)
    J = pop.pr.n_jobs
    for m in range(len(parents)):
        if cross[m]:
            diff = np.flatnonzero(kids.chosen[m] != pop.chosen[mates[m]])
            if len(diff):
                for j in rng.permutation(diff)[:CROSS_JOBS]:
                    kids.try_set(m, int(j), int(pop.chosen[mates[m], j]))
        if rng.random() < RUIN_PROB:
            ruin_recreate(kids, m, rng)
            continue
        for _ in range(1 + int(rng.poisson(EXTRA_CHANGES))):
            j = int(rng.integers(J))
            kids.try_set(m, j, _neighbour(pop.cs, j, int(kids.chosen[m, j]), rng))
    return kids


def evolve(problem: AllocationProblem, evaluator: Evaluator, seeds: Iterable[Array], *, pop_size: int, n_gen: int,
           crossover_prob: float, rng: np.random.Generator, deadline: float | None = None, stall: int | None = None,
           on_generation: Callable[[int, ConfigPopulation], None] | None = None
           ) -> tuple[Array | None, ConfigPopulation, int, bool]:
    """Run the GA over configurations. Returns ``(best allocation or None, final population, generations,
    stopped by the deadline)``. Shapes: seeds list of (J, N)."""
    cs = enumerate_configs(problem)
    pop = seed_population(problem, cs, seeds)
    start = _best(pop, evaluator)  # kept aside: at p = +-inf the ranking terms are p = +-8's, not the fitness
    if problem.n_jobs == 0 or cs.n_configs == 0:
        return start, pop, 0, False
    P = pop_size
    base = np.arange(max(P - len(pop.score), 0)) % len(pop.score)  # mutated copies of the seeds fill it up
    pop = pop.best_of(make_children(pop, base, base, np.zeros(len(base), bool), rng), P)
    gen, since, timed_out = 0, 0, False
    while gen < n_gen and (stall is None or since < stall):
        if deadline is not None and time.perf_counter() >= deadline:
            timed_out = True
            break
        cand = rng.integers(0, P, size=(2, 2 * P))
        winners = np.where(pop.score[cand[0]] >= pop.score[cand[1]], cand[0], cand[1])
        kids = make_children(pop, winners[:P], winners[P:], rng.random(P) < crossover_prob, rng)
        best_before = pop.score[0]
        pop = pop.best_of(kids, P)
        since = 0 if pop.score[0] > best_before + 1e-12 * abs(best_before) else since + 1
        gen += 1
        if on_generation is not None:
            on_generation(gen, pop)
    best = _best(pop, evaluator)
    if best is None or (start is not None and evaluator.fitness(start) > evaluator.fitness(best)):
        best = start
    return best, pop, gen, timed_out


#: The final choice re-scores this many of the best members (by score) with the evaluator.
FINAL_CANDIDATES = 16


def _best(pop: ConfigPopulation, evaluator: Evaluator) -> Array | None:
    """Of the best :data:`FINAL_CANDIDATES` members by score, the one of largest true fitness (the
    evaluator's), or None when none is feasible."""
    top = np.argsort(-pop.score, kind="stable")[:FINAL_CANDIDATES]
    allocs = pop.alloc[top].astype(np.int64)
    ev = evaluator.evaluate(allocs)
    fit = np.where(ev.violation == 0, ev.fitness, -np.inf)
    i = int(np.argmax(fit))
    return allocs[i] if np.isfinite(fit[i]) else None
