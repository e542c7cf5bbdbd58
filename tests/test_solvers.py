"""Solvers against ground truth: brute force, hand-derived optima, their own claims."""

import dataclasses

import numpy as np
import pytest
from goodopt.solvers import Termination
from goodopt.solvers.milp import objective_to_fitness
from hypothesis import example, given, settings
from hypothesis import strategies as st

import goodopt
from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import ValidationError
from goodopt.families import FAMILIES, GREEDY_SUBOPTIMAL, family_scenario
from goodopt.generate import random_scenario
from goodopt.scenario import Objective

from .synthetic import make_problem

P_VALUES = [-np.inf, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0]
TOL = 1e-6


def tiny_problem(seed, n_nodes, cap, n_jobs, p, two_types, interference):
    if two_types and n_nodes > 1:
        groups = (NodeGroup("t4", cap, n_nodes - 1), NodeGroup("a100", cap, 1))
    else:
        groups = (NodeGroup("t4", cap, n_nodes),)
    sc = random_scenario(seed, Cluster(groups), n_jobs, running_fraction=0.7,
                         objective=Objective(p=p, interference_avoidance=interference))
    return sc.problem()


tiny = st.builds(
    tiny_problem, seed=st.integers(0, 10_000), n_nodes=st.integers(1, 3), cap=st.integers(1, 4),
    n_jobs=st.integers(1, 4), p=st.sampled_from(P_VALUES), two_types=st.booleans(), interference=st.booleans(),
)


def reference(res):
    """The reference fitness the exact model's objective was scaled to (None at p = +-inf)."""
    return res.extra.get("objective_scale", {}).get("reference")


def close(a, b, tol=TOL):
    return abs(a - b) <= tol * max(1.0, abs(b))


@settings(max_examples=40)
@given(tiny)
# regression: a warm start without the epigraph variable's value made HiGHS stop at a wrong optimum
@example(tiny_problem(0, 3, 2, 2, -np.inf, True, False))
# regression: HiGHS presolve returned a sub-optimal "optimal" on this two-type epigraph model
@example(tiny_problem(569, 2, 3, 3, -np.inf, True, False))
# regression: HiGHS 1.16 let the epigraph variable exceed the smallest speedup by its 1e-6 feasibility tolerance
@example(tiny_problem(259, 2, 3, 4, -np.inf, True, False))
def test_milp_equals_brute_force(pr):
    bf = goodopt.solve(pr, "brute-force")
    assert bf.status == Termination.OPTIMAL
    for formulation in ("auto", "placement"):
        res = goodopt.solve(pr, "milp", {"formulation": formulation})
        assert res.status == Termination.OPTIMAL, res.extra
        assert res.feasible
        assert close(res.fitness, bf.fitness), (formulation, res.fitness, bf.fitness)
        assert res.bound >= bf.fitness * (1 - TOL) - 1e-12


@settings(max_examples=25)
@given(tiny)
def test_heuristics_feasible_and_never_above_optimum(pr):
    opt = goodopt.solve(pr, "brute-force").fitness
    for method, opts in [("greedy", {}), ("equal-share", {}), ("milp-pwl", {"breakpoints": 3}),
                         ("ga", {"seed": 1, "pop_size": 20, "n_gen": 10})]:
        res = goodopt.solve(pr, method, opts)
        assert res.has_solution and res.feasible, (method, res.violations)
        assert res.fitness <= opt * (1 + TOL) + 1e-12, method
        if np.isfinite(res.bound):  # a stated bound must be valid
            assert res.bound >= opt * (1 - TOL) - 1e-12, method


def test_hand_derived_two_jobs_one_node():
    # One node with 4 GPUs, two new jobs (re-allocation factor 1), eps = 1e-3.
    # Job 0 scales well: S = 1.0, 1.8, 2.4, 2.8 at k = 1..4; job 1 poorly: 1.0, 1.2, 1.3, 1.35.
    # Feasible splits (k0, k1) using all GPUs: (4,0) (3,1) (2,2) (1,3) (0,4).
    # p = 1 (mean of S + eps): (3,1) gives (2.4 + 1.0)/2 = 1.70, better than (2,2) 1.50 and (4,0) 1.40.
    # p = -1 (harmonic mean): (2,2) gives 2/(1/1.8 + 1/1.2) = 1.44, better than (3,1) 1.4118;
    #   any split leaving a job at 0 scores about 2 eps. Fairness moves one GPU to job 1.
    single = [[1.0, 1.8, 2.4, 2.8], [1.0, 1.2, 1.3, 1.35]]
    eps = 1e-3
    pr = make_problem(single, capacity=[4], p=1.0, eps=eps)
    res = goodopt.solve(pr, "milp")
    assert res.status == Termination.OPTIMAL
    assert res.x[:, 0].tolist() == [3, 1]
    assert close(res.fitness, (2.4 + 1.0 + 2 * eps) / 2, 1e-12)
    pr = make_problem(single, capacity=[4], p=-1.0, eps=eps)
    res = goodopt.solve(pr, "milp")
    assert res.x[:, 0].tolist() == [2, 2]
    assert close(res.fitness, 2 / (1 / (1.8 + eps) + 1 / (1.2 + eps)), 1e-12)


def test_greedy_not_optimal_on_superlinear_job():
    # Job 0 jumps at 4 GPUs (S = 1, 1.05, 1.1, 3.0); job 1 saturates (1, 1.1, 1.15). p = 1, one node of 4.
    # Optimum: job 0 takes all 4 GPUs, mean = (3.0 + 0)/2 + eps. Greedy buys the first GPUs at the best
    # ratio (1 per GPU each), after which job 0's jump no longer fits: (1, 3) or (2, 2) -> 2.15 / 2.
    pr = make_problem([[1.0, 1.05, 1.1, 3.0], [1.0, 1.1, 1.15]], capacity=[4], p=1.0)
    opt = goodopt.solve(pr, "milp")
    gr = goodopt.solve(pr, "greedy")
    assert opt.x[:, 0].tolist() == [4, 0]
    assert gr.fitness < opt.fitness - 0.3


@pytest.mark.parametrize("seed", GREEDY_SUBOPTIMAL["tiny"])
def test_family_keeps_greedy_suboptimal_instances(seed):
    pr = FAMILIES["tiny"].scenario(seed).problem()
    opt = goodopt.solve(pr, "milp")
    assert opt.status == Termination.OPTIMAL
    assert goodopt.solve(pr, "greedy").fitness < opt.fitness * (1 - 1e-6)


def test_job_without_gpus_contributes_eps_power():
    # 1 GPU, 2 identical jobs, p = -1: one job must stay at 0 and contributes (0 + eps)^-1.
    eps = 1e-3
    pr = make_problem([[2.0], [2.0]], capacity=[1], p=-1.0, eps=eps)
    res = goodopt.solve(pr, "milp")
    assert res.x.sum() == 1
    assert close(res.fitness, 2 / (1 / (2.0 + eps) + 1 / eps), 1e-12)
    assert close(objective_to_fitness(pr, res.objective, reference(res)), res.fitness, 1e-9)


@pytest.mark.parametrize("name,p", [("small-2node", p) for p in P_VALUES + [np.inf]]
                         + [("family:testbed-under:0", -1.0), ("family:testbed-over:0", -1.0)])
def test_milp_objective_agrees_with_evaluator(name, p):
    pr = goodopt.load_scenario(name).with_objective(p=p).problem()
    res = goodopt.solve(pr, "milp", {"time_limit_s": 30})
    assert res.status == Termination.OPTIMAL and res.feasible
    assert "proof" in res.extra  # the model's own solution was returned
    assert close(objective_to_fitness(pr, res.objective, reference(res)), res.fitness, 1e-7)


def test_pwl_error_bound_holds_at_every_integer_count(testbed):
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.pwl import pwl_classes, step_function

    pr = testbed.problem()
    cs = enumerate_configs(pr)
    for n_break in (2, 4, 8):
        for spacing in ("uniform", "adaptive"):
            for cl in pwl_classes(pr, cs, n_break, spacing):
                counts, f, _ = step_function(pr, cs, cl.configs)
                # independent check: linear interpolation evaluated segment by segment
                worst = 0.0
                for a, b, fa, fb in zip(cl.breaks[:-1], cl.breaks[1:], cl.values[:-1], cl.values[1:]):
                    for n in range(a, b + 1):
                        lin = fa + (fb - fa) * (n - a) / (b - a)
                        worst = max(worst, abs(lin - f[n - counts[0]]))
                assert worst <= cl.error + 1e-12
                assert len(cl.breaks) <= max(n_break, 2)


