r"""Node-pattern rows that make the configuration level's choices on one GPU type placeable.

The model of :mod:`goodopt.formulations.node_patterns` with the choice left
open: counts of single-node moves of size ``s`` and multi-node moves of size
``k`` are sums of their ``z_c``, and kept jobs are decisions too. A node
touched by keep configurations chooses which of them it keeps,
``b_nS ∈ {0, 1}`` for subsets ``S`` of them (fitting, at most one multi-node
job), and then joins the class of its residual; free nodes are in the class of
their capacity::

    (P1)  Σ_π n_qπ - Σ_{(n,S) -> q} b_nS <= |free nodes of class q|     ∀ q = (residual, blocked)
    (B1)  Σ_S b_nS <= 1                                                 ∀ touched node n
    (B2)  Σ_{S ∋ c} b_nS >= z_c                                         ∀ keep c, n in its row
    (P2)  Σ slots_s(π) n_qπ - Σ_{c single move, k_c = s} z_c >= 0      ∀ s
    (P3)  Σ_{π: c_π = c} n_qπ - Σ_{k,σ} (c's in σ) v_kσ >= 0           ∀ c
    (P4)  Σ_σ v_kσ - Σ_{c multi move, k_c = k} z_c >= 0                ∀ k

Each of (P1), (B1), (B2) and (P4) may hold with slack, and slack only
leaves GPUs unused: a node may hold no pattern (P1) or keep nothing and stay
out of every class (B1); a node may go on holding the rows of a keep
configuration that is not chosen (B2: its GPUs stay taken); a split beyond
the moves of its size takes chunks no job uses (P4). Removing the slack
(the extra splits; for the others, nodes and keep choices that hold less)
gives the same ``z`` with equality, so the choices a solution places are
those of the equality form, and so is the LP relaxation's bound. Written as
inequalities, rows that would lock every column in both directions lock it
in one, and HiGHS's rounding at the root (its line search towards the
analytic centre, a fifth to a third of the reduced-cost dive's time at
five-types-2048) finds points sooner. Measured against the equality form
(CPU s, one process): five-types-2048 seed 0, least of three, 8.70 -> 6.89
under its own objective and 15.3 -> 7.36 under Sia's; mixed-2048 under
Sia's objective, seeds 0-2 and 4-6, 52.7 -> 29.3 in all; five-types-512 and
cluster-2048, seeds 0-2, within noise. Over seeds 1-6 of five-types-2048 the
solves move either way, as any change to the dive's model moves them (one
53 -> 150, in the plain configuration model that follows a dive that did not
certify).

Sizes with more than :data:`MAX_SPLITS_PER_SIZE` splits (e.g. 64 GPUs on
8-GPU nodes: 116 k splits) give chunk columns ``w_{j,ch} >= 0`` instead, one
set per job ``j`` with such moves (its configurations ``B_j``), counted in
(P3)::

    (M1)  Σ_ch ch w_{j,ch} = Σ_{c ∈ B_j} k_c z_c,     (M2)  Σ_ch w_{j,ch} >= 2 Σ_{c ∈ B_j} z_c

A job chooses at most one configuration, so with integral ``z`` these are the
rows of that one configuration (or all zero): exact. Where every such size is
at least twice the largest chunk (nodes of up to 9 GPUs, all shipped
families), its LP relaxation equals that of one set per configuration: a
job's chunks split over its configurations in proportion to ``k_c z_c`` give
each ``k_c z_c / room >= 2 z_c`` chunks or more. It has fewer columns
(cluster-2048: 6.3 k chunk columns and 1.6 k rows where per configuration
gave 48 k and 12 k). Measured against one set per configuration on 16
instances (five-types-512, five-types-2048, cluster-2048 and mixed-2048,
both objectives): 43.4 s of CPU against 43.2 s, the same certified optima;
faster on all but five-types-2048, where the LP's (degenerate) duals left
more configurations open in the reduced-cost dive (3.6-6.9 k against
3.3-5.6 k).

Every solution's choice places (the fixed-choice model's counts are part of
it), and every placeable choice extends to a solution.

The block's columns are laid out once (:class:`BlockLayout`: patterns ``n``,
keep choices ``b``, splits ``v``, chunk columns ``w``, in that order from
``col0``); each row family is one builder over that layout
(:data:`ROW_BUILDERS`), as :mod:`goodopt.formulations.config_matrix` builds its
rows.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from goodopt.arrays import Array
from goodopt.problem import AllocationProblem

from .configs import ConfigSet
from .keep_choices import KeepChoices, keep_choices
from .node_patterns import fillings, partitions

#: Splits listed per multi-node job size before that size switches to per-configuration chunk columns.
MAX_SPLITS_PER_SIZE = 400

#: One row family: the arguments of ``Rows.add`` (rows, columns, values, lower, upper, name).
RowFamily = tuple[Array, Array, Array, Array, Array, str]


@dataclass(frozen=True, eq=False)
class PatternBlock:
    """Columns ``col0 .. col0 + n_columns - 1`` and rows (arguments of ``Rows.add``) of one type's block."""

    gpu_type: int
    col0: int
    n_columns: int
    upper: Array
    rows: list[RowFamily]


