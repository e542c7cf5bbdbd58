"""The GA's operators: feasibility after repair, row exchange, seeded randomness."""

import numpy as np
from goodopt.solvers.ga_operators import RepairData, mutate, refill, repair
from hypothesis import given, settings
from hypothesis import strategies as st

from goodopt.cluster import Cluster, NodeGroup
from goodopt.generate import random_scenario

from .conftest import random_population


@settings(max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), scale=st.integers(1, 12))
def test_repair_makes_any_population_feasible(testbed, hetero_scenario, seed, scale):
    rng = np.random.default_rng(seed)
    for sc in (testbed, hetero_scenario):
        pr = sc.problem()
        data = RepairData(pr)
        pop = rng.integers(-2, scale + 1, size=(20, pr.n_jobs, pr.n_nodes))
        fixed = repair(pop, data, rng)
        assert pr.evaluator().violation(fixed).max() == 0


def test_repair_keeps_feasible_members_feasible_and_refill_does_not_lower_fitness(testbed):
    pr = testbed.problem()
    ev = pr.evaluator()
    rng = np.random.default_rng(0)
    data = RepairData(pr)
    pop = repair(random_population(rng, pr, 50), data, rng)
    assert ev.violation(pop).max() == 0
    holes = pop.copy()
    holes[:, ::3] = 0  # free a third of the jobs' GPUs
    filled = refill(holes.copy(), data, rng)
    assert ev.violation(filled).max() == 0
    assert np.all(filled >= holes)
    assert (filled.sum(axis=(1, 2)) > holes.sum(axis=(1, 2))).all()


def test_repair_refills_when_jobs_outnumber_gpus():
    from goodopt.families import FAMILIES

    pr = FAMILIES["testbed-over"].scenario(0).problem()
    rng = np.random.default_rng(1)
    data = RepairData(pr)
    empty = np.zeros((4, pr.n_jobs, pr.n_nodes), np.int64)
    full = repair(empty, data, rng)
    # every GPU is handed out (96 jobs, 64 GPUs, every job can run on one T4)
    assert (full.sum(axis=(1, 2)) == pr.n_gpus).all()


def test_mutation_and_repair_depend_only_on_the_generator(testbed):
    pr = testbed.problem()
    data = RepairData(pr)
    pop = np.repeat(pr.current[None], 10, axis=0)
    a = repair(mutate(pop, data, np.random.default_rng(5), 0.3), data, np.random.default_rng(6))
    b = repair(mutate(pop, data, np.random.default_rng(5), 0.3), data, np.random.default_rng(6))
    assert np.array_equal(a, b)


def test_row_crossover_children_take_whole_rows_from_parents(testbed):
    from goodopt.formulations.ga import AllocationGAProblem
    from goodopt.solvers.ga_operators import RowCrossover

    pr = testbed.problem()
    data = RepairData(pr)
    rng = np.random.default_rng(2)
    A = repair(random_population(rng, pr, 6), data, rng)
    B = repair(random_population(rng, pr, 6), data, rng)
    X = np.stack([A.reshape(6, -1), B.reshape(6, -1)])
    out = RowCrossover(data)._do(AllocationGAProblem(pr), X, random_state=np.random.default_rng(3))
    kids = out.reshape(2, 6, pr.n_jobs, pr.n_nodes)
    from_a = np.all(kids[0] == A, axis=2)
    from_b = np.all(kids[0] == B, axis=2)
    assert np.all(from_a | from_b)
    # the second child takes the other parent's row wherever the parents differ
    differ = ~np.all(A == B, axis=2)
    assert np.all(np.where(differ & from_a, np.all(kids[1] == B, axis=2), True))


def test_refill_counts_the_restart_a_running_job_would_pay():
    # Job a runs on 1 of node 0's 3 GPUs; growing it to 2 GPUs would double its speed (1 -> 1.98) but restart
    # it, and its re-allocation factor 0.001 makes that 0.00198: refill leaves it alone. Job b, idle, takes a
    # GPU (starting costs it nothing it had). With a factor of 1 the restart is free and a grows.
    from .synthetic import make_problem

    speedups = [[1.0, 1.98, 2.9], [1.0, 1.5]]
    for factor, a_gets in ((0.001, 1), (1.0, 2)):
        pr = make_problem(speedups, capacity=[3], current=[[1], [0]], realloc=[factor, 1.0], p=-1.0)
        out = refill(pr.current[None].copy(), RepairData(pr), np.random.default_rng(0))[0]
        assert out[0, 0] == a_gets and out[1, 0] >= 1, (factor, out.tolist())


