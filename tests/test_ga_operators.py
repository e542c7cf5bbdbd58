"""The GA's operators: feasibility after repair, row exchange, seeded randomness."""

import numpy as np
from goodopt.solvers.ga_operators import RepairData, mutate, refill, repair
from hypothesis import given, settings
from hypothesis import strategies as st

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
