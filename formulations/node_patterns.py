r"""Can a choice of configurations be placed on one GPU type's nodes? Bin packing over node classes.

Jobs on different GPU types share no node, so placeability is decided per
type. On type ``g``, with interference avoidance, given the chosen
configurations of its jobs:

* *kept* jobs hold their current rows; they leave node ``n`` a residual
  ``r_n``, and a kept multi-node job *blocks* its nodes for other multi-node
  jobs;
* nodes with equal ``(r_n, blocked_n)`` are interchangeable: a *class* ``q``
  with ``N_q`` nodes;
* a *node pattern* ``π`` of class ``q`` is what one node holds: at most one
  multi-node *chunk* of ``c_π`` GPUs (none if blocked) and a multiset of
  single-node jobs, ``c_π + Σ sizes <= r_q``; only maximal patterns are
  listed (slots may stay empty);
* a *split* ``σ`` of a multi-node job of ``k`` GPUs is a multiset of at
  least two chunk sizes summing to ``k``.

Variables and constraints (a feasibility model; all integer)::

    n_qπ >= 0   nodes of class q holding pattern π
    v_kσ >= 0   multi-node jobs of k GPUs split as σ

    (P1)  Σ_π n_qπ = N_q                                        ∀ q
    (P2)  Σ_{q,π} (number of size-s slots of π) n_qπ >= m_s       ∀ single size s  (m_s jobs)
    (P3)  Σ_{q,π: c_π = c} n_qπ >= Σ_{k,σ} (number of c's in σ) v_kσ   ∀ chunk size c
    (P4)  Σ_σ v_kσ = M_k                                        ∀ multi size k  (M_k jobs)

The model is exact: a placement gives the counts, and counts give a
placement (nodes take patterns, jobs take slots; a node holds one chunk, so a
job's chunks land on distinct nodes, at least two). Its size depends on the
node sizes and the distinct job sizes, not on the number of jobs or nodes:
a few hundred columns where the job x node model had 600 k at 2048 GPUs.

Without interference avoidance several chunks may share a node and the
aggregate no longer keeps a job's chunks apart; :func:`pattern_model`
returns None there (and when the patterns would exceed ``max_patterns``),
and the caller uses the job x node model instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem

from .configs import ConfigSet
from .matrix import CscArrays, MatrixModel


@dataclass(frozen=True, eq=False)
class PatternModel:
    """The feasibility model of one GPU type and what is needed to decode its solution."""

    matrix: MatrixModel
    gpu_type: int
    nodes: Array                     # (N_g,) node indices of the type
    node_class: Array                # (N_g,) class of each of those nodes
    patterns: list[tuple[int, int, tuple[int, ...]]]  # (class, chunk, tuple of single sizes) per n column
    splits: list[tuple[int, tuple[int, ...]]]         # (k, tuple of chunks) per v column
    base: Array                      # (J, N) kept rows
    singles: dict[int, list[int]]    # size -> list of jobs
    multis: dict[int, list[int]]     # k -> list of jobs
    k_of_job: dict[int, int]


def partitions(total: int, parts_max: int, parts_min: int = 1) -> Iterator[tuple[int, ...]]:
    """Multisets (non-increasing tuples) of integers in [parts_min, parts_max] summing to ``total``."""
    if total == 0:
        yield ()
        return
    for first in range(min(total, parts_max), parts_min - 1, -1):
        for rest in partitions(total - first, first, parts_min):
            yield (first,) + rest


def fillings(room: int, sizes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Maximal multisets of ``sizes`` (descending tuple) with sum <= room."""
    out: list[tuple[int, ...]] = []

    def rec(start: int, left: int, acc: tuple[int, ...]) -> None:
        extended = False
        for i in range(start, len(sizes)):
            if sizes[i] <= left:
                extended = True
                rec(i, left - sizes[i], acc + (sizes[i],))
        if not extended:
            out.append(acc)

    rec(0, room, ())
    return out


def pattern_model(problem: AllocationProblem, configs: ConfigSet, chosen: Array, gpu_type: int, *,
                  max_patterns: int = 20_000) -> PatternModel | str | None:
    """The model of the module docstring for ``chosen`` (J,) on ``gpu_type``; None where it does not apply.

    Returns ``"infeasible"`` when the kept rows alone do not fit, or when a count already says so: the moved
    jobs ask for more GPUs than the type's nodes have left, or a single-node job for more than any one node
    has left (an LP's rounded choice often does; no model is built then).
    """
    pr, cs = problem, configs
    if not pr.interference_avoidance:
        return None
    g = int(gpu_type)
    nodes = np.flatnonzero(pr.node_type == g)
    on = np.flatnonzero(chosen >= 0)
    on = on[cs.gpu_type[chosen[on]] == g]
    base = np.zeros((pr.n_jobs, pr.n_nodes), np.int64)
    keep = on[cs.keep[chosen[on]]]
    base[keep] = pr.current[keep]
    residual = pr.node_capacity[nodes] - base[:, nodes].sum(axis=0)
    kept_multi = (base[keep] > 0).sum(axis=1) > 1 if len(keep) else np.zeros(0, bool)
    used_by_multi = (base[keep][kept_multi][:, nodes] > 0).sum(axis=0) if len(keep) else np.zeros(len(nodes))
    if np.any(residual < 0) or np.any(used_by_multi > 1):
        return "infeasible"
    blocked = used_by_multi > 0
    moves = on[~cs.keep[chosen[on]]]
    k_moves = cs.n_gpus[chosen[moves]]
    single = ~cs.multi[chosen[moves]]
    if k_moves.sum() > residual.sum() or k_moves[single].max(initial=0) > residual.max(initial=0):
        return "infeasible"
    k_of_job = {int(j): int(cs.n_gpus[chosen[j]]) for j in moves}
    singles: dict[int, list[int]] = {}
    multis: dict[int, list[int]] = {}
    for j in moves:
        (multis if cs.multi[chosen[j]] else singles).setdefault(k_of_job[int(j)], []).append(int(j))
    key = np.stack([residual, blocked.astype(np.int64)], axis=1)
    classes, node_class = np.unique(key, axis=0, return_inverse=True)
    node_class = np.asarray(node_class).ravel()
    single_sizes = tuple(sorted(singles, reverse=True))
    k_max = max(multis, default=0)
    room = int(residual[~blocked].max(initial=0))  # no chunk can exceed the largest open residual
    splits: list[tuple[int, tuple[int, ...]]] = []
    for k in sorted(multis):
        for sp in partitions(k, max(min(k - 1, room), 1)):
            if len(sp) >= 2:
                splits.append((k, sp))
            if len(splits) > max_patterns:
                return None
    chunk_sizes = sorted({c for _, sp in splits for c in sp})
    patterns: list[tuple[int, int, tuple[int, ...]]] = []
    for q, (r, b) in enumerate(classes):
        chunks = [0] + ([c for c in chunk_sizes if c <= r] if not b and k_max else [])
        for c in chunks:
            for fill in fillings(int(r) - c, single_sizes):
                patterns.append((q, c, fill))
        if len(patterns) + len(splits) > max_patterns:
            return None
    return _assemble(pr, g, nodes, node_class, classes, patterns, splits, single_sizes, chunk_sizes, base,
                     singles, multis, k_of_job)


