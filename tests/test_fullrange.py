"""Every method against brute force over the whole parameter range the docs accept.

p is drawn from [-50, 50] and ±inf, eps log-uniformly from [1e-6, 0.1], with the
shapes that broke earlier versions: ties and flat speedups, many idle jobs
(speedup 0 everywhere), tight min/max GPU counts, restart factors near 0,
running jobs with keep configurations, unequal weights, Sia's idle penalty and
two GPU types. Each draw checks, against the brute-force optimum F*:

* ``milp`` (auto, on HiGHS through arrays and through the pyomo model, from
  the LP under every type's pattern rows with and without a node for the
  configuration MILP that follows it, and placement): ``optimal`` means F = F* (1e-6 relative) and
  bound >= F*; any other status is an honest one (the answer is feasible and
  below its valid bound);
* ``milp`` configuration level and ``milp-pwl``: a stated bound is >= F*;
* ``greedy``, ``milp-pwl``, ``ga``: feasible, never above F*; greedy never
  returns the empty allocation when running some job is better.

The default run draws a few dozen instances; the slow tier draws hundreds.
"""

from dataclasses import replace
from unittest import mock

import numpy as np
import pytest
from goodopt.solvers import Termination
from goodopt.solvers.milp import dive, levels
from goodopt.solvers.rounding import lp_rounding
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import goodopt
from goodopt.cluster import Cluster, NodeGroup
from goodopt.generate import random_scenario
from goodopt.scenario import Objective

from .synthetic import make_problem

REL = 1e-6


@st.composite
def p_values(draw):
    kind = draw(st.sampled_from(["inf", "-inf", "small", "range", "extreme", "tiny"]))
    if kind == "inf":
        return np.inf
    if kind == "-inf":
        return -np.inf
    if kind == "small":
        return draw(st.sampled_from([0.0, 1e-4, -1e-4, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0]))
    if kind == "tiny":  # p x underflows in expm1(p x) / p
        return draw(st.sampled_from([5e-324, -5e-324, 1e-300, -1e-300, 1e-13, -1e-13]))
    if kind == "extreme":
        return draw(st.sampled_from([-50.0, -30.0, -10.0, 10.0, 30.0, 50.0]))
    return draw(st.floats(-50, 50, allow_nan=False))


@st.composite
def speedup_rows(draw, k_max):
    """One job's speedups at k = 1..k_max: scaling, flat, tied, superlinear, or all zero (idle)."""
    shape = draw(st.sampled_from(["scaling", "flat", "tied", "jump", "zero", "random"]))
    k = np.arange(1, k_max + 1)
    if shape == "zero":
        return [0.0] * k_max
    if shape == "flat":
        return [1.0] * k_max
    if shape == "tied":
        return [round(float(v), 1) for v in np.minimum(k, 2) * 0.8]
    if shape == "jump":
        return [0.3] * (k_max - 1) + [2.5]
    if shape == "scaling":
        return [float(v) for v in k ** draw(st.floats(0.2, 1.0))]
    return [draw(st.floats(0.0, 4.0)) for _ in k]


@st.composite
def problems(draw):
    n_nodes = draw(st.integers(1, 3))
    cap = draw(st.integers(1, 4))
    n_jobs = draw(st.integers(1, 4))
    two_types = n_nodes > 1 and draw(st.booleans())
    type_names = ("t4", "a100") if two_types else ("t4",)
    node_type = [0] * (n_nodes - 1) + [1] if two_types else [0] * n_nodes
    k_max = n_nodes * cap
    single, multi = [], []
    for _ in range(n_jobs):
        rows = [draw(speedup_rows(k_max)) for _ in type_names]
        single.append(rows)
        multi.append([[v * draw(st.sampled_from([1.0, 0.7])) for v in row] for row in rows])
    min_gpus = [draw(st.integers(1, min(2, k_max))) for _ in range(n_jobs)]
    max_gpus = [draw(st.integers(m, k_max)) for m in min_gpus]
    realloc = [draw(st.sampled_from([1.0, 0.9, 0.3, 1e-3, 0.0])) for _ in range(n_jobs)]
    weights = [draw(st.sampled_from([1.0, 1.0, 0.5, 3.0])) for _ in range(n_jobs)]
    current = np.zeros((n_jobs, n_nodes), np.int64)
    free = np.full(n_nodes, cap)
    for j in range(n_jobs):
        if draw(st.booleans()):
            n = draw(st.integers(0, n_nodes - 1))
            k = draw(st.integers(1, cap))
            if free[n] >= k:
                current[j, n] = k
                free[n] -= k
    pr = make_problem(single, multi=multi, capacity=[cap] * n_nodes, node_type=node_type, type_names=type_names,
                      current=current, realloc=realloc, weights=weights, min_gpus=min_gpus, max_gpus=max_gpus,
                      p=draw(p_values()), eps=10 ** draw(st.floats(-6, -1)),
                      interference_avoidance=draw(st.booleans()))
    if draw(st.integers(0, 4)) == 0 and np.isfinite(pr.p):
        pr = replace(pr, idle_value=pr.eps * draw(st.sampled_from([0.5, 2.0, 10.0])))  # Sia-style idle value
    return pr