def test_pwl_more_breakpoints_never_loosen_adaptive_error(testbed):
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.pwl import pwl_classes

    pr = testbed.problem()
    cs = enumerate_configs(pr)
    errs = [max(c.error for c in pwl_classes(pr, cs, k, "adaptive")) for k in (2, 4, 8, 16, 64)]
    assert errs[-1] == 0.0  # every count is a breakpoint
    assert errs[0] > 0


def test_pwl_user_breakpoints(testbed):
    pr = testbed.problem()
    res = goodopt.solve(pr, "milp-pwl", {"breakpoints": [1, 2, 4, 8, 16, 32]})
    assert res.feasible and res.extra["pwl_error_bound"] >= 0
    exact = goodopt.solve(pr, "milp", {"formulation": "config"})
    assert res.bound >= exact.bound * (1 - TOL)  # both are valid upper bounds; PWL's is looser
    with pytest.raises(ValidationError, match="breakpoints"):
        goodopt.solve(pr, "milp-pwl", {"breakpoints": [0, 3]})


def test_ga_same_seed_same_result(testbed):
    pr = testbed.problem()
    opts = {"seed": 7, "pop_size": 30, "n_gen": 15}
    a = goodopt.solve(pr, "ga", opts)
    b = goodopt.solve(pr, "ga", opts)
    assert np.array_equal(a.x, b.x) and a.fitness == b.fitness
    assert a.feasible


def test_ga_improves_on_its_start_and_warm_start_from_milp(testbed):
    pr = testbed.problem()
    ev = pr.evaluator()
    ga = goodopt.solve(pr, "ga", {"seed": 0, "n_gen": 30})
    assert ga.fitness > ev.fitness(pr.current)
    opt = goodopt.solve(pr, "milp", {"formulation": "config"})
    warm = goodopt.solve(pr, "ga", {"seed": 0, "n_gen": 5, "warm_start": opt.x})
    assert warm.fitness >= opt.fitness - 1e-12  # elitist: the warm start survives


def test_the_ga_runs_over_configurations_at_scale_from_lp_rounding():
    """five-types-512 has 205 jobs x 96 nodes, past the dense population's reach: ``engine: auto`` runs the GA
    over job configurations, started from LP rounding. It ends feasible, at or above that start and below
    the certified optimum, in a fraction of the dense GA's memory; the same seed gives the same answer."""
    from goodopt.solvers.rounding import lp_rounding

    pr = FAMILIES["five-types-512"].scenario(0).problem()
    ev = pr.evaluator()
    opts = {"seed": 3, "n_gen": 5, "pop_size": 10}
    a = goodopt.solve(pr, "ga", opts)
    assert a.extra["engine"] == "configs" and a.feasible
    start = ev.fitness(lp_rounding(pr, ev))
    assert start - 1e-12 <= a.fitness <= goodopt.solve(pr, "milp").fitness + 1e-12
    assert np.array_equal(goodopt.solve(pr, "ga", opts).x, a.x)
    # below the threshold the allocation GA runs, seeded by greedy as before
    small = goodopt.solve(FAMILIES["sia-64"].scenario(0).problem(), "ga", {"seed": 0, "n_gen": 2, "pop_size": 4})
    assert "engine" not in small.extra and small.stats.solver.startswith("pymoo")
    with pytest.raises(ValidationError, match="engine"):
        goodopt.solve(pr, "ga", {"seed": 0, "engine": "sparse"})


def test_a_rounded_lp_optimum_that_reaches_the_lp_bound_is_certified_without_the_milp():
    """cluster-256 (102 jobs x 32 nodes): the LP relaxation under every type's node-pattern rows rounds to an
    allocation that reaches its bound, so the exact method stops there, with the optimum the full pipeline
    certifies (lp_rounding: false)."""
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    fast = goodopt.solve(pr, "milp")
    assert fast.status == Termination.OPTIMAL and "LP relaxation" in fast.extra["proof"]
    solved = [st["model"] for st in fast.extra["stages"] if not st["model"].startswith("placement-check")]
    assert solved == ["config + pattern rows (every type), LP relaxation"]  # the exact placement checks aside
    full = goodopt.solve(pr, "milp", {"lp_rounding": False})
    assert full.status == Termination.OPTIMAL and "LP relaxation" not in full.extra["proof"]
    assert abs(fast.fitness - full.fitness) <= 1e-9 * full.fitness and fast.bound >= full.fitness - 1e-9


def test_a_dive_from_the_lp_adds_a_placed_candidate_and_never_a_bound():
    """mixed-64 seed 0 (38 jobs): the LP under every type's pattern rows splits some jobs; the dive keeps every
    other job's LP choice and lets a small MILP choose for the split ones. Its answer is a feasible candidate
    at or below the certified optimum, and its stage records no bound (the fixing is a restriction)."""
    pr = FAMILIES["mixed-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"lp_rounding": True})
    assert res.status == Termination.OPTIMAL
    dives = [st for st in res.extra["stages"] if st["model"].startswith("LP dive")]
    assert dives and all(np.isnan(st["fitness_bound"]) for st in dives)
    assert all(st["fitness"] <= res.fitness * (1 + 1e-9) for st in dives)
    assert dives[0]["fitness"] >= 0.99 * res.fitness  # 1.5409 against 1.5416
    plain = goodopt.solve(pr, "milp", {"lp_rounding": False})
    assert abs(plain.fitness - res.fitness) <= 1e-6 * res.fitness


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_matrix_from_triplets_sums_repeated_entries_and_orders_them_by_column_then_row(seed):
    """Triplets in several blocks, each ordered by column (as the model builders give them), with repeated
    (row, column) pairs: the compressed columns hold every pair once, rows ascending within a column, its value
    the sum of its entries; checked against a dense matrix built entry by entry."""
    from goodopt.formulations.matrix import CscArrays
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 7)), int(rng.integers(1, 9))
    blocks = []
    for _ in range(int(rng.integers(0, 4))):
        k = int(rng.integers(0, 12))
        cols = np.sort(rng.integers(0, n, k))
        blocks.append((rng.integers(0, m, k), cols, rng.normal(size=k) * 10.0 ** rng.integers(-6, 7, k)))
    rows, cols, vals = (np.concatenate([b[i] for b in blocks]) if blocks else np.zeros(0) for i in range(3))
    A = CscArrays.from_triplets(rows.astype(np.int64), cols.astype(np.int64), vals.astype(float), (m, n))
    dense = np.zeros((m, n))
    present = np.zeros((m, n), bool)
    for r, c, v in zip(rows.astype(int), cols.astype(int), vals):
        dense[r, c] += v
        present[r, c] = True
    assert A.indptr[0] == 0 and A.indptr[-1] == present.sum() and np.all(np.diff(A.indptr) == present.sum(axis=0))
    for c in range(n):
        idx = A.indices[A.indptr[c]:A.indptr[c + 1]]
        assert list(idx) == list(np.flatnonzero(present[:, c]))
        assert np.array_equal(A.data[A.indptr[c]:A.indptr[c + 1]], dense[idx, c])