_CLUSTERS = {
    "one type": Cluster((NodeGroup("t4", 4, 3),)),
    "two types": Cluster((NodeGroup("t4", 4, 2), NodeGroup("v100", 8, 1))),
    "three types": Cluster((NodeGroup("t4", 4, 2), NodeGroup("a100", 8, 1), NodeGroup("rtx2080ti", 8, 1))),
}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cluster=st.sampled_from(sorted(_CLUSTERS)), n_jobs=st.integers(1, 12),
       avoidance=st.booleans(), restarts_cost=st.booleans(), density=st.sampled_from([0.0, 0.2, 0.8, 1.0]),
       p=st.sampled_from([1.0, 0.5, -1.0, -10.0, -np.inf]))
def test_compiled_repair_and_refill_follow_the_array_statement_draw_for_draw(seed, cluster, n_jobs, avoidance,
                                                                            restarts_cost, density, p):
    # The kernels must give the rules' own answer (tests/ga_reference.py, whole-population array operations) to
    # the last GPU, and leave the generator where the statement leaves it, on any population: negative and
    # over-full cells, rows on several types and nodes, empty members, every p and re-allocation factor.
    import dataclasses

    from . import ga_reference

    pr = random_scenario(seed, _CLUSTERS[cluster], n_jobs, running_fraction=0.7).problem()
    g = np.random.default_rng(seed)
    pr = dataclasses.replace(pr, interference_avoidance=avoidance, p=p,
                             realloc=g.uniform(0.01, 1.0, n_jobs) if restarts_cost else np.ones(n_jobs))
    data = RepairData(pr)
    pop = g.integers(-2, 9, size=(12, pr.n_jobs, pr.n_nodes)) * (g.random((12, pr.n_jobs, pr.n_nodes)) < density)
    pop[:3] = pr.current  # members on the current allocation (unchanged rows go first)
    r_ref, r_new = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    expected = ga_reference.repair(pop, data, r_ref)
    assert np.array_equal(repair(pop, data, r_new), expected)
    holes = expected.copy()
    holes[:, ::2] = 0
    assert np.array_equal(refill(holes.copy(), data, r_new), ga_reference.refill(holes.copy(), data, r_ref))
    assert r_new.random() == r_ref.random()


def test_compiled_refill_breaks_exact_ties_like_the_statement():
    # Four identical idle jobs on two nodes: every gain ties, so only the noise and the job order decide
    from . import ga_reference
    from .synthetic import make_problem

    pr = make_problem([[1.0, 1.9, 2.7, 3.4]] * 4, capacity=[4, 4], current=[[0, 0]] * 4, p=-1.0)
    data = RepairData(pr)
    for s in range(20):
        empty = np.zeros((5, 4, 2), np.int64)
        r_ref, r_new = np.random.default_rng(s), np.random.default_rng(s)
        assert np.array_equal(refill(empty.copy(), data, r_new), ga_reference.refill(empty.copy(), data, r_ref))
        assert r_new.random() == r_ref.random()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       p=st.one_of(st.just(-np.inf), st.sampled_from([1.0, 0.0, -1.0, 1e-9, -1e-9]), st.floats(-50, 1)))
def test_known_scores_are_the_evaluators_own_to_the_last_bit(testbed, hetero_scenario, seed, p):
    """A score looked up for a repeated allocation is the one evaluating it again gives: each allocation is
    scored on its own, whatever else is in the batch (duplicates, infeasible rows, one or two GPU types)."""
    from goodopt.solvers.genetic import KnownScores

    rng = np.random.default_rng(seed)
    for sc in (testbed, hetero_scenario):
        pr = sc.with_objective(p=p).problem()
        ev = pr.evaluator()
        pop = rng.integers(0, 3, size=(12, pr.n_jobs, pr.n_nodes))
        pop = np.concatenate([pop, pop[rng.integers(0, 12, size=12)]])  # every second half a repeat
        full = ev.evaluate(pop)
        expected = np.where(full.violation == 0, full.fitness, -np.inf)
        scores = KnownScores(ev)
        first = scores(pop[:7])
        assert np.array_equal(first, expected[:7])
        assert np.array_equal(scores(pop), expected)  # the first seven looked up, the rest evaluated
        alone = np.array([scores.known[row.astype(np.uint8).tobytes()] for row in pop])  # keys: a byte a cell
        assert np.array_equal(alone, expected)
        one = ev.evaluate(pop[3:4])  # one allocation alone scores as it does in the batch
        assert np.array_equal(np.where(one.violation == 0, one.fitness, -np.inf), expected[3:4])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cluster=st.sampled_from(sorted(_CLUSTERS)), n_jobs=st.integers(1, 12),
       pop_size=st.sampled_from([1, 2, 7, 20]), rate=st.sampled_from([0.0, 0.2, 1.0]),
       crossover_prob=st.sampled_from([0.0, 0.9, 1.0]), ties=st.booleans())