@dataclass(frozen=True, eq=False)
class BlockLayout:
    """What one type's block is made of, and where its columns lie.

    ``keep``: the keep choices, one per ``b`` column (:class:`KeepChoices`);
    ``free``: the nodes no keep configuration touches; ``classes``: ``(residual, blocked)`` per node class; ``patterns``:
    ``(class, chunk, single sizes)`` per ``n`` column; ``splits``: ``(k,
    chunks)`` per ``v`` column; ``big``: the multi-node move configurations
    counted by chunk columns (their sizes are ``by_config``), ``big_job``: the
    chunk-column set (0 .. its jobs - 1) of each. Column arrays: ``pcol``
    (patterns,), ``bcol`` (choices,), ``vcol`` (splits,), ``wcol`` (jobs with
    such moves, chunk sizes).
    """

    moves: Array
    single_sizes: tuple[int, ...]
    multi_sizes: list[int]
    keep: KeepChoices
    free: Array
    classes: list[tuple[int, bool]]
    splits: list[tuple[int, tuple[int, ...]]]
    by_config: list[int]
    chunk_sizes: list[int]
    big: Array
    big_job: Array
    patterns: list[tuple[int, int, tuple[int, ...]]]
    pcol: Array
    bcol: Array
    vcol: Array
    wcol: Array

    def class_index(self, residual: Array, blocked: Array) -> Array:
        """The index in ``classes`` of each ``(residual, blocked)`` (each one of them). Shapes: (n,), (n,) -> (n,)."""
        keys = np.array([2 * r + b for r, b in self.classes], np.int64)  # ``classes`` is sorted, so are these
        return np.searchsorted(keys, 2 * np.asarray(residual, np.int64) + np.asarray(blocked, np.int64))


def pattern_block(problem: AllocationProblem, configs: ConfigSet, gpu_type: int, col0: int,
                  max_columns: int = 20_000) -> PatternBlock | None:
    """The rows of the module docstring for ``gpu_type``, its columns from ``col0``.

    Returns None without interference avoidance, when a node is touched by
    more than :data:`~goodopt.formulations.keep_choices.MAX_KEEPS_PER_NODE` keep configurations, or above
    ``max_columns`` columns.
    """
    pr, cs = problem, configs
    if not pr.interference_avoidance:
        return None
    nodes = np.flatnonzero(pr.node_type == int(gpu_type))
    layout = block_layout(pr, cs, int(gpu_type), nodes, col0, max_columns)
    if layout is None:
        return None
    rows = [build(pr, cs, layout) for build in ROW_BUILDERS]
    L = layout
    upper = np.concatenate([np.full(len(L.patterns), float(len(nodes))), np.ones(L.keep.n),
                            np.full(len(L.splits) + L.wcol.size, float(len(nodes)))])
    n_columns = len(L.patterns) + L.keep.n + len(L.splits) + L.wcol.size
    return PatternBlock(gpu_type=int(gpu_type), col0=col0, n_columns=n_columns, upper=upper,
                        rows=[r for r in rows if r is not None])


