"""The vectorised evaluator against an independent reference, and its invariants."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import goodopt
from goodopt import ShapeError
from goodopt.cluster import Cluster, NodeGroup
from goodopt.generate import random_scenario

from .conftest import random_population
from .reference import ref_fitness_and_speedups, ref_violation


@pytest.mark.parametrize("which", ["testbed", "hetero_scenario"])
@pytest.mark.parametrize("p", [-np.inf, -1.0, 0.0, 0.5, 1.0])
def test_matches_slow_reference(which, p, request):
    sc = request.getfixturevalue(which).with_objective(p=p)
    pr = sc.problem()
    ev = pr.evaluator()
    rng = np.random.default_rng(3)
    pop = random_population(rng, pr, 12)
    pop[0] = pr.current
    fit = ev.fitness(pop)
    speed = ev.speedups(pop)
    viol = ev.violation(pop)
    for i in range(len(pop)):
        rf, rs = ref_fitness_and_speedups(sc, pr, pop[i].tolist())
        np.testing.assert_allclose(speed[i], rs, rtol=1e-9, atol=1e-12)
        assert fit[i] == pytest.approx(rf, rel=1e-9)
        assert (viol[i] == 0) == ref_violation(pr, pop[i].tolist())


@given(st.integers(0, 2**32 - 1))
def test_population_equals_member_by_member(seed):
    cluster = Cluster((NodeGroup("t4", 4, 3), NodeGroup("v100", 8, 1)))
    sc = random_scenario(seed, cluster, 5)
    pr = sc.problem()
    ev = pr.evaluator()
    pop = random_population(np.random.default_rng(seed), pr, 6)
    whole = ev.evaluate(pop)
    for i in range(len(pop)):
        assert ev.fitness(pop[i]) == whole.fitness[i]
        np.testing.assert_array_equal(ev.speedups(pop[i]), whole.speedups[i])
        assert ev.violation(pop[i]) == whole.violation[i]
        assert (ev.violation(pop[i]) == 0) == (not ev.violations(pop[i]))


@given(st.integers(0, 2**32 - 1))
def test_permuting_identical_nodes_leaves_fitness_unchanged(seed):
    sc = random_scenario(seed, Cluster((NodeGroup("t4", 4, 5),)), 6, running_fraction=0.0)
    pr = sc.problem()  # nobody holds GPUs, so the current allocation is permutation-invariant
    ev = pr.evaluator()
    rng = np.random.default_rng(seed)
    pop = random_population(rng, pr, 8)
    perm = rng.permutation(pr.n_nodes)
    np.testing.assert_array_equal(ev.fitness(pop), ev.fitness(pop[:, :, perm]))
    np.testing.assert_array_equal(ev.violation(pop), ev.violation(pop[:, :, perm]))


def test_realloc_factor_touches_only_changed_rows():
    sc = goodopt.scenario_from_dict({
        "cluster": {"node_groups": [{"gpu_type": "t4", "gpus_per_node": 4, "n_nodes": 3}]},
        "jobs": [
            {"name": "a", "application": "cifar10", "age_s": 900, "n_reallocs": 2, "allocation": {"t4-0": 2}},
            {"name": "b", "application": "bert", "age_s": 300, "allocation": {"t4-1": 1}},
            {"name": "c", "application": "ncf", "age_s": 60},
        ],
    })
    pr = sc.problem()
    ev = pr.evaluator()
    base = ev.speedups(pr.current)
    moved = pr.current.copy()
    moved[0] = [0, 0, 2]  # same (k = 2, single node) configuration on another node
    s = ev.speedups(moved)
    np.testing.assert_array_equal(s[1:], base[1:])
    assert pr.realloc[0] == pytest.approx((900 - 2 * 30) / (900 + 30))
    assert s[0] == pytest.approx(base[0] * pr.realloc[0])
    # growing the queued job c changes only c's row, scaled by its own factor
    grown = pr.current.copy()
    grown[2] = [0, 0, 1]
    s = ev.speedups(grown)
    np.testing.assert_array_equal(s[:2], base[:2])
    assert s[2] == pytest.approx(pr.speedup_table[2, 0, 1, 0] * 60 / 90)


def test_violation_terms_by_hand():
    cluster = Cluster((NodeGroup("t4", 4, 2), NodeGroup("a100", 8, 1)))
    sc = random_scenario(1, cluster, 3, running_fraction=0.0, max_gpus=6)
    ev = sc.problem().evaluator()
    a = np.zeros((3, 3), dtype=int)
    a[0] = [4, 1, 0]   # node t4-0 full, plus one on t4-1: multi-node
    a[1] = [1, 1, 0]   # another multi-node job sharing both nodes -> interference on 2 nodes, t4-0 over by 1
    a[2] = [0, 0, 7]   # 7 > max_gpus 6
    t = {k: int(v[0]) for k, v in ev.violation_terms(a).items()}
    assert t == {"node_capacity": 1, "negative": 0, "mixed_gpu_types": 0, "min_gpus": 0, "max_gpus": 1,
                 "interference": 2}
    a[2] = [0, 2, 3]   # spans t4 and a100 -> 2 GPUs off the majority type
    a[1] = 0
    t = ev.violation_terms(a)
    assert int(t["mixed_gpu_types"][0]) == 2
    assert any("spans GPU types" in v for v in ev.violations(a))


def test_shape_and_dtype_errors(testbed):
    ev = testbed.problem().evaluator()
    with pytest.raises(ShapeError, match="shape"):
        ev.fitness(np.zeros((3, 3), dtype=int))
    with pytest.raises(ShapeError, match="whole numbers"):
        ev.fitness(np.full((30, 16), 0.5))
    assert isinstance(ShapeError("x"), ValueError)
    # float arrays holding integers are accepted
    pr = testbed.problem()
    assert ev.fitness(pr.current.astype(float)) == ev.fitness(pr.current)


def test_mapping_round_trip(testbed):
    pr = testbed.problem()
    m = pr.allocation_to_mapping(pr.current)
    np.testing.assert_array_equal(pr.allocation_from_mapping(m), pr.current)
    with pytest.raises(goodopt.ScenarioError, match="unknown node"):
        pr.allocation_from_mapping({pr.job_names[0]: {"nope-3": 1}})


@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 3]), st.integers(1, 7), st.booleans(), st.booleans())
def test_the_compiled_pass_is_the_array_statement_to_the_last_bit(seed, n_types, n_jobs, avoidance, wild):
    """Counts, majority types (ties included), speedups and every violation term of the compiled pass equal the
    whole-array statement of tests/evaluator_reference.py, on populations with negative cells, over-full nodes,
    rows spanning types, counts beyond the tables and members left on the current allocation."""
    from goodopt.problem import AllocationProblem

    from .evaluator_reference import counts

    groups = (NodeGroup("t4", 4, 3), NodeGroup("v100", 8, 2), NodeGroup("a100", 2, 2))[:n_types]
    sc = random_scenario(seed, Cluster(groups), n_jobs)
    sc = sc.with_objective(interference_avoidance=avoidance)
    pr = AllocationProblem.from_scenario(sc)
    rng = np.random.default_rng(seed)
    pop = random_population(rng, pr, 9)
    if wild:  # cells of any sign and size: negatives, over-full nodes, counts past the tables
        pop = rng.integers(-2, 2 * int(pr.node_capacity.max()) + 1, size=pop.shape) * (rng.random(pop.shape) < 0.4)
    pop[0] = pr.current
    mine = pr.evaluator()._counted(np.asarray(pop, np.int64))
    for got, want in zip(mine, counts(pr, np.asarray(pop, np.int64))):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert got.tobytes() == np.ascontiguousarray(want, dtype=got.dtype).tobytes()


@given(seed=st.integers(0, 2**32 - 1),
       n_jobs=st.one_of(st.integers(0, 20), st.sampled_from([127, 128, 129, 136, 257, 300])),
       p=st.sampled_from([-1.0, 1.0]), scale=st.sampled_from([1e-300, 1e-8, 1.0, 1e8, 1e300]),
       weighted=st.booleans(), idle=st.sampled_from([None, 0.0, 1e-6, 2.0]),
       eps=st.sampled_from([0.0, 1e-300, 1e-3, 1.0, 1e6]))
def test_the_compiled_mean_adds_as_numpy_does(seed, n_jobs, p, scale, weighted, idle, eps):
    """At p = -1 and 1 the ranked fitness is one compiled pass (goodopt.mean_kernels) that sums in numpy's pairwise
    order: its scores are the array statement's to the last bit, for rows of 0 to 300 jobs (around numpy's block
    of 128), speedups of every magnitude and zeros (idle jobs, with and without an idle value), eps from 0 (a zero
    speedup then divides by 0) to 1e6, equal and unequal weights, and members that break a rule."""
    from goodopt.mean_kernels import pairwise_sum, ranked_power_mean

    rng = np.random.default_rng(seed)
    s = rng.random((7, n_jobs)) * scale * 10.0 ** rng.integers(-3, 4, size=(7, n_jobs))
    s[rng.random(s.shape) < 0.2] = 0.0
    terms = np.where(rng.random((7, 6)) < 0.1, rng.integers(0, 3, size=(7, 6)), 0)
    w = rng.uniform(0.5, 4.0, n_jobs) if weighted else np.full(n_jobs, 3.0)
    v = s + eps if idle is None else np.where(s > 0, s + eps, idle)
    wide = np.broadcast_to(w if weighted else 1.0, v.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = np.sum(wide, axis=-1)
        mean = total / np.sum(wide / v, axis=-1) if p < 0 else np.sum(wide * v, axis=-1) / total
    want = np.where(terms.sum(axis=1) == 0, mean, -np.inf)
    got = ranked_power_mean(s, terms, p, eps, eps if idle is None else idle, idle is not None, w, not weighted)
    assert got.tobytes() == want.tobytes()
    for row in s:
        assert pairwise_sum(row) == np.sum(row[None], axis=-1)[0]


def test_the_evaluator_ranks_with_the_compiled_mean_exactly_at_pollux_s_p(testbed, hetero_scenario):
    # The evaluator takes the compiled pass at p = -1 and 1 only; there its ranked fitness is the statement's.
    rng = np.random.default_rng(5)
    for sc in (testbed, hetero_scenario):
        for p in (-1.0, 1.0, -2.0, 0.0):
            pr = sc.with_objective(p=p).problem()
            ev = pr.evaluator()
            assert ev._compiled_mean == (p in (-1.0, 1.0))
            pop = random_population(rng, pr, 30)
            full = ev.evaluate(pop)
            want = np.where(full.violation == 0, full.fitness, -np.inf)
            assert ev.ranked_fitness(pop).tobytes() == want.tobytes()