def test_a_restricted_matrix_model_is_the_model_with_its_fixed_columns_moved_to_the_row_bounds():
    from goodopt.formulations.matrix import CscArrays, MatrixModel
    rng = np.random.default_rng(3)
    dense = rng.normal(size=(5, 9)) * (rng.random((5, 9)) < 0.5)
    rows, cols = np.nonzero(dense)
    A = CscArrays.from_triplets(rows, cols, dense[rows, cols], dense.shape)
    x = rng.normal(size=9)
    assert np.allclose(A.matvec(x), dense @ x)
    pick = np.array([4, 0, 4, 8])
    sub_a = A.columns(pick)
    back = np.zeros(sub_a.shape)
    for j in range(len(pick)):
        back[sub_a.indices[sub_a.indptr[j]:sub_a.indptr[j + 1]], j] = sub_a.data[sub_a.indptr[j]:sub_a.indptr[j + 1]]
    assert np.allclose(back, dense[:, pick])
    mm = MatrixModel(cost=rng.normal(size=9), lower=np.zeros(9), upper=np.full(9, 3.0), integer=np.ones(9, bool),
                     A=A, row_lower=np.full(5, -1.0), row_upper=np.full(5, 4.0), names=("R",) * 5, n_configs=9,
                     epigraph=False)
    lower, upper = mm.lower.copy(), mm.upper.copy()
    lower[[1, 5]] = upper[[1, 5]] = [2.0, 1.0]
    sub, free, x_fixed = mm.restricted(lower, upper)
    assert list(free) == [0, 2, 3, 4, 6, 7, 8] and x_fixed[1] == 2.0 and x_fixed[5] == 1.0
    y = rng.normal(size=len(free))
    full = x_fixed.copy()
    full[free] = y
    assert np.allclose(dense @ full - sub.A.matvec(y), mm.row_lower - sub.row_lower)
    assert np.isclose(mm.cost @ full, mm.cost @ x_fixed + sub.cost @ y)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_lagrangian_bounds_hold_for_every_binary_point_and_any_multipliers(seed):
    """For any row multipliers y, L bounds cost.x over every 0/1 point within the rows, and L_c every such point
    with x_c = 1: checked by enumerating all 2^8 points of random small models, with y drawn at random (of
    either sign, some rows unbounded on one side) and the LP's own duals alike."""
    import itertools

    from goodopt.formulations.matrix import CscArrays, MatrixModel
    from goodopt.solvers.highs_arrays import HighsSession
    from goodopt.solvers.milp.reduce import lagrangian_bounds
    rng = np.random.default_rng(seed)
    m, n = 4, 8
    dense = rng.integers(-2, 4, size=(m, n)) * (rng.random((m, n)) < 0.6)
    rows, cols = np.nonzero(dense)
    A = CscArrays.from_triplets(rows, cols, dense[rows, cols].astype(float), (m, n))
    lo = np.where(rng.random(m) < 0.3, -np.inf, -rng.integers(0, 3, m).astype(float))
    hi = rng.integers(1, 6, m).astype(float)
    mm = MatrixModel(cost=rng.normal(size=n), lower=np.zeros(n), upper=np.ones(n), integer=np.ones(n, bool), A=A,
                     row_lower=lo, row_upper=hi, names=("R",) * m, n_configs=n, epigraph=False)
    session = HighsSession(mm, highs_options={"presolve": "off"})
    session.solve(relax=True)
    duals = [rng.normal(size=m), np.abs(rng.normal(size=m))]
    if session.lp_row_dual is not None:
        duals += [session.lp_row_dual, -session.lp_row_dual]
    points = np.array(list(itertools.product((0.0, 1.0), repeat=n)))
    act = points @ dense.T
    feasible = points[np.all((act >= lo - 1e-9) & (act <= hi + 1e-9), axis=1)]
    for y in duals:
        total, per_column = lagrangian_bounds(mm, y)
        for x in feasible:
            value = float(mm.cost @ x)
            assert value <= total + 1e-9
            assert np.all(value <= per_column[x == 1] + 1e-9)


