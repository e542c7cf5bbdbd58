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

from dataclasses import dataclass

import numpy as np

from .matrix import CscArrays, MatrixModel


@dataclass(frozen=True, eq=False)
class PatternModel:
    """The feasibility model of one GPU type and what is needed to decode its solution."""

    matrix: MatrixModel
    gpu_type: int
    nodes: np.ndarray                     # (N_g,) node indices of the type
    node_class: np.ndarray                # (N_g,) class of each of those nodes
    patterns: list                        # (class, chunk, tuple of single sizes) per n column
    splits: list                          # (k, tuple of chunks) per v column
    base: np.ndarray                      # (J, N) kept rows
    singles: dict                         # size -> list of jobs
    multis: dict                          # k -> list of jobs
    k_of_job: dict


def _partitions(total, parts_max, parts_min=1):
    """Multisets (non-increasing tuples) of integers in [parts_min, parts_max] summing to ``total``."""
    if total == 0:
        yield ()
        return
    for first in range(min(total, parts_max), parts_min - 1, -1):
        for rest in _partitions(total - first, first, parts_min):
            yield (first,) + rest


def _fillings(room, sizes):
    """Maximal multisets of ``sizes`` (descending tuple) with sum <= room."""
    out = []

    def rec(start, left, acc):
        extended = False
        for i in range(start, len(sizes)):
            if sizes[i] <= left:
                extended = True
                rec(i, left - sizes[i], acc + (sizes[i],))
        if not extended:
            out.append(acc)

    rec(0, room, ())
    return out


def pattern_model(problem, configs, chosen, gpu_type, *, max_patterns=20_000):
    """The model of the module docstring for ``chosen`` (J,) on ``gpu_type``; None where it does not apply.

    Returns ``"infeasible"`` when the kept rows alone do not fit.
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
    k_of_job = {int(j): int(cs.n_gpus[chosen[j]]) for j in moves}
    singles, multis = {}, {}
    for j in moves:
        (multis if cs.multi[chosen[j]] else singles).setdefault(k_of_job[int(j)], []).append(int(j))
    key = np.stack([residual, blocked.astype(np.int64)], axis=1)
    classes, node_class = np.unique(key, axis=0, return_inverse=True)
    node_class = np.asarray(node_class).ravel()
    single_sizes = tuple(sorted(singles, reverse=True))
    k_max = max(multis, default=0)
    room = int(residual[~blocked].max(initial=0))  # no chunk can exceed the largest open residual
    splits = []
    for k in sorted(multis):
        for sp in _partitions(k, max(min(k - 1, room), 1)):
            if len(sp) >= 2:
                splits.append((k, sp))
            if len(splits) > max_patterns:
                return None
    chunk_sizes = sorted({c for _, sp in splits for c in sp})
    patterns = []
    for q, (r, b) in enumerate(classes):
        chunks = [0] + ([c for c in chunk_sizes if c <= r] if not b and k_max else [])
        for c in chunks:
            for fill in _fillings(int(r) - c, single_sizes):
                patterns.append((q, c, fill))
        if len(patterns) + len(splits) > max_patterns:
            return None
    return _assemble(pr, g, nodes, node_class, classes, patterns, splits, single_sizes, chunk_sizes, base,
                     singles, multis, k_of_job)


def _assemble(pr, g, nodes, node_class, classes, patterns, splits, single_sizes, chunk_sizes, base, singles,
              multis, k_of_job):
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


#: Splits listed per multi-node job size before that size switches to per-configuration chunk columns.
MAX_SPLITS_PER_SIZE = 400


@dataclass(frozen=True, eq=False)
class PatternBlock:
    """Columns ``col0 .. col0 + n_columns - 1`` and rows (arguments of ``_Rows.add``) of one type's block."""

    gpu_type: int
    col0: int
    n_columns: int
    upper: np.ndarray
    rows: list