@st.composite
def profile_problems(draw):
    """Rounds of the shipped application profiles (real speedup curves, running jobs, restart factors)."""
    n_nodes = draw(st.integers(1, 3))
    cap = draw(st.integers(1, 4))
    groups = ((NodeGroup("t4", cap, n_nodes - 1), NodeGroup("a100", cap, 1)) if n_nodes > 1 and draw(st.booleans())
              else (NodeGroup("t4", cap, n_nodes),))
    objective = Objective(p=draw(p_values()), eps=10 ** draw(st.floats(-6, -1)),
                          interference_avoidance=draw(st.booleans()))
    sc = random_scenario(draw(st.integers(0, 10_000)), Cluster(groups), draw(st.integers(1, 4)),
                         running_fraction=0.7, objective=objective)
    return sc.problem()


def check_against_brute_force(pr):
    opt = goodopt.solve(pr, "brute-force")
    assert opt.status == Termination.OPTIMAL
    f_star = opt.fitness
    tol = REL * max(abs(f_star), 1e-300)
    ev = pr.evaluator()
    empty = ev.fitness(np.zeros((pr.n_jobs, pr.n_nodes), np.int64))

    # lp_rounding: true starts every instance with the LP certificate (by default only from 2,000 job-node pairs);
    # "budget 0" gives the configuration MILP after it no node, so the level goes on under every type's pattern rows;
    # "every type first" starts that level under every type's rows whatever reduced costs left; "probe" has SCIP
    # solve the reduced-cost dive's core first on its node budget whatever its size (dive_probe; from 1,000 open
    # configurations otherwise, which no instance here reaches; the dive itself ran in 8 of 300 drawn instances)
    for formulation, route, lp in (("auto", "arrays", "auto"), ("auto", "arrays", True), ("auto", "pyomo", "auto"),
                                   ("placement", "auto", "auto"), ("config", "auto", "auto"),
                                   ("auto", "arrays", "budget 0"), ("auto", "arrays", "every type first"),
                                   ("auto", "arrays", "probe")):
        budget = 0 if lp == "budget 0" else levels.PLAIN_CONFIG_NODES
        ratio = np.inf if lp == "every type first" else 0.0 if lp == "budget 0" else levels.EVERY_TYPE_FIRST_RATIO
        with mock.patch.object(levels, "PLAIN_CONFIG_NODES", budget), \
                mock.patch.object(levels, "EVERY_TYPE_FIRST_RATIO", ratio), \
                mock.patch.object(dive, "PROBE_MIN_OPEN", 0 if lp == "probe" else dive.PROBE_MIN_OPEN):
            res = goodopt.solve(pr, "milp", {"formulation": formulation, "model_route": route,
                                             "lp_rounding": True if isinstance(lp, str) and lp != "auto" else lp})
        where = (formulation, lp, pr.p, pr.eps, res.status, res.fitness, f_star, res.bound, res.message)
        assert res.has_solution and res.feasible, where
        assert res.fitness <= f_star + tol, where
        if np.isfinite(res.bound):
            assert res.bound >= f_star - tol, where
        if res.status == Termination.OPTIMAL:
            assert abs(res.fitness - f_star) <= tol, where
        elif formulation != "config":
            # an exact method on a tiny instance must get there, or say why not
            assert res.status == Termination.NUMERICAL and res.message, where

    gr = goodopt.solve(pr, "greedy")
    assert gr.feasible and gr.fitness <= f_star + tol
    if f_star > empty * (1 + 1e-9) + 1e-300:
        assert gr.x.sum() > 0, ("greedy returned the empty allocation", pr.p, pr.eps)

    if pr.p != np.inf:
        pwl = goodopt.solve(pr, "milp-pwl", {"breakpoints": 3})
        assert pwl.has_solution and pwl.feasible, (pwl.status, pwl.message)
        assert pwl.fitness <= f_star + tol
        if np.isfinite(pwl.bound):
            assert pwl.bound >= f_star - tol, (pr.p, pwl.bound, f_star)

    ga = goodopt.solve(pr, "ga", {"seed": 0, "pop_size": 16, "n_gen": 5})
    assert ga.feasible and ga.fitness <= f_star + tol
    # seeded by greedy (the default) and keeping its best member, the GA never ends below greedy
    assert ga.fitness >= gr.fitness - tol, (pr.p, ga.fitness, gr.fitness)

    # the GA over configurations (the engine at scale), seeded by LP rounding, never ends below it
    lp = lp_rounding(pr, ev)
    cga = goodopt.solve(pr, "ga", {"seed": 0, "pop_size": 8, "n_gen": 5, "engine": "configs"})
    where = (pr.p, pr.eps, cga.fitness, f_star)
    assert cga.feasible and cga.fitness <= f_star + tol, where
    if lp is not None:
        assert ev.violation(lp) == 0 and cga.fitness >= ev.fitness(lp) - tol, (*where, ev.fitness(lp))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
