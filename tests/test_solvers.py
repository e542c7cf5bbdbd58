"""Solvers against ground truth: brute force, hand-derived optima, their own claims."""

import dataclasses

import numpy as np
import pytest
from goodopt.solvers import Termination
from goodopt.solvers.milp import objective_to_fitness
from hypothesis import example, given, settings

import goodopt
from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import ValidationError
from goodopt.families import FAMILIES, GREEDY_SUBOPTIMAL
from goodopt.generate import random_scenario

from .solver_cases import P_VALUES, TOL, close, reference, tiny, tiny_problem
from .synthetic import make_problem


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
    assert small.extra.engine == "pymoo" and small.stats.solver.startswith("pymoo")
    with pytest.raises(ValidationError, match="engine"):
        goodopt.solve(pr, "ga", {"seed": 0, "engine": "sparse"})


def _greedy_recomputed(pr, cs, start):
    """Greedy's rule written out step by step, every entry recomputed at each step (the reference for the
    incremental bookkeeping): among the configurations that gain on their job's current one, were not found
    unplaceable and pass the aggregate capacity filter, try the best gains per extra GPU (ties by index) until
    one places."""
    from goodopt.formulations.configs import match_configs
    from goodopt.formulations.scaled_objective import log_terms
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


def test_nsga2_front_is_feasible_and_sorted(testbed):
    pr = testbed.problem()
    res = goodopt.solve(pr, "nsga2", {"seed": 3, "n_gen": 15, "pop_size": 40})
    front = res.extra["pareto"]
    assert front and res.feasible
    nodes = [f["nodes_used"] for f in front]
    assert nodes == sorted(nodes)
    ev = pr.evaluator()
    assert all(ev.violation(a) == 0 for a in res.extra["pareto_allocations"])


def test_infeasible_model_reports_status():
    from goodopt.formulations import milp as fm
    from goodopt.formulations.configs import enumerate_configs
    from goodopt.solvers.mip_solvers.pyomo_route import solve_model

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