def test_reduced_cost_fixing_drops_configurations_and_keeps_the_optimum_and_a_valid_bound():
    """mixed-64 seed 0, starting from the LP under every type's pattern rows: its duals bound every allocation
    that uses a configuration, and most configurations bound below the best candidate. They are dropped
    before the configuration MILP; the answer is the optimum the full pipeline certifies (lp_rounding:
    false), and what was dropped is worth less than the answer."""
    pr = FAMILIES["mixed-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"lp_rounding": True})
    fixing = res.extra["reduced_cost_fixing"]
    assert res.status == Termination.OPTIMAL
    assert fixing["dropped_configs"] > 0.5 * res.extra["n_configs"]  # 1,884 of 2,080
    assert fixing["bound_of_dropped"] < fixing["incumbent"] <= res.fitness <= res.bound
    dives = [st for st in res.extra["stages"] if st["model"].startswith("reduced-cost dive")]
    assert dives and all(st["fitness"] <= res.fitness * (1 + 1e-9) for st in dives)
    plain = goodopt.solve(pr, "milp", {"lp_rounding": False})
    assert "reduced_cost_fixing" not in plain.extra
    assert abs(plain.fitness - res.fitness) <= 1e-6 * res.fitness and res.bound >= plain.fitness * (1 - 1e-6)


@pytest.mark.parametrize("family, seed", [("mixed-64", 0), ("sia-64", 2)])
def test_a_configuration_milp_past_its_node_budget_goes_on_under_every_types_pattern_rows(monkeypatch, family, seed):
    """After the LP under every GPU type's node-pattern rows, the configuration MILP without them has a node budget
    of its own (on five-types-2048 seed 5 it took 7,320 nodes, 74 s); past it the level goes on under every type's
    rows. With a budget of 0 nodes that path is taken at once: its optimum places by construction and is the one
    the pipeline certifies without the budget."""
    from goodopt.solvers.milp import levels
    pr = FAMILIES[family].scenario(seed).problem()
    reference = goodopt.solve(pr, "milp", {"lp_rounding": True})
    monkeypatch.setattr(levels, "PLAIN_CONFIG_NODES", 0)
    monkeypatch.setattr(levels, "EVERY_TYPE_FIRST_RATIO", 0.0)  # the MILP without pattern rows runs first
    res = goodopt.solve(pr, "milp", {"lp_rounding": True})
    stages = {st["model"]: st for st in res.extra["stages"]}
    assert stages["config"]["status"] == "iteration_limit"
    every = "config + pattern rows (" + ", ".join(pr.type_names) + ")"
    assert every in stages or f"{every}, LP relaxation" in stages, sorted(stages)
    assert res.status == Termination.OPTIMAL, res.message
    assert abs(res.fitness - reference.fitness) <= 1e-6 * reference.fitness
    assert res.bound >= reference.fitness * (1 - 1e-6) and reference.bound >= res.fitness * (1 - 1e-6)


@pytest.mark.parametrize("family, seed", [("mixed-64", 0), ("sia-64", 2)])
def test_the_configuration_level_starts_under_every_types_pattern_rows_when_few_configurations_are_left(
        monkeypatch, family, seed):
    """When reduced costs leave few configurations beside those the reduced-cost dive held open under every
    type's pattern rows (EVERY_TYPE_FIRST_RATIO), the configuration MILP is built under those rows at once: no
    MILP without them runs, and its optimum, which places by construction, is the one the pipeline certifies
    the other way. With the ratio at 0 the MILP without pattern rows runs first."""
    from goodopt.solvers.milp import levels
    pr = FAMILIES[family].scenario(seed).problem()
    monkeypatch.setattr(levels, "EVERY_TYPE_FIRST_RATIO", 0.0)
    plain_first = goodopt.solve(pr, "milp", {"lp_rounding": True})
    monkeypatch.setattr(levels, "EVERY_TYPE_FIRST_RATIO", np.inf)
    res = goodopt.solve(pr, "milp", {"lp_rounding": True})
    solved = [st["model"] for st in res.extra["stages"]]
    assert res.extra["stages"][0]["model"].endswith("(every type), LP relaxation")
    assert "config + pattern rows (every type)" in solved and "config" not in solved, solved  # the dive did not end it
    assert "config" in [st["model"] for st in plain_first.extra["stages"]]
    assert res.status == plain_first.status == Termination.OPTIMAL, res.message
    assert abs(res.fitness - plain_first.fitness) <= 1e-6 * plain_first.fitness
    assert res.bound >= plain_first.fitness * (1 - 1e-6) and plain_first.bound >= res.fitness * (1 - 1e-6)


def test_a_reduced_cost_dive_that_reaches_its_bound_ends_the_solve():
    """sia-64 seed 0 from the LP under every type's pattern rows: the dive over the configurations whose L_c lies
    near the LP bound finds an allocation that reaches max(its own MILP's bound, the closed configurations' L_c),
    a bound on every allocation, so no configuration MILP follows; the optimum is the one the full pipeline
    certifies (lp_rounding: false). With HiGHS's restart on in the dive, HiGHS 1.16 called 1.7206171 optimal
    here, below the 1.7206277 of lp_rounding: false (run.without_restart)."""
    pr = FAMILIES["sia-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"lp_rounding": True})
    assert res.status == Termination.OPTIMAL and res.extra["proof"].startswith("the reduced-cost dive")
    solved = [st["model"] for st in res.extra["stages"] if not st["model"].startswith("placement-check")]
    assert solved[-1].startswith("reduced-cost dive") and "config" not in solved
    plain = goodopt.solve(pr, "milp", {"lp_rounding": False})
    assert abs(plain.fitness - res.fitness) <= 1e-6 * res.fitness
    assert res.bound >= plain.fitness * (1 - 1e-9) and plain.bound >= res.fitness * (1 - 1e-9)


@pytest.mark.slow
def test_from_the_plain_lp_the_reduced_cost_dive_leaves_no_configuration_milp_to_solve():
    """Below 2,000 job-node pairs the dive from the configuration level's own LP opens every configuration whose
    reduced-cost bound reaches the best candidate: the set the configuration MILP would be built on. Its
    optimum placing, nothing is left to solve. sia-64 seeds 0-3, both objectives: every solve ends with that
    dive at the latest (with a tenth of the gap, six of the eight went on to the configuration MILP), at the
    optimum lp_rounding: false certifies, and the proof names the bound that certified it."""
    import dataclasses

    from goodopt.objective import Objective
    for seed in range(4):
        for sia in (False, True):
            sc = FAMILIES["sia-64"].scenario(seed)
            pr = (dataclasses.replace(sc, objective=Objective.sia()) if sia else sc).problem()
            res = goodopt.solve(pr, "milp")
            solved = [st["model"] for st in res.extra["stages"] if not st["model"].startswith("placement-check")]
            assert res.status == Termination.OPTIMAL and solved[0] == "config, LP relaxation"
            assert "config" not in solved, solved
            assert ("reduced-cost dive" in res.extra["proof"]) == any(m.startswith("reduced-cost") for m in solved)
            full = goodopt.solve(pr, "milp", {"lp_rounding": False})
            assert abs(full.fitness - res.fitness) <= 1e-6 * res.fitness
            assert res.bound >= full.fitness * (1 - 1e-9) and full.bound >= res.fitness * (1 - 1e-9)


def test_the_plain_dive_runs_without_feasibility_jump_unless_the_user_sets_it(monkeypatch):
    """The dive over every configuration whose bound reaches the best candidate starts from that candidate; HiGHS's
    search for a first feasible point is off there (FEASIBILITY_JUMP in solvers/milp/dive.py), unless
    ``highs_options`` names it; the answer is the same either way (sia-64 seed 0, both objectives)."""
    import dataclasses

    import goodopt.solvers.milp.dive as dive

    from goodopt.objective import Objective

    seen = []

    class Recording(dive.ArrayModel):
        def __init__(self, *args, highs_options=None, **kw):
            seen.append(dict(highs_options or {}))
            super().__init__(*args, highs_options=highs_options, **kw)

    monkeypatch.setattr(dive, "ArrayModel", Recording)
    for objective in (None, Objective.sia()):
        sc = FAMILIES["sia-64"].scenario(0)
        pr = (dataclasses.replace(sc, objective=objective) if objective else sc).problem()
        seen.clear()
        ours = goodopt.solve(pr, "milp")
        assert seen and seen[-1][dive.FEASIBILITY_JUMP] is False and seen[-1]["presolve"] == "on"
        seen.clear()
        theirs = goodopt.solve(pr, "milp", {"highs_options": {dive.FEASIBILITY_JUMP: True}})
        assert seen and seen[-1][dive.FEASIBILITY_JUMP] is True
        assert ours.status == theirs.status == Termination.OPTIMAL
        assert abs(ours.fitness - theirs.fitness) <= 1e-6 * ours.fitness


def test_greedy_stops_at_its_deadline_with_a_feasible_allocation():
    """A deadline already past: greedy stops at its first look at the clock (16 steps) with what it has built,
    which is feasible; no deadline, or a far one, gives the full greedy, step for step."""
    import time

    from goodopt.formulations.configs import enumerate_configs
    from goodopt.solvers.heuristics import greedy
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    cs = enumerate_configs(pr)
    full = greedy(pr, cs)
    cut = greedy(pr, cs, deadline=time.perf_counter())
    far = greedy(pr, cs, deadline=time.perf_counter() + 3600)
    assert cut[2] == 16 < full[2] and pr.evaluator().violation(cut[0]) == 0
    assert pr.evaluator().fitness(cut[0]) < pr.evaluator().fitness(full[0])
    assert far[2] == full[2] and np.array_equal(far[0], full[0])


def _greedy_recomputed(pr, cs, start):
    """Greedy's rule written out step by step, every entry recomputed at each step (the reference for the
    incremental bookkeeping): among the configurations that gain on their job's current one, were not found
    unplaceable and pass the aggregate capacity filter, try the best gains per extra GPU (ties by index) until
    one places."""
    from goodopt.formulations.configs import match_configs
    from goodopt.formulations.objective import log_terms
    from goodopt.solvers.heuristics import _MAX_TRIES_PER_STEP, _log_ratio, _State, _top_stable
    st = _State(pr, cs, start)
    if start is not None:
        st.chosen = match_configs(pr, cs, st.alloc)
    lt_cfg, lt_idle = log_terms(pr, cs)
    dead, steps, types = np.zeros(cs.n_configs, bool), 0, np.arange(pr.n_gpu_types)
    while True:
        cur = st.chosen[cs.job]
        lt_cur = np.where(cur >= 0, lt_cfg[np.maximum(cur, 0)], lt_idle[cs.job])
        k_cur = np.where(cur >= 0, cs.n_gpus[np.maximum(cur, 0)], 0)
        ratio = _log_ratio(pr, cs, lt_cur, lt_cfg, pr.weights[cs.job], k_cur, slice(None))
        own = np.where((cur >= 0) & (cs.gpu_type[np.maximum(cur, 0)] == cs.gpu_type), k_cur, 0)
        of_type = pr.node_type[None, :] == types[:, None]
        free_tot, free_max = (of_type * st.free).sum(axis=1), (of_type * st.free).max(axis=1)
        fits = (cs.n_gpus <= free_tot[cs.gpu_type] + own) & (
            cs.multi | cs.keep | (cs.n_gpus <= free_max[cs.gpu_type] + own))
        cand = np.flatnonzero((lt_cfg - lt_cur > 1e-12) & ~dead & fits)
        if not len(cand):
            return st.alloc, st.chosen, steps
        moved = False
        for c in cand[_top_stable(-ratio[cand], _MAX_TRIES_PER_STEP)]:
            moved = st.try_set(int(cs.job[c]), int(c))
            if moved:
                break
            dead[c] = True
        steps += 1
        if not moved and len(cand) <= _MAX_TRIES_PER_STEP:
            return st.alloc, st.chosen, steps


@pytest.mark.parametrize("family,objective,p", [("hetero-16", "own", None), ("sia-64", "sia", None),
                                                ("mixed-64", "own", -8.0), ("testbed-over", "own", 0.5),
                                                ("cluster-256", "own", None), ("sia-64", "own", float("-inf"))])
def test_greedy_keeps_its_ranking_one_job_at_a_time_and_does_what_recomputing_it_does(family, objective, p):
    # greedy updates only the moved job's entries; from nothing and from half the jobs' current rows, on one and
    # on several GPU types and over the p range, it takes the same steps to the same allocation as the rule
    # recomputed in full at every step
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.solvers.heuristics import greedy

    from goodopt.bench.solvers import exact_problem
    pr = exact_problem(family, objective, 1)
    if p is not None:
        pr = dataclasses.replace(pr, p=p)
    cs = enumerate_configs(pr)
    half = pr.current * (np.arange(pr.n_jobs) % 2 == 0)[:, None]
    for start in (None, half):
        ours, theirs = greedy(pr, cs, start=start), _greedy_recomputed(pr, cs, start)
        assert ours[2] == theirs[2] > 0
        assert np.array_equal(ours[0], theirs[0]) and np.array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("method", ["milp", "milp-pwl"])
def test_a_timed_solve_returns_greedys_whole_start_and_its_repairs_stop_at_the_deadline(monkeypatch, method):
    """cluster-2048 with a 0.05 s limit: the LP relaxation cannot finish, so greedy builds the first candidate,
    and runs to its end whatever the limit (cut at the deadline it once gave a few jobs' allocation: 0.05% of
    the optimum on five-types-2048); after the configuration model, greedy repairs its unplaced choice (or the
    PWL model's decoding) and that run gets the solve's deadline (it had none: 1.2 s of greedy after a 0.05 s
    limit). The answer is the time limit's, feasible, and at least greedy's own."""
    from goodopt.solvers.milp import levels, pwl
    from goodopt.solvers.milp import method as milp_method

    calls = []

    def spy(original):
        def wrapped(*args, **kwargs):
            calls.append((kwargs.get("start") is not None, kwargs.get("deadline")))
            return original(*args, **kwargs)
        return wrapped

    for module in (levels, milp_method, pwl):
        monkeypatch.setattr(module, "greedy", spy(module.greedy))
    pr = FAMILIES["cluster-2048"].scenario(0).problem()
    res = goodopt.solve(pr, method, {"time_limit_s": 0.05})
    assert res.status == Termination.TIME_LIMIT and res.has_solution and res.feasible
    starts = [d for repair, d in calls if not repair]
    assert starts == [None] and all(d is not None for repair, d in calls if repair)
    assert res.fitness >= goodopt.solve(pr, "greedy").fitness * (1 - 1e-12)


@pytest.mark.parametrize("limit", [1e-6, 0.01, 0.1])
@pytest.mark.parametrize("family", ["sia-64", "hetero-16", "five-types-512"])
def test_whatever_the_time_limit_milp_answers_at_least_greedys_start(family, limit):
    pr = FAMILIES[family].scenario(1).problem()
    res = goodopt.solve(pr, "milp", {"time_limit_s": limit})
    assert res.has_solution and res.feasible and res.status in (Termination.TIME_LIMIT, Termination.OPTIMAL)
    assert res.fitness >= goodopt.solve(pr, "greedy").fitness * (1 - 1e-12)


def test_a_pwl_solve_out_of_time_does_not_build_its_model():
    # the limit passes while the configurations are listed: the PWL model (0.7 s to build at 2048 GPUs) is
    # skipped, and the solve says so with the time limit's status and greedy's allocation (stopped at the
    # deadline: feasible) as its incumbent
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    res = goodopt.solve(pr, "milp-pwl", {"time_limit_s": 1e-9})
    assert res.status == Termination.TIME_LIMIT and res.has_solution and res.feasible
    assert res.extra["stages"][-1]["status"].startswith("skipped: time limit")
    assert res.extra["incumbent"] == "greedy"


def test_a_configuration_subset_keeps_jobs_sorted_and_maps_keep_configurations():
    from goodopt.formulations.configs import enumerate_configs
    pr = FAMILIES["mixed-64"].scenario(1).problem()
    cs = enumerate_configs(pr)
    mask = np.random.default_rng(0).random(cs.n_configs) < 0.3
    sub = cs.subset(mask)
    assert sub.n_configs == mask.sum() and np.all(np.diff(sub.job) >= 0)
    assert np.array_equal(sub.speedup, cs.speedup[mask])
    for j in range(pr.n_jobs):
        assert np.array_equal(sub.gpu_type[sub.of_job(j)], cs.gpu_type[cs.of_job(j)][mask[cs.of_job(j)]])
        k = sub.keep_of_job[j]
        was = cs.keep_of_job[j]
        assert (k >= 0) == (was >= 0 and mask[was])
        if k >= 0:
            assert sub.keep[k] and sub.job[k] == j


def test_a_thread_count_beyond_any_machine_is_refused_before_highs_allocates_it():
    """HiGHS sizes its pool up front: 1e8 threads ended in std::bad_alloc inside the solve (a traceback),
    for milp and for the GA's LP-rounded start alike."""
    pr = FAMILIES["tiny"].scenario(0).problem()
    for method, opts in (("milp", {}), ("nsga2", {"seed": 0}), ("ga", {"seed": 0})):
        with pytest.raises(ValidationError, match=r"options\.threads.*at most the machine's cores"):
            goodopt.solve(pr, method, {**opts, "threads": 10**8})
    assert goodopt.solve(pr, "milp", {"threads": 2}).status == Termination.OPTIMAL


@pytest.mark.slow
def test_milp_warm_start_from_ga_is_accepted(testbed):
    pr = testbed.problem()
    ga = goodopt.solve(pr, "ga", {"seed": 0, "n_gen": 10, "pop_size": 30})
    res = goodopt.solve(pr, "milp", {"warm_start": ga.x, "formulation": "placement", "time_limit_s": 2})
    assert res.has_solution and res.feasible
    assert res.fitness >= ga.fitness - 1e-12
    assert res.extra["warm_start"] in ("user", "greedy")
    named = goodopt.solve(pr, "milp", {"warm_start": "ga", "seed": 0, "formulation": "placement", "time_limit_s": 2})
    assert named.has_solution and named.feasible
    with pytest.raises(ValidationError, match="warm_start"):
        goodopt.solve(pr, "milp", {"warm_start": "milp"})


def test_placement_model_time_limit_before_solving_is_reported():
    pr = FAMILIES["cluster-256"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"formulation": "placement", "time_limit_s": 0.05})
    assert res.status == Termination.TIME_LIMIT
    assert res.has_solution and res.feasible  # the greedy incumbent


def test_nsga2_front_is_feasible_and_sorted(testbed):
    pr = testbed.problem()
    res = goodopt.solve(pr, "nsga2", {"seed": 3, "n_gen": 15, "pop_size": 40})
    front = res.extra["pareto"]
    assert front and res.feasible
    nodes = [f["nodes_used"] for f in front]
    assert nodes == sorted(nodes)
    ev = pr.evaluator()
    assert all(ev.violation(a) == 0 for a in res.extra["pareto_allocations"])


def test_node_limit_returns_incumbent_bound_and_gap():
    # The placement-level model of mixed-64 (64 GPUs of three types) does not close at its root; a budget
    # of one branch-and-bound node (deterministic, unlike a time limit) stops it with the incumbent, the
    # root's bound and a gap. The configuration route certifies the same round.
    pr = FAMILIES["mixed-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"formulation": "placement", "node_limit": 1})
    assert res.status == Termination.ITERATION_LIMIT and res.stats.nodes == 1
    assert res.has_solution and res.feasible
    assert np.isfinite(res.bound) and res.bound >= res.fitness and 0 < res.gap < 0.1
    exact = goodopt.solve(pr, "milp")
    assert exact.status == Termination.OPTIMAL and exact.fitness <= res.bound * (1 + 1e-9)


def test_time_limit_returns_incumbent():
    pr = FAMILIES["mixed-64"].scenario(0).problem()
    res = goodopt.solve(pr, "milp", {"formulation": "placement", "time_limit_s": 0.5})
    assert res.status == Termination.TIME_LIMIT
    assert res.has_solution and res.feasible
    if np.isfinite(res.bound):  # the bound exists once the root was solved, which depends on the machine
        assert res.bound >= res.fitness
    assert res.stats.total_s < 10


class _StuckHighs:
    """Stands in for a HiGHS instance caught in a heuristic that never checks its own time limit: ``run``
    returns only once ``cancelSolve`` is called (or after 30 s, which the test would notice)."""

    def __init__(self):
        import threading

        self.cancelled = threading.Event()
        self.HandleUserInterrupt = False

    def run(self):
        self.cancelled.wait(30)

    def cancelSolve(self):
        self.cancelled.set()


@pytest.mark.parametrize("in_worker", [False, True])
def test_the_watchdog_holds_a_solver_to_its_time_limit(in_worker, caplog):
    # HiGHS may overrun its own limit (it sat in its root rounding heuristic five times past a 300 s limit);
    # run_highs asks it to stop once the limit has passed by the grace, in the main thread and in workers.
    import threading
    import time

    from goodopt.solvers.highs_run import run_highs
    from goodopt.solvers.highs_watch import watchdog_grace_s

    h, box = _StuckHighs(), {}

    def call():
        t0 = time.perf_counter()
        box["stopped"] = run_highs(h, time_limit_s=0.2)
        box["seconds"] = time.perf_counter() - t0

    if in_worker:
        t = threading.Thread(target=call)
        t.start()
        t.join(40)
    else:
        call()
    assert box["stopped"] and h.cancelled.is_set()
    assert box["seconds"] < 0.2 + watchdog_grace_s(0.2) + 1.0
    assert "past its 0.2 s time limit" in caplog.text
    assert run_highs(_FinishingHighs(), time_limit_s=5.0) is False  # a solver that stops in time is left alone


class _FinishingHighs(_StuckHighs):
    def run(self):
        return None


def test_one_thread_watches_every_run_and_a_forked_child_gets_its_own():
    # Many runs, one watching thread (none started per run); a child forked while it exists (a sweep's worker)
    # starts its own, which holds a stuck run there to its time limit too.
    import multiprocessing
    import threading

    from goodopt.solvers.highs_run import run_highs
    from goodopt.solvers.highs_watch import WATCHDOG_THREAD

    for _ in range(20):
        assert run_highs(_FinishingHighs(), time_limit_s=5.0) is False
    assert sum(t.name == WATCHDOG_THREAD for t in threading.enumerate()) == 1
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        stopped, watchers = pool.apply(_stuck_run_in_child)
    assert stopped and watchers == 1


def _stuck_run_in_child():
    import threading

    from goodopt.solvers.highs_run import run_highs
    from goodopt.solvers.highs_watch import WATCHDOG_THREAD

    h = _StuckHighs()
    stopped = run_highs(h, time_limit_s=0.1)
    return stopped and h.cancelled.is_set(), sum(t.name == WATCHDOG_THREAD for t in threading.enumerate())


class _CtrlCHighs(_StuckHighs):
    """Ctrl-C arrives while it runs; ``run`` returns once ``release`` is set (by ``cancelSolve`` unless
    ``deaf``, a solver with no interrupt check for a while), or after 30 s."""

    def __init__(self, deaf=False):
        super().__init__()
        self.deaf, self.release = deaf, __import__("threading").Event()

    def run(self):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGINT)
        self.release.wait(30)

    def cancelSolve(self):
        self.cancelled.set()
        if not self.deaf:
            self.release.set()


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raising KeyboardInterrupt, as at a terminal (a shell's background job, such as a CI step, may start
    with SIGINT ignored); the previous handler afterwards."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_a_solver_on_the_main_thread_and_then_raises(ctrl_c_raises):
    # HiGHS runs on the calling thread; Ctrl-C there asks it to stop (no exception inside its callback) and
    # KeyboardInterrupt follows once it has returned; the handlers are as before afterwards.
    import signal
    import threading
    import time

    from goodopt.solvers.highs_run import run_highs

    assert threading.current_thread() is threading.main_thread()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    h = _CtrlCHighs()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_highs(h)
    assert h.cancelled.is_set() and time.perf_counter() - t0 < 5
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.set_wakeup_fd(-1) == -1  # the watchdog's wake-up socket is gone again


def test_a_solver_deaf_to_ctrl_c_gets_the_stuck_action_after_the_grace(monkeypatch, ctrl_c_raises):
    # The CLI's action exits at once; here it releases the solver, which shows it ran, and only after the grace.
    import time

    import goodopt.solvers.highs_watch as watch
    from goodopt.solvers.highs_run import run_highs

    monkeypatch.setattr(watch, "INTERRUPT_GRACE_S", 0.5)
    h, seen = _CtrlCHighs(deaf=True), {}

    def action():
        seen["after_s"] = time.perf_counter() - t0
        h.release.set()

    watch.on_stuck_interrupt(action)
    try:
        t0 = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            run_highs(h)
    finally:
        watch.on_stuck_interrupt(None)
    assert h.cancelled.is_set() and 0.5 <= seen["after_s"] < 5


def test_a_watchdog_stop_reads_as_a_time_limit_with_the_incumbent():
    # A MILP stopped through the interrupt path (here at its first incumbent) reports TIME_LIMIT, not an
    # error, with that incumbent and a bound: maximise sum_i v_i x_i over 40 binaries, sum_i w_i x_i <= 50.
    import threading

    import highspy
    from goodopt.solvers.highs_run import new_highs, read_highs, run_highs

    rng = np.random.default_rng(0)
    n = 40
    h = new_highs()
    h.passModel(_knapsack(highspy, rng.integers(10, 60, n), rng.integers(5, 30, n), 50))
    h.HandleUserInterrupt = True
    threads = []
    h.cbMipImprovingSolution += lambda *_: (threads.append(threading.current_thread()), h.cancelSolve())
    run_highs(h)
    term, has_solution, objective, bound, *_ = read_highs(h, True, sense=-1, stopped=True)
    assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
    assert threads[0] is threading.main_thread()  # HiGHS ran on the calling thread
    assert term == Termination.TIME_LIMIT and has_solution and bound >= objective - 1e-9
    h.HandleUserInterrupt = False


def _knapsack(highspy, values, weights, capacity):
    lp = highspy.HighsLp()
    n = len(values)
    lp.num_col_, lp.num_row_ = n, 1
    lp.col_cost_ = -np.asarray(values, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.zeros(n), np.ones(n)
    lp.row_lower_, lp.row_upper_ = np.array([-highspy.kHighsInf]), np.array([float(capacity)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(n + 1)
    lp.a_matrix_.index_ = np.zeros(n, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(weights, dtype=float)
    lp.integrality_ = [highspy.HighsVarType.kInteger] * n
    return lp


def test_a_session_solves_its_lp_relaxation_and_then_its_milp():
    """The LP relaxation drops integrality until the next MIP solve, which gives it back: a knapsack (values 7, 5,
    4; weights 3, 2, 2; capacity 4; and a continuous column worth 0.1 per unit) has LP optimum 5 + 7 * 2/3 = 9.667
    (by value per weight: item 2, then two thirds of item 1) and MILP optimum 9 (items 2 and 3); solving the LP
    again after the MILP gives 9.667 again, and the continuous column stays continuous. HiGHS holds no
    integrality after an LP solve (a solve that ends at its LP switches nothing), and all of it once asked
    (before the model is written out)."""
    from goodopt.formulations.matrix import CscArrays, MatrixModel
    from goodopt.solvers.highs_arrays import HighsSession

    A = CscArrays.from_triplets(np.zeros(4, np.int64), np.arange(4), np.array([3.0, 2.0, 2.0, 1.0]), (1, 4))
    mm = MatrixModel(cost=np.array([7.0, 5.0, 4.0, 0.1]), lower=np.zeros(4), upper=np.array([1.0, 1.0, 1.0, 0.5]),
                     integer=np.array([True, True, True, False]), A=A, row_lower=np.array([-np.inf]),
                     row_upper=np.array([4.0]), names=("cap",), n_configs=3, epigraph=False)
    session = HighsSession(mm)
    lp, x_lp = session.solve(relax=True)
    milp, x = session.solve()
    again, _ = session.solve(relax=True)
    assert lp.objective == pytest.approx(5 + 7 * 2 / 3) and again.objective == pytest.approx(lp.objective)
    assert milp.objective == pytest.approx(9.0) and np.allclose(x[:3], [0, 1, 1]) and x[3] == 0.0
    kinds = session._hs.HighsVarType
    assert all(k == kinds.kContinuous for k in session.h.getLp().integrality_)
    session.integral()
    assert list(session.h.getLp().integrality_) == [kinds.kInteger] * 3 + [kinds.kContinuous]


def test_a_column_added_to_a_solved_lp_enters_where_its_reduced_cost_pays():
    """The knapsack LP (items 0, 1, 2: values 7, 5, 4; weights 3, 2, 2; capacity 4) over items 0 and 2 takes
    item 0 and half of item 2 (9.0) and prices capacity at 2 per unit: item 1's reduced cost 5 - 2 * 2 = 1 pays (item 0, at its bound, has 1 too).
    Added to the live session, it enters, and the LP reaches the whole optimum, item 1 and two thirds of item 0
    (9.667); the MIP that follows knows the new column is binary too (items 1 and 2: 9.0)."""
    from goodopt.formulations.matrix import CscArrays, MatrixModel
    from goodopt.solvers.highs_arrays import HighsSession
    from goodopt.solvers.milp.reduce import signed_duals

    def knapsack(items):
        values, weights = np.array([7.0, 5.0, 4.0])[items], np.array([3.0, 2.0, 2.0])[items]
        A = CscArrays.from_triplets(np.zeros(len(items), np.int64), np.arange(len(items)), weights, (1, len(items)))
        return MatrixModel(cost=values, lower=np.zeros(len(items)), upper=np.ones(len(items)),
                           integer=np.ones(len(items), bool), A=A, row_lower=np.array([-np.inf]),
                           row_upper=np.array([4.0]), names=("cap",), n_configs=len(items), epigraph=False)

    whole, session = knapsack([0, 1, 2]), HighsSession(knapsack([0, 2]))
    lp, _ = session.solve(relax=True)
    reduced = whole.cost - whole.A.rmatvec(signed_duals(whole, session.lp_row_dual))
    assert lp.objective == pytest.approx(9.0) and reduced == pytest.approx([1.0, 1.0, 0.0])
    session.add_columns(knapsack([1]))
    lp, x = session.solve(relax=True)
    assert lp.objective == pytest.approx(5 + 7 * 2 / 3) and x == pytest.approx([2 / 3, 0.0, 1.0])
    milp, x = session.solve()
    assert milp.objective == pytest.approx(9.0) and np.allclose(x, [0, 1, 1])
    assert [int(v) for v in session.h.getLp().integrality_] == [1, 1, 1]


@pytest.mark.parametrize("family, objective", [("cluster-2048", "own"), ("five-types-512", "own"),
                                               ("five-types-512", "sia"), ("mixed-64", "own")])
def test_the_lp_relaxation_by_column_generation_is_the_whole_models(family, objective):
    """One and five GPU types, under every type's node-pattern rows: HiGHS sees a core of the configurations,
    the LP it ends at is the whole model's optimum, and so is the bound kept (the whole model's Lagrangian
    bound for the last duals); the column values and duals loaded into the model are the whole model's.
    mixed-64 (2.1k configurations) is below :data:`~goodopt.solvers.milp.pricing.GENERATE_FROM_CONFIGS`: its
    whole LP is solved. Made to run every job (the objective scaled to greedy's answer prunes idling), the answer is the same."""
    import time

    from goodopt.solvers.heuristics import greedy
    from goodopt.solvers.milp import pricing
    from goodopt.solvers.milp.models import config_model
    from goodopt.solvers.milp.reduce import tighter_bounds
    from goodopt.solvers.milp.run import MilpRun
    from goodopt.solvers.options import MilpOptions

    from goodopt.evaluator import Evaluator

    sc = FAMILIES[family].scenario(0)
    pr = (dataclasses.replace(sc, objective=Objective.sia()) if objective == "sia" else sc).problem()
    run = MilpRun(pr, Evaluator(pr), MilpOptions(), time.perf_counter())
    for incumbent in (False, True):
        if incumbent:
            run.add_candidate(greedy(pr, run.cs)[0], "greedy")
        run.scale_objective()
        whole = config_model(run, range(pr.n_gpu_types)).solve(relax=True)
        model = config_model(run, range(pr.n_gpu_types))
        priced = pricing.priced_relaxation(run, model)
        assert priced.objective == pytest.approx(whole.objective, rel=1e-9)
        assert priced.bound == pytest.approx(whole.objective, rel=1e-9) and priced.bound >= priced.objective - 1e-9
        x, mm = model.lp_values, model.mm
        assert float(mm.cost @ x) == pytest.approx(whole.objective, rel=1e-9)
        assert np.all(mm.A.matvec(x) <= mm.row_upper + 1e-7) and np.all(mm.A.matvec(x) >= mm.row_lower - 1e-7)
        assert tighter_bounds(mm, model.session.lp_row_dual)[1] == pytest.approx(priced.bound, rel=1e-12)
        generated = run.info.get("lp_pricing")
        assert (generated is None) == (family == "mixed-64")
        if generated and not incumbent:
            assert generated["core"] < mm.n_configs / 2


def test_highs_holds_the_matrix_model_it_was_given():
    # the arrays go to HiGHS in one call: costs, bounds (infinite row bounds as HiGHS's infinity), the matrix
    # column by column, integrality (once asked) and the sense all arrive as the model states them
    from goodopt.formulations.config_matrix import config_matrix
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.formulations.objective import reference_fitness, scaled_objective
    from goodopt.solvers.highs_arrays import HighsSession

    pr = FAMILIES["hetero-16"].scenario(0).problem()
    cs = enumerate_configs(pr)
    mm = config_matrix(pr, cs, scaled_objective(pr, cs, reference_fitness(pr, cs, None), None), placement=[0, 1])
    session = HighsSession(mm)
    session.integral()  # HiGHS holds the integrality from the first MIP solve or write on
    lp = session.h.getLp()
    inf = 1e30
    assert np.isinf(mm.row_lower).any() and not mm.integer.all() and mm.integer.any()
    assert np.array_equal(lp.col_cost_, mm.cost) and np.array_equal(lp.col_upper_, mm.upper)
    assert np.array_equal(lp.col_lower_, mm.lower)
    assert np.array_equal(np.minimum(np.maximum(lp.row_lower_, -inf), inf), np.clip(mm.row_lower, -inf, inf))
    assert np.array_equal(np.minimum(lp.row_upper_, inf), np.clip(mm.row_upper, -inf, inf))
    assert np.array_equal(lp.a_matrix_.start_, mm.A.indptr) and np.array_equal(lp.a_matrix_.index_, mm.A.indices)
    assert np.array_equal(lp.a_matrix_.value_, mm.A.data)
    assert [int(v) for v in lp.integrality_] == mm.integer.astype(int).tolist()
    assert str(lp.sense_).endswith("kMaximize")


def test_infeasible_model_reports_status():
    from goodopt.formulations import milp as fm
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.solvers.backend import solve_model

    # two jobs that each want 3 GPUs on one node of a 2 x 4 cluster plus a third: fixing all three
    # single-node 3-GPU configurations cannot be placed.
    pr = make_problem([[1, 2, 3], [1, 2, 3], [1, 2, 3]], capacity=[4, 4], interference_avoidance=False,
                      multi=[[1, 1, 1]] * 3)
    cs = enumerate_configs(pr)
    choice = np.array([np.flatnonzero((cs.job == j) & (cs.n_gpus == 3) & ~cs.multi)[0] for j in range(3)])
    model = fm.build_model(pr, cs, level="placement", fixed_choice=choice)
    out = solve_model(model)
    assert out.termination == Termination.INFEASIBLE
    assert not out.has_solution


def test_options_are_validated():
    pr = make_problem([[1.0]], capacity=[1])
    with pytest.raises(ValidationError, match="method"):
        goodopt.solve(pr, "simplex")
    with pytest.raises(ValidationError, match="options.bogus"):
        goodopt.solve(pr, "milp", {"bogus": 1})
    with pytest.raises(ValidationError, match="time_limit_s"):
        goodopt.solve(pr, "milp", {"time_limit_s": -1})
    with pytest.raises(ValidationError, match="seed"):
        goodopt.solve(pr, "ga")
    with pytest.raises(ValueError, match="highs_options.no_such_option"):
        goodopt.solve(pr, "milp", {"highs_options": {"no_such_option": 1}})
    with pytest.raises(ValidationError, match="solver"):
        goodopt.solve(pr, "milp", {"solver": "no-such-solver"})
    big = make_problem([[1.0, 2.0]] * 4, capacity=[8, 8, 8])
    with pytest.raises(ValidationError, match="max_allocations"):
        goodopt.solve(big, "brute-force")


def test_the_pyomo_route_hands_another_solver_the_same_model():
    # the documented pyomo model, compiled to arrays and handed to SCIP, finds HiGHS's optimum
    pr = make_problem([[1.0, 1.8, 2.4, 2.8], [1.0, 1.2, 1.3, 1.35]], capacity=[2, 2], p=-1.0)
    a = goodopt.solve(pr, "milp")
    b = goodopt.solve(pr, "milp", {"solver": "scip", "model_route": "pyomo"})
    assert b.status == Termination.OPTIMAL and close(a.fitness, b.fitness)
    assert b.stats.solver == "scip"


def test_symmetry_breaking_keeps_the_optimum():
    pr = FAMILIES["tiny"].scenario(35).problem()
    a = goodopt.solve(pr, "milp", {"formulation": "placement", "symmetry": "order"})
    b = goodopt.solve(pr, "milp", {"formulation": "placement", "symmetry": "none"})
    assert a.status == b.status == Termination.OPTIMAL
    assert close(a.fitness, b.fitness)


def test_result_json_has_documented_keys(testbed):
    pr = testbed.problem()
    d = goodopt.solve(pr, "greedy").to_dict(pr)
    for key in ("fitness", "status", "bound", "gap", "seconds", "allocation"):
        assert key in d
    assert set(d["allocation"]) == set(pr.job_names)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["testbed-under", "testbed-over", "cluster-256"])
def test_families_heuristics_below_certified_optimum(name):
    pr = FAMILIES[name].scenario(1).problem()
    opt = goodopt.solve(pr, "milp", {"time_limit_s": 60})
    for method in ("greedy", "milp-pwl", "ga"):
        res = goodopt.solve(pr, method, {"seed": 0} if method == "ga" else None)
        assert res.feasible
        assert res.fitness <= opt.bound * (1 + TOL)


@pytest.mark.parametrize("p", [-4.0, -10.0])
def test_milp_exact_at_strongly_negative_p(p):
    """eps^p (1e12 at p = -4, 1e30 at p = -10) must not swamp the configuration terms: the MILP equals brute
    force on tiny instances, and on a 32-GPU round its optimum is at least the p = -4 optimum's value."""
    from goodopt.solvers import solve

    from goodopt.families import family

    for seed in range(4):
        pr = family("tiny").scenario(seed).with_objective(p=p).problem()
        exact, brute = solve(pr, "milp"), solve(pr, "brute-force")
        assert exact.status == "optimal"
        assert exact.fitness == pytest.approx(brute.fitness, rel=1e-9)
        assert exact.fitness <= exact.bound * (1 + 1e-9)
    sc = family("knob-32").scenario(0)
    res = solve(sc.with_objective(p=p).problem(), "milp")
    other = solve(sc.with_objective(p=-2.0).problem(), "milp")
    ev = sc.with_objective(p=p).problem().evaluator()
    assert res.status == "optimal" and res.fitness <= res.bound * (1 + 1e-9)
    assert res.fitness >= ev.fitness(other.x) * (1 - 1e-12)


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


def test_options_are_typed_frozen_and_registered():
    import dataclasses

    from goodopt.solvers.api import METHOD_OPTIONS, RANDOMISED, REGISTRY
    from goodopt.solvers.options import MilpOptions

    opts = MilpOptions.build({"node_limit": 50})
    assert opts.node_limit == 50 and opts.as_dict()["node_limit"] == 50 and opts.formulation == "auto"
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.node_limit = 3
    with pytest.raises(ValidationError, match="options.node_limit"):
        MilpOptions.build({"node_limit": 0})
    with pytest.raises(ValidationError, match="valid options: .*config_placement"):
        MilpOptions.build({"formulaton": "auto"})
    assert set(METHOD_OPTIONS) == set(REGISTRY) and RANDOMISED == ("ga", "nsga2")
    res = goodopt.solve(make_problem([[1.0]], capacity=[1]), "milp", {"node_limit": 5})
    assert res.options["node_limit"] == 5 and res.status == Termination.OPTIMAL


@pytest.mark.parametrize("seed", range(10))
def test_vectorised_row_check_agrees_with_the_evaluator(seed):
    # enumerate_configs keeps a job's current row only if it is feasible on its own; the vectorised
    # check must say what the evaluator says of each row alone (rows perturbed to break some rules)
    from dataclasses import replace

    from goodopt.formulations.configs import rows_feasible_alone

    sc = random_scenario(seed, Cluster((NodeGroup("t4", 4, 3), NodeGroup("a100", 8, 1))), 6, running_fraction=0.9)
    pr = sc.problem()
    rng = np.random.default_rng(seed)
    cur = pr.current.copy()
    cur[rng.random(cur.shape) < 0.2] += rng.integers(0, 5)
    pr = replace(pr, current=cur)
    ev = pr.evaluator()
    expected = []
    for j in range(pr.n_jobs):
        alone = np.zeros_like(cur)
        alone[j] = cur[j]
        expected.append(bool(cur[j].sum() > 0 and ev.violation(alone) == 0))
    assert rows_feasible_alone(pr).tolist() == expected


def test_a_solve_keeps_its_incumbent_and_bound_over_time(testbed):
    exact = goodopt.solve(testbed, "milp")
    ga = goodopt.solve(testbed, "ga", {"seed": 0, "n_gen": 8, "pop_size": 20})
    for res in (exact, ga):
        t = [p[0] for p in res.stats.trace]
        assert len(t) >= 1 and t == sorted(t) and t[-1] <= res.stats.total_s
    assert len(ga.stats.trace) == 8 and all(np.isnan(p[2]) for p in ga.stats.trace)  # a GA proves no bound
    best = [p[1] for p in ga.stats.trace]
    assert best == sorted(best) and best[-1] == pytest.approx(ga.fitness)  # elitist: never worse
    assert exact.stats.trace[-1][2] >= exact.fitness * (1 - 1e-9)  # the last bound bounds the answer
    # the exact course is the run's best placed allocation and best bound: never worse, never looser
    inc = [p[1] for p in exact.stats.trace if np.isfinite(p[1])]
    bnd = [p[2] for p in exact.stats.trace if np.isfinite(p[2])]
    assert inc == sorted(inc) and bnd == sorted(bnd, reverse=True) and max(inc) <= min(bnd) * (1 + 1e-9)
    html = exact._repr_html_()
    assert "<table>" in html and "optimal" in html and f"{exact.fitness:.6g}" in html


@pytest.mark.parametrize("seed, re_solved", [(1, False), (8, True)])
def test_an_unplaced_optimum_is_first_repaired_within_its_gpu_type(seed, re_solved):
    # mixed-64's first configuration optimum does not place on its rtx2080ti nodes. Only the jobs on that type are
    # re-chosen under its node-pattern rows, the others fixed: on seed 1 that reaches the first optimum's bound
    # (certified without the full re-solve); on seed 8 it does not, and the full re-solve starts from it. Both
    # agree with the route that places by no-good cuts instead of pattern rows. (With the LP first, the default
    # at this size, seed 1 is certified by the reduced-cost dive before the configuration level: lp_rounding off.)
    pr = family_scenario(f"family:mixed-64:{seed}").problem()
    res = goodopt.solve(pr, "milp", {"lp_rounding": False})
    stages = [s["model"] for s in res.extra["stages"]]
    assert "pattern rows (rtx2080ti), only their jobs re-chosen" in stages
    assert ("config + pattern rows (rtx2080ti)" in stages) == re_solved
    other = goodopt.solve(pr, "milp", {"config_placement": "cuts"})
    assert res.status == other.status == Termination.OPTIMAL
    assert res.fitness == pytest.approx(other.fitness, rel=1e-7)
    assert res.bound >= res.fitness * (1 - 1e-6) and res.feasible and not res.violations


def test_highs_runs_on_one_thread_unless_the_threads_option_says_more():
    from goodopt.solvers.backend import new_highs

    got = new_highs().getOptionValue("threads")
    assert (got[1] if isinstance(got, tuple) else got) == 1
    res = goodopt.solve(family_scenario("family:tiny:0").problem(), "milp", {"threads": 2})
    assert res.status == Termination.OPTIMAL and res.options["threads"] == 2


def test_runs_asking_for_different_thread_counts_in_one_thread_all_solve():
    # HiGHS sizes a thread's pool at its first run; a later run in that thread asking another size used to end
    # with model status "not set". A sweep worker runs its solves in one thread, so a task with `threads: 2`
    # after one with the default broke every solve that followed.
    import threading

    import highspy
    from goodopt.solvers.backend import new_highs, run_highs

    statuses = []

    def worker():
        rng = np.random.default_rng(0)
        for threads in (1, 2, 1, 2):
            h = new_highs()
            h.setOptionValue("threads", threads)
            h.passModel(_knapsack(highspy, rng.integers(10, 60, 40), rng.integers(5, 30, 40), 50))
            run_highs(h)
            statuses.append(h.getModelStatus())

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert statuses == [highspy.HighsModelStatus.kOptimal] * 4


def test_options_for_gives_the_typed_options_solve_checks():
    # the public way to a method's full options: defaults filled in, read as attributes, errors naming the field
    from goodopt.solvers import options_for

    opts = options_for("ga", {"seed": 3, "pop_size": 20})
    assert (opts.seed, opts.pop_size, opts.n_gen) == (3, 20, 100)
    assert options_for("milp").mip_rel_gap == options_for("milp", {}).mip_rel_gap
    with pytest.raises(ValidationError, match="did you mean 'mip_rel_gap'"):
        options_for("milp", {"mip_rel_gapp": 1e-3})
    with pytest.raises(ValidationError, match="unknown method 'nope'"):
        options_for("nope")


def _check_places(pr, cs, chosen, g=0):
    """The placement check's verdict on ``chosen`` for type ``g``: True when it builds a model HiGHS solves."""
    from goodopt.formulations.node_patterns import PatternModel, pattern_model
    from goodopt.solvers.highs_arrays import HighsSession

    verdict = pattern_model(pr, cs, chosen, g)
    return isinstance(verdict, PatternModel) and \
        HighsSession(verdict.matrix).solve()[0].termination == Termination.OPTIMAL


def _fixed_choice_termination(mm, cs, chosen):
    """How HiGHS ends the model ``mm`` with the configuration columns fixed to ``chosen`` (-1: none)."""
    from dataclasses import replace

    from goodopt.solvers.highs_arrays import HighsSession

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
    from goodopt.formulations.objective import reference_fitness, scaled_objective
    from goodopt.formulations.pattern_block import block_layout

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
    from goodopt.formulations.objective import reference_fitness, scaled_objective

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
    from goodopt.formulations.objective import reference_fitness, scaled_objective
    from goodopt.solvers.highs_arrays import HighsSession

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
    from goodopt.formulations.objective import reference_fitness, scaled_objective

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