def block_layout(pr: AllocationProblem, cs: ConfigSet, g: int, nodes: Array, col0: int,
                 max_columns: int) -> BlockLayout | None:
    """The columns of type ``g``'s block (see :class:`BlockLayout`), or None where the block does not apply."""
    of_type = cs.gpu_type == g
    moves = of_type & ~cs.keep
    single_sizes = tuple(sorted({int(k) for k in cs.n_gpus[moves & ~cs.multi]}, reverse=True))
    multi_sizes = sorted({int(k) for k in cs.n_gpus[moves & cs.multi]})
    kept = keep_choices(pr, cs, nodes, np.flatnonzero(of_type & cs.keep))
    if kept is None:
        return None
    keep, free = kept
    cap = pr.node_capacity
    classes = sorted({(int(r), False) for r in np.unique(cap[free])}
                     | {(int(r), bool(b)) for r, b in set(zip(keep.residual.tolist(), keep.blocked.tolist()))})
    room = max((r for r, b in classes if not b), default=0)
    splits, by_config = _splits(multi_sizes, room)
    chunk_sizes = sorted({c for _, sp in splits for c in sp} | (set(range(1, room + 1)) if by_config else set()))
    big = np.flatnonzero(moves & cs.multi & np.isin(cs.n_gpus, by_config))
    jobs, big_job = np.unique(cs.job[big], return_inverse=True)
    n_w = len(jobs) * len(chunk_sizes)
    fixed = len(splits) + keep.n + n_w
    if n_w > max_columns:
        return None
    patterns = _patterns(classes, chunk_sizes, single_sizes, max_columns - fixed)
    if patterns is None:
        return None
    n_pat, n_ch = len(patterns), keep.n
    first_w = col0 + n_pat + n_ch + len(splits)
    return BlockLayout(moves=moves, single_sizes=single_sizes, multi_sizes=multi_sizes, keep=keep, free=free, classes=classes, splits=splits, by_config=by_config,
                       chunk_sizes=chunk_sizes, big=big, big_job=np.asarray(big_job).ravel(), patterns=patterns,
                       pcol=col0 + np.arange(n_pat),
                       bcol=col0 + n_pat + np.arange(n_ch), vcol=col0 + n_pat + n_ch + np.arange(len(splits)),
                       wcol=(first_w + np.arange(n_w)).reshape(len(jobs), len(chunk_sizes)))


def _splits(multi_sizes: list[int], room: int) -> tuple[list[tuple[int, tuple[int, ...]]], list[int]]:
    """``(splits, by_config)``: every split of the sizes with few splits, and the sizes with too many (those get
    per-configuration chunk columns)."""
    splits: list[tuple[int, tuple[int, ...]]] = []
    by_config: list[int] = []
    for k in multi_sizes:
        these = splits_of(k, room)
        if these is None:
            by_config.append(k)
        else:
            splits += [(k, sp) for sp in these]
    return splits, by_config


@functools.lru_cache(maxsize=4096)
def splits_of(k: int, room: int) -> tuple[tuple[int, ...], ...] | None:
    """The splits of a ``k``-GPU job into at least two chunks of at most ``room`` GPUs (non-increasing tuples),
    or None when there are more than :data:`MAX_SPLITS_PER_SIZE`.

    A pure function of two small integers, asked for again by every model of a
    solve and every round of a simulation, hence cached; the count is found
    first (:func:`n_partitions`), so a size with thousands of splits is not
    listed at all.
    """
    top = max(min(k - 1, room), 1)
    if n_partitions(k, top) - (1 if top >= k else 0) > MAX_SPLITS_PER_SIZE:
        return None
    return tuple(sp for sp in partitions(k, top) if len(sp) >= 2)


@functools.lru_cache(maxsize=4096)
def n_partitions(total: int, largest: int) -> int:
    """How many multisets of integers in [1, ``largest``] sum to ``total``."""
    ways = [1] + [0] * total
    for part in range(1, min(largest, total) + 1):
        for t in range(part, total + 1):
            ways[t] += ways[t - part]
    return ways[total]