def _assemble(pr: AllocationProblem, g: int, nodes: Array, node_class: Array, classes: Array,
              patterns: list[tuple[int, int, tuple[int, ...]]], splits: list[tuple[int, tuple[int, ...]]],
              single_sizes: tuple[int, ...], chunk_sizes: list[int], base: Array, singles: dict[int, list[int]],
              multis: dict[int, list[int]], k_of_job: dict[int, int]) -> PatternModel:
    n_pat, n_split = len(patterns), len(splits)
    n = n_pat + n_split
    r, c, v, lo, hi = [], [], [], [], []
    row = 0
    counts = np.bincount(node_class, minlength=len(classes))
    for q in range(len(classes)):  # (P1)
        cols = [i for i, p in enumerate(patterns) if p[0] == q]
        r += [row] * len(cols)
        c += cols
        v += [1.0] * len(cols)
        lo.append(float(counts[q]))
        hi.append(float(counts[q]))
        row += 1
    for s in single_sizes:  # (P2)
        for i, p in enumerate(patterns):
            m = p[2].count(s)
            if m:
                r.append(row)
                c.append(i)
                v.append(float(m))
        lo.append(float(len(singles[s])))
        hi.append(np.inf)
        row += 1
    for ch in chunk_sizes:  # (P3)
        for i, p in enumerate(patterns):
            if p[1] == ch:
                r.append(row)
                c.append(i)
                v.append(1.0)
        for t, (_, sp) in enumerate(splits):
            m = sp.count(ch)
            if m:
                r.append(row)
                c.append(n_pat + t)
                v.append(-float(m))
        lo.append(0.0)
        hi.append(np.inf)
        row += 1
    for k in sorted(multis):  # (P4)
        for t, (kk, _) in enumerate(splits):
            if kk == k:
                r.append(row)
                c.append(n_pat + t)
                v.append(1.0)
        lo.append(float(len(multis[k])))
        hi.append(float(len(multis[k])))
        row += 1
    A = CscArrays.from_triplets(np.array(r, np.int64), np.array(c, np.int64), np.array(v, float), (row, n))
    upper = np.full(n, float(len(nodes)))
    mm = MatrixModel(cost=np.zeros(n), lower=np.zeros(n), upper=upper, integer=np.ones(n, bool), A=A,
                     row_lower=np.array(lo), row_upper=np.array(hi), names=("P",) * row, n_configs=0,
                     epigraph=False)
    return PatternModel(matrix=mm, gpu_type=g, nodes=nodes, node_class=node_class, patterns=patterns,
                        splits=splits, base=base, singles=singles, multis=multis, k_of_job=k_of_job)


def decode_patterns(pm: PatternModel, x: Array) -> Array:
    """The allocation (J, N) of a solution ``x`` of the pattern model: kept rows plus placed moves."""
    counts = np.round(np.asarray(x)).astype(np.int64)
    alloc = pm.base.copy()
    n_pat = len(pm.patterns)
    free_nodes = {q: list(pm.nodes[pm.node_class == q]) for q in np.unique(pm.node_class)}
    single_slots: dict[int, list[int]] = {}
    chunk_slots: dict[int, list[int]] = {}
    for i, (q, ch, fill) in enumerate(pm.patterns):
        for _ in range(counts[i]):
            node = free_nodes[q].pop()
            if ch:
                chunk_slots.setdefault(ch, []).append(node)
            for s in fill:
                single_slots.setdefault(s, []).append(node)
    for s, jobs in pm.singles.items():
        for j in jobs:
            alloc[j, single_slots[s].pop()] += s
    splits_of: dict[int, list[tuple[int, ...]]] = {}
    for t, (k, sp) in enumerate(pm.splits):
        splits_of.setdefault(k, []).extend([sp] * int(counts[n_pat + t]))
    for k, jobs in pm.multis.items():
        for j, sp in zip(jobs, splits_of[k]):
            for ch in sp:
                alloc[j, chunk_slots[ch].pop()] += ch
    return alloc
