"""Node-pattern rows and the placement checks behind them, against their definitions and brute force."""

import numpy as np
import pytest
from goodopt.solvers import Termination

import goodopt
from goodopt.families import FAMILIES

from .solver_cases import close
from .synthetic import make_problem


def test_unplaceable_configuration_optimum_gets_pattern_rows():
    # Two 4-GPU nodes. Job 0 runs only multi-node (2 GPUs = 1 + 1 on both nodes: S = 2); jobs 1-3 run
    # on one node (S = 1 at 1 GPU, 2 at 2). Aggregate capacity allows 2 + 2 + 2 + 2 = 8 GPUs, but with
    # job 0's GPU on each node only 3 remain per node: one 2-GPU job each, so the third gets 1 GPU.
    # Optimum (p = 1): (2 + 2 + 2 + 1) / 4 = 1.75 (+ eps), not the configuration level's 2.
    pr = make_problem([[0.0, 0.0], [1.0, 2.0], [1.0, 2.0], [1.0, 2.0]],
                      multi=[[0.0, 2.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], capacity=[4, 4], p=1.0)
    best = goodopt.solve(pr, "brute-force")
    assert close(best.fitness, 1.75 + 1e-3)
    res = goodopt.solve(pr, "milp")
    assert res.status == Termination.OPTIMAL and close(res.fitness, best.fitness)
    # certified under t4's pattern rows: by the MILP, or by a rounding of their LP that reaches its bound
    proof = res.extra["proof"]
    assert res.extra["pattern_types"] == ["t4"] and ("node-pattern rows on ['t4']" in proof
                                                     or "LP relaxation of the config + pattern rows (t4)" in proof)
    cuts = goodopt.solve(pr, "milp", {"config_placement": "cuts"})
    assert cuts.status == Termination.OPTIMAL and close(cuts.fitness, best.fitness)


def _check_places(pr, cs, chosen, g=0):
    """The placement check's verdict on ``chosen`` for type ``g``: True when it builds a model HiGHS solves."""
    from goodopt.formulations.node_patterns import PatternModel, pattern_model
    from goodopt.solvers.mip_solvers.highs_arrays import HighsSession

    verdict = pattern_model(pr, cs, chosen, g)
    return isinstance(verdict, PatternModel) and \
        HighsSession(verdict.matrix).solve()[0].termination == Termination.OPTIMAL


def _fixed_choice_termination(mm, cs, chosen):
    """How HiGHS ends the model ``mm`` with the configuration columns fixed to ``chosen`` (-1: none)."""
    from dataclasses import replace

    from goodopt.solvers.mip_solvers.highs_arrays import HighsSession

    lower, upper = mm.lower.copy(), mm.upper.copy()
    lower[:cs.n_configs] = upper[:cs.n_configs] = 0.0
    lower[chosen[chosen >= 0]] = upper[chosen[chosen >= 0]] = 1.0
    return HighsSession(replace(mm, lower=lower, upper=upper)).solve()[0].termination


def test_chunk_columns_per_job_accept_exactly_the_placeable_choices():
    """Five 8-GPU nodes; two jobs may span up to 22 GPUs (20 and 22 have more than 400 splits each, so their
    chunks are counted by one set of chunk columns per job), three run on one node, and job 0 already holds 2 + 2
    GPUs on nodes 0-1. For random choices of one configuration (or none) per job, the configuration model under
    the type's pattern rows, with that choice fixed, is feasible exactly when the node-pattern model that lists
    every split says the choice places."""

    from goodopt.formulations.config_matrix import config_matrix
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.node_patterns import pattern_model
    from goodopt.formulations.pattern_block import block_layout
    from goodopt.formulations.scaled_objective import reference_fitness, scaled_objective

    big = [float(k) for k in range(1, 23)]
    current = np.zeros((5, 5), np.int64)
    current[0, :2] = 2
    pr = make_problem([[1.0] * 8, [1.0] * 8, [1.0, 1.5, 2.0], [1.0, 1.5, 2.0, 2.5], [1.0, 1.2]],
                      multi=[big, big, [0.0], [0.0], [0.0]], capacity=[8] * 5, current=current, p=-1.0)
    cs = enumerate_configs(pr)
    layout = block_layout(pr, cs, 0, np.arange(5), 0, 60_000)
    assert {20, 22} <= set(layout.by_config) and layout.wcol.shape[0] == 2  # one set per job, not per size
    objective = scaled_objective(pr, cs, reference_fitness(pr, cs, None), None)
    mm = config_matrix(pr, cs, objective, placement=[0])
    rng = np.random.default_rng(7)
    verdicts = []
    for _ in range(30):
        chosen = np.array([rng.choice(np.r_[-1, np.flatnonzero(cs.job == j)]) for j in range(pr.n_jobs)])
        if rng.random() < 0.5:  # half the draws give both spanning jobs a by-configuration size
            for j, k in ((0, 20), (1, int(rng.choice([20, 22])))):
                chosen[j] = rng.choice(np.flatnonzero((cs.job == j) & (cs.n_gpus == k)))
        assert pattern_model(pr, cs, chosen, 0) is not None
        places = _check_places(pr, cs, chosen)
        fixed = _fixed_choice_termination(mm, cs, chosen)
        assert fixed in (Termination.OPTIMAL, Termination.INFEASIBLE)
        assert (fixed == Termination.OPTIMAL) == places, chosen
        verdicts.append((places, chosen[0] >= 0 and cs.n_gpus[chosen[0]] >= 20))
    assert {(True, True), (False, True), (True, False)} <= set(verdicts)  # both verdicts with chunk columns in use


def test_a_choice_that_counts_show_cannot_fit_is_refused_without_a_model():
    """The placement check answers "infeasible" at once when the moved jobs ask for more GPUs than the type has
    left, or a single-node job for more than any node has left (LP roundings often do); otherwise it builds the
    model. Either way its verdict is the exact one: the configuration model under this type's node-pattern rows,
    with the choice fixed, is infeasible exactly when the check says so."""

    from goodopt.formulations.config_matrix import config_matrix
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.node_patterns import PatternModel, pattern_model
    from goodopt.formulations.scaled_objective import reference_fitness, scaled_objective

    current = np.zeros((4, 3), np.int64)
    current[0, 0] = 2  # a kept job leaves 2 GPUs on node 0
    pr = make_problem([[1.0, 1.5, 1.8, 2.0]] * 4, capacity=[4, 4, 4], current=current)
    cs = enumerate_configs(pr)
    mm = config_matrix(pr, cs, scaled_objective(pr, cs, reference_fitness(pr, cs, None), None), placement=[0])
    rng = np.random.default_rng(3)
    seen = set()
    for _ in range(60):
        chosen = np.array([rng.choice(np.r_[-1, np.flatnonzero(cs.job == j)]) for j in range(pr.n_jobs)])
        built = isinstance(pattern_model(pr, cs, chosen, 0), PatternModel)
        places = _check_places(pr, cs, chosen)
        fixed = _fixed_choice_termination(mm, cs, chosen)
        assert (fixed == Termination.OPTIMAL) == places, chosen
        seen.add("counted" if not built else "placed" if places else "solved infeasible")
    assert {"counted", "placed"} <= seen


@pytest.mark.parametrize("family", ["five-types-512", "mixed-64", "hetero-16"])
def test_pattern_count_rows_match_their_definition(family):
    """(P2), (P3), (P4) are built from counts over every pattern and split at once; each entry equals the count
    its definition names: a pattern's slots of a single-node size, a pattern's chunk and a split's chunks of a
    size, a split's own size, and -1 for each move counted."""
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.pattern_block import block_layout, rows_p2, rows_p3, rows_p4

    def entries(family_rows):
        r, c, v = family_rows[:3]
        out = {}
        for key, val in zip(zip(r.tolist(), c.tolist()), v.tolist()):
            out[key] = out.get(key, 0.0) + val
        return {k: val for k, val in out.items() if val}

    pr = FAMILIES[family].scenario(0).problem()
    cs = enumerate_configs(pr)
    checked = 0
    for g in range(pr.n_gpu_types):
        # the block's columns after the configurations' (as in the model), so no entry shares a column
        L = block_layout(pr, cs, g, np.flatnonzero(pr.node_type == g), cs.n_configs + pr.n_jobs, 60_000)
        if L is None:
            continue
        want = {}
        for si, s in enumerate(L.single_sizes):
            want.update({(si, int(L.pcol[i])): float(f.count(s)) for i, (_, _, f) in enumerate(L.patterns) if s in f})
            want.update({(si, int(c)): -1.0 for c in np.flatnonzero(L.moves & ~cs.multi & (cs.n_gpus == s))})
        assert entries(rows_p2(pr, cs, L)) == want
        want = {}
        for ci, ch in enumerate(L.chunk_sizes):
            want.update({(ci, int(L.pcol[i])): 1.0 for i, (_, c, _) in enumerate(L.patterns) if c == ch})
            want.update({(ci, int(L.vcol[t])): -float(sp.count(ch)) for t, (_, sp) in enumerate(L.splits) if ch in sp})
            want.update({(ci, int(w)): -1.0 for w in np.asarray(L.wcol).reshape(-1, len(L.chunk_sizes))[:, ci]})
        assert entries(rows_p3(pr, cs, L)) == want
        sizes = [k for k in L.multi_sizes if k not in L.by_config]
        want = {}
        for ki, k in enumerate(sizes):
            want.update({(ki, int(L.vcol[t])): 1.0 for t, (kk, _) in enumerate(L.splits) if kk == k})
            want.update({(ki, int(c)): -1.0 for c in np.flatnonzero(L.moves & cs.multi & (cs.n_gpus == k))})
        assert entries(rows_p4(pr, cs, L)) == want
        checked += bool(L.splits) and bool(L.patterns)
    assert checked


def _two_spanning_jobs_share_nodes():
    """Three 8-GPU nodes: jobs 0 and 1 both span nodes 0-1 (2 + 2 and 1 + 1 GPUs), job 2 holds 3 GPUs on node 0,
    job 3 two on node 1; no node may keep both spanning jobs."""
    current = np.zeros((4, 3), np.int64)
    current[0, :2], current[1, :2], current[2, 0], current[3, 1] = 2, 1, 3, 2
    return make_problem([[1.0, 1.5, 2.0, 2.5]] * 4, capacity=[8, 8, 8], current=current)


@pytest.mark.parametrize("family", ["five-types-512", "mixed-64", "cluster-256", "two spanning jobs"])
def test_keep_choice_rows_match_their_definition(family):
    """Each node touched by keep configurations may keep any subset of them that fits its GPUs with at most one
    multi-node job among them: listed node by node (in the type's order), subsets by bit mask over its keep
    configurations (in configuration order), the same as enumerating each node on its own. (B1) gives each
    touched node one row (in node order) over its choices; (B2) one row per (keep configuration, touched node),
    sorted, holding +1 for each choice keeping it there and -1 for the configuration itself."""
    from itertools import compress

    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.pattern_block import block_layout, rows_b1, rows_b2

    def entries(family_rows):
        r, c, v = family_rows[:3]
        return dict(zip(zip(r.tolist(), c.tolist()), v.tolist()))

    pr = _two_spanning_jobs_share_nodes() if family == "two spanning jobs" else FAMILIES[family].scenario(0).problem()
    cs = enumerate_configs(pr)
    checked = 0
    for g in range(pr.n_gpu_types):
        nodes = np.flatnonzero(pr.node_type == g)
        L = block_layout(pr, cs, g, nodes, cs.n_configs + pr.n_jobs, 60_000)
        if L is None:
            continue
        keeps = np.flatnonzero((cs.gpu_type == g) & cs.keep)
        want, pairs = [], []
        for n in nodes.tolist():
            cl = [int(c) for c in keeps if pr.current[cs.job[c], n] > 0]
            pairs += [(c, n) for c in cl]
            for mask in range(1 << len(cl) if cl else 0):
                sub = tuple(compress(cl, [(mask >> i) & 1 for i in range(len(cl))]))
                used = sum(int(pr.current[cs.job[c], n]) for c in sub)
                n_multi = sum(bool(cs.multi[c]) for c in sub)
                if used <= pr.node_capacity[n] and n_multi <= 1:
                    want.append((n, sub, int(pr.node_capacity[n]) - used, n_multi == 1))
        K = L.keep
        subsets = [tuple(K.member_config[K.member_choice == i].tolist()) for i in range(K.n)]
        got = list(zip(K.node.tolist(), subsets, K.residual.tolist(), K.blocked.tolist()))
        assert got == want
        assert L.free.tolist() == [n for n in nodes.tolist() if n not in {m for m, *_ in want}]
        touched = sorted({n for n, *_ in want})
        assert entries(rows_b1(pr, cs, L)) == {(touched.index(n), int(L.bcol[i])): 1.0 for i, (n, *_) in enumerate(want)}
        row = {pq: i for i, pq in enumerate(sorted(pairs))}
        b2 = {(row[(c, n)], int(L.bcol[i])): 1.0 for i, (n, sub, *_) in enumerate(want) for c in sub}
        b2.update({(i, c): -1.0 for (c, _), i in row.items()})
        assert entries(rows_b2(pr, cs, L)) == b2
        checked += any(len(sub) > 1 for _, sub, *_ in want)
    assert checked  # some node keeps two or more configurations


@pytest.mark.parametrize("family", [pytest.param("mixed-64", marks=pytest.mark.slow), "hetero-16", "cluster-256",
                                    "two spanning jobs"])
def test_pattern_rows_as_inequalities_bound_and_solve_as_their_equality_form(family):
    """(P1), (B1) as <= and (B2), (P4) as >= only let GPUs go unused: the configuration model under every type's
    pattern rows has the LP bound and the optimum it has with those four families as equalities (the finite side
    pinned)."""
    from dataclasses import replace

    from goodopt.formulations.config_matrix import config_matrix
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.scaled_objective import reference_fitness, scaled_objective
    from goodopt.solvers.mip_solvers.highs_arrays import HighsSession

    pr = _two_spanning_jobs_share_nodes() if family == "two spanning jobs" else FAMILIES[family].scenario(0).problem()
    cs = enumerate_configs(pr)
    mm = config_matrix(pr, cs, scaled_objective(pr, cs, reference_fitness(pr, cs, None), None),
                       placement=range(pr.n_gpu_types))
    names = np.array(mm.names)
    slack = np.isin(names, ["P1", "B1", "B2", "P4"])
    assert slack.any() and not np.any(mm.row_lower[slack] == mm.row_upper[slack])
    pinned = np.where(np.isfinite(mm.row_lower), mm.row_lower, mm.row_upper)
    eq = replace(mm, row_lower=np.where(slack, pinned, mm.row_lower), row_upper=np.where(slack, pinned, mm.row_upper))
    for relax in (True, False):
        (a, _), (b, _) = HighsSession(mm).solve(relax=relax), HighsSession(eq).solve(relax=relax)
        assert a.termination == b.termination == Termination.OPTIMAL
        assert a.objective == pytest.approx(b.objective, rel=1e-9, abs=1e-9)


def _three_nodes_each_keep_one_gpu():
    """Three 4-GPU nodes, jobs 0-2 each running one GPU on its own node, job 3 not running: job 3 takes four GPUs
    on one node only if one of the others is released."""
    current = np.zeros((4, 3), np.int64)
    current[0, 0] = current[1, 1] = current[2, 2] = 1
    return make_problem([[1.0, 1.5, 1.8, 2.0]] * 4, capacity=[4, 4, 4], current=current)


@pytest.mark.parametrize("make", [_two_spanning_jobs_share_nodes, _three_nodes_each_keep_one_gpu])
def test_keeping_running_jobs_places_under_the_pattern_rows_exactly_when_the_check_places_it(make):
    """Every way of keeping or releasing the running jobs, with every configuration (or none) of the others: the
    model under the pattern rows, with that choice fixed, is feasible exactly when the placement check places
    it. Keeping a job holds its GPUs on every node of its row (no node keeps two spanning jobs; a node keeping
    a job has that much less for a move), and releasing it frees them."""
    from itertools import product

    from goodopt.formulations.config_matrix import config_matrix
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.scaled_objective import reference_fitness, scaled_objective

    pr = make()
    cs = enumerate_configs(pr)
    mm = config_matrix(pr, cs, scaled_objective(pr, cs, reference_fitness(pr, cs, None), None), placement=[0])
    options = [[-1, int(cs.keep_of_job[j])] if cs.keep_of_job[j] >= 0 else [-1, *np.flatnonzero(cs.job == j)]
               for j in range(pr.n_jobs)]
    verdicts = set()
    for choice in product(*options):
        chosen = np.array(choice)
        places = _check_places(pr, cs, chosen)
        assert (_fixed_choice_termination(mm, cs, chosen) == Termination.OPTIMAL) == places, choice
        verdicts.add(places)
    assert verdicts == {True, False}


def test_split_counts_match_the_listed_splits():
    """The count that decides whether a size's splits are listed equals the listing: every multiset of chunks of at
    most ``room`` GPUs summing to ``k``, at least two of them; None exactly when there are more than
    MAX_SPLITS_PER_SIZE (20 GPUs on 8-GPU nodes: 434 splits; 18: 288, listed)."""
    from goodopt.formulations.node_patterns import partitions
    from goodopt.formulations.pattern_block import MAX_SPLITS_PER_SIZE, n_partitions, splits_of

    for k in range(2, 30):
        for room in range(1, 10):
            top = max(min(k - 1, room), 1)
            listed = [sp for sp in partitions(k, top) if len(sp) >= 2]
            assert n_partitions(k, top) == sum(1 for _ in partitions(k, top))
            assert splits_of(k, room) == (None if len(listed) > MAX_SPLITS_PER_SIZE else tuple(listed))
            assert all(sum(sp) == k and max(sp) <= room and len(sp) >= 2 for sp in splits_of(k, room) or ())
    assert splits_of(20, 8) is None and len(splits_of(18, 8)) == 288