def pattern_block(problem, configs, gpu_type, col0, max_columns=20_000):
    r"""Node-pattern rows that make the configuration level's choices on ``gpu_type`` placeable.

    The model of the module docstring with the choice left open: counts of
    single-node moves of size ``s`` and multi-node moves of size ``k`` are
    sums of their ``z_c``, and kept jobs are decisions too. A node touched by
    keep configurations chooses which of them it keeps, ``b_nS ∈ {0, 1}`` for
    subsets ``S`` of them (fitting, at most one multi-node job), and then
    joins the class of its residual; free nodes are in the class of their
    capacity::

        (P1)  Σ_π n_qπ - Σ_{(n,S) -> q} b_nS = |free nodes of class q|      ∀ q = (residual, blocked)
        (B1)  Σ_S b_nS = 1                                                  ∀ touched node n
        (B2)  Σ_{S ∋ c} b_nS = z_c                                          ∀ keep c, n in its row
        (P2)  Σ slots_s(π) n_qπ - Σ_{c single move, k_c = s} z_c >= 0      ∀ s
        (P3)  Σ_{π: c_π = c} n_qπ - Σ_{k,σ} (c's in σ) v_kσ >= 0           ∀ c
        (P4)  Σ_σ v_kσ - Σ_{c multi move, k_c = k} z_c = 0                 ∀ k

    Sizes with more than :data:`MAX_SPLITS_PER_SIZE` splits (e.g. 64 GPUs on
    8-GPU nodes: 116 k splits) give each of their configurations chunk
    columns ``w_{c,ch} >= 0`` instead, counted in (P3)::

        (M1)  Σ_ch ch w_{c,ch} = k_c z_c,     (M2)  Σ_ch w_{c,ch} >= 2 z_c

    Every solution's choice places (the fixed-choice model's counts are part
    of it), and every placeable choice extends to a solution. Returns None
    without interference avoidance, when a node is touched by more than 8
    keep configurations, or above ``max_columns`` columns.
    """
    pr, cs = problem, configs
    g = int(gpu_type)
    if not pr.interference_avoidance:
        return None
    nodes = np.flatnonzero(pr.node_type == g)
    of_type = cs.gpu_type == g
    moves = of_type & ~cs.keep
    single_sizes = tuple(sorted({int(k) for k in cs.n_gpus[moves & ~cs.multi]}, reverse=True))
    multi_sizes = sorted({int(k) for k in cs.n_gpus[moves & cs.multi]})
    keeps = np.flatnonzero(of_type & cs.keep)
    touching = {int(n): [] for n in nodes}
    for c in keeps:
        for n in np.flatnonzero(pr.current[cs.job[c]]):
            if int(n) in touching:
                touching[int(n)].append(int(c))
    cap = pr.node_capacity
    # (node, subset, residual, blocked) for touched nodes
    choices = []
    for n, cl in touching.items():
        if not cl:
            continue
        if len(cl) > 8:
            return None
        for mask in range(1 << len(cl)):
            sub = [cl[i] for i in range(len(cl)) if mask >> i & 1]
            used = sum(int(pr.current[cs.job[c], n]) for c in sub)
            n_multi = sum(bool(cs.multi[c]) for c in sub)
            if used <= cap[n] and n_multi <= 1:
                choices.append((n, tuple(sub), int(cap[n]) - used, n_multi == 1))
    free = [n for n, cl in touching.items() if not cl]
    classes = sorted({(int(cap[n]), False) for n in free} | {(r, b) for _, _, r, b in choices})
    class_of = {q: i for i, q in enumerate(classes)}
    room = max((r for r, b in classes if not b), default=0)
    splits, by_config = [], []  # sizes with few splits aggregate; larger ones get per-configuration chunks
    for k in multi_sizes:
        parts = max(min(k - 1, room), 1)
        these = []
        for sp in _partitions(k, parts):
            if len(sp) >= 2:
                these.append((k, sp))
            if len(these) > MAX_SPLITS_PER_SIZE:
                break
        if len(these) <= MAX_SPLITS_PER_SIZE:
            splits += these
        else:
            by_config.append(k)
    chunk_sizes = sorted({c for _, sp in splits for c in sp} | (set(range(1, room + 1)) if by_config else set()))
    big = np.flatnonzero(moves & cs.multi & np.isin(cs.n_gpus, by_config))
    if len(big) * len(chunk_sizes) > max_columns:
        return None
    patterns = []
    for qi, (r, b) in enumerate(classes):
        for c in [0] + ([c for c in chunk_sizes if c <= r] if not b else []):
            patterns.extend((qi, c, fill) for fill in _fillings(r - c, single_sizes))
        if len(patterns) + len(splits) + len(choices) + len(big) * len(chunk_sizes) > max_columns:
            return None
    n_pat, n_ch = len(patterns), len(choices)
    pcol = col0 + np.arange(n_pat)
    bcol = col0 + n_pat + np.arange(n_ch)
    vcol = col0 + n_pat + n_ch + np.arange(len(splits))
    wcol = (col0 + n_pat + n_ch + len(splits) + np.arange(len(big) * len(chunk_sizes))).reshape(len(big),
                                                                                                len(chunk_sizes))
    rows = []
    # (P1)
    free_count = np.zeros(len(classes))
    for n in free:
        free_count[class_of[(int(cap[n]), False)]] += 1
    pr_cls = np.array([p[0] for p in patterns], np.int64)
    ch_cls = np.array([class_of[(r, b)] for _, _, r, b in choices], np.int64)
    rows.append((np.concatenate([pr_cls, ch_cls]), np.concatenate([pcol, bcol]),
                 np.concatenate([np.ones(n_pat), -np.ones(n_ch)]), free_count, free_count, "P1"))
    # (B1)
    touched = sorted({n for n, *_ in choices})
    tpos = {n: i for i, n in enumerate(touched)}
    ones = np.ones(len(touched))
    rows.append((np.array([tpos[n] for n, *_ in choices], np.int64), bcol, np.ones(n_ch), ones, ones, "B1"))
    # (B2)
    pairs = sorted({(c, n) for n, sub, *_ in choices for c in touching[n]})
    ppos = {pq: i for i, pq in enumerate(pairs)}
    r_, c_, v_ = [], [], []
    for i, (n, sub, _, _) in enumerate(choices):
        for c in sub:
            r_.append(ppos[(c, n)])
            c_.append(bcol[i])
            v_.append(1.0)
    for (c, n), i in ppos.items():
        r_.append(i)
        c_.append(c)
        v_.append(-1.0)
    zeros = np.zeros(len(pairs))
    rows.append((np.array(r_, np.int64), np.array(c_, np.int64), np.array(v_), zeros, zeros, "B2"))
    # (P2)
    r_, c_, v_ = [], [], []
    for si, s in enumerate(single_sizes):
        for i, (_, _, fill) in enumerate(patterns):
            m = fill.count(s)
            if m:
                r_.append(si)
                c_.append(pcol[i])
                v_.append(float(m))
        idx = np.flatnonzero(moves & ~cs.multi & (cs.n_gpus == s))
        r_ += [si] * len(idx)
        c_ += idx.tolist()
        v_ += [-1.0] * len(idx)
    rows.append((np.array(r_, np.int64), np.array(c_, np.int64), np.array(v_, float),
                 np.zeros(len(single_sizes)), np.full(len(single_sizes), np.inf), "P2"))
    # (P3)
    r_, c_, v_ = [], [], []
    for ci, ch in enumerate(chunk_sizes):
        for i, (_, c, _) in enumerate(patterns):
            if c == ch:
                r_.append(ci)
                c_.append(pcol[i])
                v_.append(1.0)
        for t, (_, sp) in enumerate(splits):
            m = sp.count(ch)
            if m:
                r_.append(ci)
                c_.append(vcol[t])
                v_.append(-float(m))
        r_ += [ci] * len(big)
        c_ += wcol[:, ci].tolist()
        v_ += [-1.0] * len(big)
    rows.append((np.array(r_, np.int64), np.array(c_, np.int64), np.array(v_, float),
                 np.zeros(len(chunk_sizes)), np.full(len(chunk_sizes), np.inf), "P3"))
    if len(big):  # (M1) Σ_ch ch w_c,ch = k_c z_c,  (M2) Σ_ch w_c,ch >= 2 z_c  for large multi-node moves
        n_b, n_c = len(big), len(chunk_sizes)
        local = np.repeat(np.arange(n_b), n_c)
        rows.append((np.concatenate([local, np.arange(n_b)]), np.concatenate([wcol.ravel(), big]),
                     np.concatenate([np.tile(np.asarray(chunk_sizes, float), n_b), -cs.n_gpus[big].astype(float)]),
                     np.zeros(n_b), np.zeros(n_b), "M1"))
        rows.append((np.concatenate([local, np.arange(n_b)]), np.concatenate([wcol.ravel(), big]),
                     np.concatenate([np.ones(n_b * n_c), np.full(n_b, -2.0)]), np.zeros(n_b),
                     np.full(n_b, np.inf), "M2"))
    # (P4)
    r_, c_, v_ = [], [], []
    for ki, k in enumerate(k for k in multi_sizes if k not in by_config):
        for t, (kk, _) in enumerate(splits):
            if kk == k:
                r_.append(ki)
                c_.append(vcol[t])
                v_.append(1.0)
        idx = np.flatnonzero(moves & cs.multi & (cs.n_gpus == k))
        r_ += [ki] * len(idx)
        c_ += idx.tolist()
        v_ += [-1.0] * len(idx)
    zeros = np.zeros(len([k for k in multi_sizes if k not in by_config]))
    rows.append((np.array(r_, np.int64), np.array(c_, np.int64), np.array(v_, float), zeros, zeros, "P4"))
    upper = np.concatenate([np.full(n_pat, float(len(nodes))), np.ones(n_ch),
                            np.full(len(splits) + wcol.size, float(len(nodes)))])
    return PatternBlock(gpu_type=g, col0=col0, n_columns=n_pat + n_ch + len(splits) + wcol.size, upper=upper,
                        rows=rows)


def decode_patterns(pm: PatternModel, x) -> np.ndarray:
    """The allocation (J, N) of a solution ``x`` of the pattern model: kept rows plus placed moves."""
    counts = np.round(np.asarray(x)).astype(np.int64)
    alloc = pm.base.copy()
    n_pat = len(pm.patterns)
    free_nodes = {q: list(pm.nodes[pm.node_class == q]) for q in np.unique(pm.node_class)}
    single_slots, chunk_slots = {}, {}
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
    splits_of = {}
    for t, (k, sp) in enumerate(pm.splits):
        splits_of.setdefault(k, []).extend([sp] * int(counts[n_pat + t]))
    for k, jobs in pm.multis.items():
        for j, sp in zip(jobs, splits_of[k]):
            for ch in sp:
                alloc[j, chunk_slots[ch].pop()] += ch
    return alloc