def test_compiled_breeding_follows_the_array_statement_draw_for_draw(seed, cluster, n_jobs, pop_size, rate,
                                                                    crossover_prob, ties):
    # Tournaments, crossover and mutation of one generation (the numpy engine's loop) give the statement's
    # children to the last GPU and leave the generator where it leaves it: odd and even populations, every or
    # no row hit or crossed, fitness with ties and infeasible (-inf) members, negative and over-full cells.
    from goodopt.solvers.ga_breeding import offspring_rows
    from goodopt.solvers.genetic import _children

    from . import ga_reference

    pr = random_scenario(seed, _CLUSTERS[cluster], n_jobs, running_fraction=0.7).problem()
    g = np.random.default_rng(seed)
    data = RepairData(pr)
    pop = g.integers(-2, 9, size=(pop_size, pr.n_jobs, pr.n_nodes))
    fit = g.choice([1.0, 2.0, -np.inf], size=pop_size) if ties else g.normal(size=pop_size)
    r_ref, r_new = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    expected = ga_reference.offspring(pop, fit, data, r_ref, crossover_prob, rate)
    assert np.array_equal(offspring_rows(pop, fit, r_new, crossover_prob, rate, pr.node_capacity, pr.current), expected)
    assert np.array_equal(mutate(pop, data, r_new, rate), ga_reference.mutate(pop, data, r_ref, rate))
    assert r_new.random() == r_ref.random()
    # the engine's one call per generation: the children repaired, the same draws in the same order
    expected = ga_reference.repair(ga_reference.offspring(pop, fit, data, r_ref, crossover_prob, rate), data, r_ref)
    assert np.array_equal(_children(pop, fit, data, r_new, crossover_prob, rate), expected)
    assert r_new.random() == r_ref.random()


def test_the_survivors_and_the_score_keys_are_gathered_as_the_arrays_would_be():
    from goodopt.solvers.ga_breeding import gather
    from goodopt.solvers.genetic import _row_bytes

    rng = np.random.default_rng(0)
    pop, kids = rng.integers(0, 5, size=(4, 3, 2)), rng.integers(0, 5, size=(3, 3, 2))
    rows = np.array([6, 0, 4, 4, 1])
    assert np.array_equal(gather(pop, kids, rows), np.concatenate([pop, kids])[rows])
    for shape in [(5, 3, 2), (3, 0, 4), (0, 3, 4)]:
        a = rng.integers(0, 5, size=shape)
        assert _row_bytes(a) == [row.astype(np.uint8).tobytes() for row in a]  # one byte a cell
        assert _row_bytes(a[::-1]) == [row.astype(np.uint8).tobytes() for row in a[::-1]]
    for high in (2, 256, 300):  # cells past a byte (and a negative one) keep their own bytes
        a = rng.integers(0, high, size=(40, 2, 2))
        a[0, 0, 0] = -1 if high == 300 else a[0, 0, 0]
        keys = _row_bytes(a)
        for i in range(len(a)):
            for j in range(len(a)):
                assert (keys[i] == keys[j]) == bool(np.array_equal(a[i], a[j]))
    assert len(_row_bytes(np.full((1, 2, 2), 255))[0]) != len(_row_bytes(np.full((1, 2, 2), 256))[0])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pop_size=st.integers(0, 30), n_jobs=st.integers(1, 9),
       capacities=st.lists(st.integers(1, 16), min_size=1, max_size=9), rate=st.sampled_from([0.0, 0.3, 1.0]))
def test_the_compiled_mutation_draws_numpys_numbers_on_any_node_sizes(seed, pop_size, n_jobs, capacities, rate):
    # The compiled mutation draws its numbers with numba's generator methods; they must be numpy's for the same
    # state, one GPU count per grown row up to that node's capacity (1-GPU nodes draw from a single value),
    # and leave the generator where the statement leaves it.
    from types import SimpleNamespace

    from goodopt.solvers.ga_breeding import mutate_rows

    from . import ga_reference

    g = np.random.default_rng(seed)
    capacity = np.array(capacities, dtype=np.int64)
    current = g.integers(0, 3, size=(n_jobs, len(capacity)))
    pop = g.integers(-1, 5, size=(pop_size, n_jobs, len(capacity)))
    data = SimpleNamespace(pr=SimpleNamespace(node_capacity=capacity, current=current))
    r_ref, r_new = np.random.default_rng(seed + 1), np.random.default_rng(seed + 1)
    expected = ga_reference.mutate(pop, data, r_ref, rate)
    got = pop.copy()
    mutate_rows(got, r_new, rate, capacity, current)
    assert np.array_equal(got, expected)
    assert r_new.random() == r_ref.random()