# the 3-job p = -300 round that once certified 0.674 against a reachable 0.835 is in test_exact_extremes
@example(make_problem([[1.0, 1.4, 1.6], [0.6, 1.0, 1.2], [0.0, 0.0, 0.0]], capacity=[2, 1], p=-10.0, eps=1e-2))
# regression: every configuration pruned against the incumbent left milp-pwl an empty model (status error)
@example(replace(make_problem([[0.0, 0.125, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6]], capacity=[3, 3],
                              current=[[2, 0], [0, 0]], realloc=[1.0, 1e-3], max_gpus=[2, 1], p=-0.5, eps=0.1,
                              interference_avoidance=False), idle_value=1.0))
def test_every_method_against_brute_force(pr):
    check_against_brute_force(pr)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile_problems())
def test_every_method_against_brute_force_on_profiles(pr):
    check_against_brute_force(pr)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
# regression: the piecewise-linear model at p = -inf called 0.1 optimal with bound 0.1, HiGHS having pruned the
# allocation worth 0.10000012 (every job on one GPU) within its feasibility tolerance; its bound is loosened by it now
@example(make_problem([[1.0] * 4, [1.1920929e-07, 1.0, 0.0, 0.0], [1.0] * 4, [1.0] * 4], capacity=[4], p=-np.inf,
                      eps=0.1, interference_avoidance=False, weights=[1, 3, 1, 1], max_gpus=[1, 2, 1, 1]))
def test_every_method_against_brute_force_many(pr):
    check_against_brute_force(pr)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile_problems())
def test_every_method_against_brute_force_on_profiles_many(pr):
    check_against_brute_force(pr)


def test_placement_level_rescales_a_far_reference():
    """A greedy reference of 1.018 against an optimum of 1.672 at p = -50 left the placement model's terms
    above the reference all within 4e-7 of 1/50: HiGHS called 1.291 optimal and its bound, loosened only by the
    gaps, was 1.325. The placement level re-scales to its answer as the configuration level does, and a
    bound is loosened by HiGHS's pruning tolerance as well."""
    groups = (NodeGroup("t4", 3, 2), NodeGroup("a100", 3, 1))
    objective = Objective(p=-50.0, eps=0.01, interference_avoidance=False)
    pr = random_scenario(3, Cluster(groups), 3, running_fraction=0.7, objective=objective).problem()
    best = goodopt.solve(pr, "brute-force").fitness
    assert best == pytest.approx(1.6715, abs=1e-4)
    res = goodopt.solve(pr, "milp", {"formulation": "placement"})
    assert res.status == Termination.OPTIMAL, res.message
    assert res.fitness == pytest.approx(best, rel=REL) and res.bound >= best * (1 - REL)
    assert res.extra["placement_rescales"] >= 1
    check_against_brute_force(pr)


@pytest.mark.parametrize("p", [-500.0, -300.0, -200.0, -50.0])
def test_exact_extremes_on_profiles(tmp_path, p):
    """A 3-job round on 2 x 4 T4 where p <= -200 once gave a false certificate and an empty greedy."""
    path = tmp_path / "p3.yaml"
    path.write_text(
        "name: p3\n"
        "cluster: {node_groups: [{gpu_type: t4, gpus_per_node: 4, n_nodes: 2}]}\n"
        f"objective: {{p: {p}}}\n"
        "jobs:\n"
        "- {name: a, application: cifar10, epoch: 10, age_s: 3600}\n"
        "- {name: b, application: bert, epoch: 1, age_s: 3600}\n"
        "- {name: c, application: ncf, age_s: 3600}\n")
    pr = goodopt.load_scenario(str(path)).problem()
    best = goodopt.solve(pr, "brute-force").fitness
    res = goodopt.solve(pr, "milp")
    assert res.status == Termination.OPTIMAL, res.message
    assert res.fitness == pytest.approx(best, rel=REL)
    assert res.bound >= best * (1 - REL)
    assert goodopt.solve(pr, "greedy").x.sum() > 0