def _patterns(classes: list[tuple[int, bool]], chunk_sizes: list[int], single_sizes: tuple[int, ...],
              budget: int) -> list[tuple[int, int, tuple[int, ...]]] | None:
    """Every maximal node pattern ``(class, chunk, single sizes)`` of every class; None beyond ``budget``."""
    patterns: list[tuple[int, int, tuple[int, ...]]] = []
    for qi, (r, b) in enumerate(classes):
        for c in [0] + ([c for c in chunk_sizes if c <= r] if not b else []):
            patterns.extend((qi, c, fill) for fill in fillings(r - c, single_sizes))
        if len(patterns) > budget:
            return None
    return patterns


# ------------------------------------------------------------------ one builder per row family
def rows_p1(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(P1): each class's nodes, free or freed by their keep choice, hold at most one pattern each."""
    free_cls = L.class_index(pr.node_capacity[L.free], np.zeros(len(L.free), bool))
    free_count = np.bincount(free_cls, minlength=len(L.classes)).astype(float)
    pat_cls = np.array([p[0] for p in L.patterns], np.int64)
    ch_cls = L.class_index(L.keep.residual, L.keep.blocked)
    return (np.concatenate([pat_cls, ch_cls]), np.concatenate([L.pcol, L.bcol]),
            np.concatenate([np.ones(len(L.patterns)), -np.ones(L.keep.n)]), np.full(len(free_count), -np.inf),
            free_count, "P1")


def rows_b1(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(B1): a touched node keeps at most one subset of its keep configurations."""
    n = len(L.keep.touched)
    return (np.searchsorted(L.keep.touched, L.keep.node), L.bcol, np.ones(L.keep.n), np.full(n, -np.inf), np.ones(n),
            "B1")


def rows_b2(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(B2): a keep configuration is chosen only when every node of its row keeps it."""
    K = L.keep
    n_nodes = np.int64(pr.n_nodes)
    pairs = K.pair_config * n_nodes + K.pair_node  # sorted
    rows = np.searchsorted(pairs, K.member_config * n_nodes + K.node[K.member_choice])
    zeros = np.zeros(len(pairs))
    return (np.concatenate([rows, np.arange(len(pairs))]), np.concatenate([L.bcol[K.member_choice], K.pair_config]),
            np.concatenate([np.ones(len(rows)), -np.ones(len(pairs))]), zeros, np.full(len(pairs), np.inf), "B2")


def rows_p2(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(P2): enough single-node slots of each size for the single-node moves of that size."""
    n = len(L.single_sizes)
    counts = _occurrences([fill for _, _, fill in L.patterns], L.single_sizes)
    pat, row = np.nonzero(counts)
    move_rows, moved = _rows_of(cs.n_gpus, L.single_sizes, L.moves & ~cs.multi)
    return (np.concatenate([row, move_rows]), np.concatenate([L.pcol[pat], moved]),
            np.concatenate([counts[pat, row], -np.ones(len(moved))]), np.zeros(n), np.full(n, np.inf), "P2")


def rows_p3(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(P3): enough nodes holding a chunk of each size for the splits and chunk columns that use it."""
    n = len(L.chunk_sizes)
    chunk_of = np.array([c for _, c, _ in L.patterns], np.int64)
    pat_rows, pat = _rows_of(chunk_of, L.chunk_sizes)
    counts = _occurrences([sp for _, sp in L.splits], L.chunk_sizes)
    split, row = np.nonzero(counts)
    w = np.asarray(L.wcol, np.int64).reshape(-1, n) if n else np.zeros((0, 0), np.int64)
    w_rows = np.tile(np.arange(n), len(w))
    return (np.concatenate([pat_rows, row, w_rows]), np.concatenate([L.pcol[pat], L.vcol[split], w.ravel()]),
            np.concatenate([np.ones(len(pat)), -counts[split, row], -np.ones(len(w_rows))]),
            np.zeros(n), np.full(n, np.inf), "P3")


def _occurrences(groups: list[tuple[int, ...]], values: Sequence[int]) -> Array:
    """How many times each of ``values`` occurs in each group. Shapes: -> (len(groups), len(values))."""
    lens = np.fromiter((len(g) for g in groups), np.int64, len(groups))
    flat = np.fromiter(itertools.chain.from_iterable(groups), np.int64, int(lens.sum()))
    owner = np.repeat(np.arange(len(groups)), lens)
    hit, index = _index_in(flat, values)
    out = np.zeros((len(groups), len(values)))
    np.add.at(out, (owner[hit], index[hit]), 1.0)
    return out


def _rows_of(sizes: Array, values: Sequence[int], mask: Array | None = None) -> tuple[Array, Array]:
    """``(row, position)`` of every position where ``sizes`` is one of ``values`` (its row: that value's index) and
    ``mask``, if given, holds. Shapes: sizes, mask (n,) -> (k,), (k,)."""
    hit, index = _index_in(np.asarray(sizes, np.int64), values)
    pos = np.flatnonzero(hit if mask is None else mask & hit)
    return index[pos], pos


def _index_in(x: Array, values: Sequence[int]) -> tuple[Array, Array]:
    """Whether each ``x`` is one of ``values`` (distinct, any order), and its index there (0 where not).
    Shapes: x (n,) -> (n,) bool, (n,) int."""
    vals = np.asarray(values, np.int64)
    if not len(vals):
        return np.zeros(len(x), bool), np.zeros(len(x), np.int64)
    order = np.argsort(vals, kind="stable")
    at = np.minimum(np.searchsorted(vals[order], x), len(vals) - 1)
    hit = vals[order][at] == x
    return hit, np.where(hit, order[at], 0)


def _chunk_rows(L: BlockLayout, per_chunk: Array, per_move: Array, upper: Array, name: str) -> RowFamily | None:
    """One row per job with large multi-node moves: ``per_chunk`` times each of its chunk columns plus ``per_move``
    times the ``z_c`` of each such move, in ``[0, upper]`` (None without such moves). Shapes: per_chunk (chunk
    sizes,), per_move (moves,), upper (jobs,)."""
    if not len(L.big):
        return None
    n_j, n_c = L.wcol.shape
    local = np.repeat(np.arange(n_j), n_c)
    return (np.concatenate([local, L.big_job]), np.concatenate([L.wcol.ravel(), L.big]),
            np.concatenate([np.tile(per_chunk, n_j), per_move]), np.zeros(n_j), upper, name)


def rows_m1(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(M1): a job's chunk columns add up to the GPUs of its large multi-node move."""
    return _chunk_rows(L, np.asarray(L.chunk_sizes, float), -cs.n_gpus[L.big].astype(float),
                       np.zeros(len(L.wcol)), "M1")


def rows_m2(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(M2): a job's large multi-node move takes at least two chunks."""
    return _chunk_rows(L, np.ones(len(L.chunk_sizes)), np.full(len(L.big), -2.0), np.full(len(L.wcol), np.inf),
                       "M2")


def rows_p4(pr: AllocationProblem, cs: ConfigSet, L: BlockLayout) -> RowFamily | None:
    """(P4): at least as many splits of each listed size as multi-node moves of that size."""
    sizes = [k for k in L.multi_sizes if k not in L.by_config]
    split_rows, split = _rows_of(np.array([k for k, _ in L.splits], np.int64), sizes)
    move_rows, moved = _rows_of(cs.n_gpus, sizes, L.moves & cs.multi)
    zeros = np.zeros(len(sizes))
    return (np.concatenate([split_rows, move_rows]), np.concatenate([L.vcol[split], moved]),
            np.concatenate([np.ones(len(split)), -np.ones(len(moved))]), zeros, np.full(len(sizes), np.inf), "P4")


#: The row families in the order they are added (the order of the original single builder).
ROW_BUILDERS = (rows_p1, rows_b1, rows_b2, rows_p2, rows_p3, rows_m1, rows_m2, rows_p4)
