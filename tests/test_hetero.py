"""Heterogeneous clusters: the round mechanism, the goodput MILP with Sia's options, the simulator."""

import numpy as np
import pytest
from goodopt.solvers import Termination
from hypothesis import example, given, settings
from hypothesis import strategies as st

import goodopt
from goodopt.errors import ScenarioError, SimulationError, ValidationError
from goodopt.families import family
from goodopt.gavel.round_mechanism import RoundMechanism, place_round
from goodopt.scenario import Objective
from goodopt.sim import generate_workload, model_truth, simulate
from goodopt.sim.config import SimConfig
from goodopt.sim.workload import Workload

from .reference import ref_fitness_and_speedups as ref_fitness


# ------------------------------------------------------------ round mechanism
@pytest.mark.parametrize("x,scale,capacity", [
    ([[0.6, 0.2], [0.3, 0.5], [0.1, 0.3]], [1, 1, 1], [1, 1]),
    # a mix of the two full assignments (j0 a, j1 b) and (j0 b, j1 a), j2 on b and j3 on a throughout
    ([[0.5, 0.5], [0.5, 0.5], [0.0, 1.0], [1.0, 0.0]], [2, 2, 1, 1], [3, 3]),
    ([[0.5, 0.0], [0.0, 0.5], [0.5, 0.5]], [1, 1, 1], [1, 1]),  # capacity exactly used
])
def test_round_mechanism_realises_the_fractions(x, scale, capacity):
    x = np.array(x)
    names = [f"j{i}" for i in range(len(x))]
    m = RoundMechanism(("a", "b"))
    cur = np.full(len(x), -1)
    for _ in range(3000):
        a = m.assign(names, x, scale, capacity, cur)
        used = np.bincount(a[a >= 0], weights=np.array(scale)[a >= 0], minlength=2)
        assert np.all(used <= capacity)  # never over a type's capacity
        m.record(names, a, 1.0)
        cur = a
    assert np.allclose(m.fractions_received(names), x, atol=0.01)


def test_lease_continuation_keeps_nodes_and_ties_go_to_the_current_type():
    m = RoundMechanism(("a", "b"))
    x = np.array([[0.5, 0.5]])
    # equal priority on both types (never run): the current type wins the tie
    assert m.assign(["j"], x, [1], [1, 1], current_type=np.array([1]))[0] == 1
    node_type = np.array([0, 0, 1])
    cap = np.array([4, 4, 4])
    current = np.array([[0, 2, 0], [0, 0, 0]])
    alloc, failed = place_round(node_type, cap, np.array([0, 0]), np.array([2, 4]), current)
    assert not failed and alloc[0].tolist() == [0, 2, 0]  # kept its node
    assert alloc[1].sum() == 4 and np.all(node_type[alloc[1] > 0] == 0)
    alloc, failed = place_round(node_type, cap, np.array([0, 0]), np.array([4, 6]), np.zeros((2, 3), int))
    assert failed == [0] or failed == [1]  # 10 GPUs do not fit on 8 of type a


# ------------------------------------------------------------ goodput MILP
def hetero_tiny(seed, p, sia):
    sc = family("hetero-tiny").scenario(seed)
    return sc.with_objective(**(dict(Objective.sia(p=p).__dict__) if sia else {"p": p})).problem()


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 5000), p=st.sampled_from([-1.0, -0.5, 1.0, -np.inf]), sia=st.booleans())
# regression: HiGHS (presolve off) claimed a max-min optimum below greedy's and called the floor above it
# infeasible; the verdict is `numerical` and the second run (presolve on) certifies
@example(seed=319, p=-np.inf, sia=False)
def test_hetero_milp_equals_brute_force_and_never_spans_types(seed, p, sia):
    _milp_equals_brute_force_and_never_spans_types(seed, p, sia)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 5000), p=st.sampled_from([-1.0, -0.5, 1.0, -np.inf]), sia=st.booleans())
def test_hetero_milp_equals_brute_force_on_many_more_draws(seed, p, sia):
    _milp_equals_brute_force_and_never_spans_types(seed, p, sia)


def _milp_equals_brute_force_and_never_spans_types(seed, p, sia):
    if sia and not np.isfinite(p):
        return  # the idle penalty needs a finite p
    pr = hetero_tiny(seed, p, sia)
    bf = goodopt.solve(pr, "brute-force")
    res = goodopt.solve(pr, "milp")
    assert res.status == Termination.OPTIMAL and res.feasible
    assert res.fitness == pytest.approx(bf.fitness, rel=1e-6, abs=1e-9)
    for method, opts in (("milp", None), ("greedy", None), ("ga", {"seed": 0}), ("gavel", None)):
        x = goodopt.solve(pr, method, opts).x
        for j in range(pr.n_jobs):  # one GPU type per job
            assert len({pr.node_type[n] for n in np.flatnonzero(x[j])}) <= 1


def test_sia_objective_matches_the_independent_reference():
    sc = family("hetero-16").scenario(2).with_objective(**Objective.sia().__dict__)
    pr = sc.problem()
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = goodopt.solve(pr, "ga", {"seed": int(rng.integers(1000)), "n_gen": 3, "pop_size": 10}).x
        fit, _ = ref_fitness(sc, pr, x.tolist())
        assert pr.evaluator().fitness(x) == pytest.approx(fit, rel=1e-9)


def test_sia_options():
    o = Objective.sia()
    assert o.p == -0.5 and o.base == "min-config" and o.idle_penalty == 1.1
    assert o.restart_delay_of("imagenet") == 250 and o.restart_delay_of("unknown") == o.restart_delay_s
    assert o.idle_value() == pytest.approx(1.1 ** (1 / -0.5))
    pr = family("hetero-16").scenario(0).with_objective(**o.__dict__).problem()
    # min-config normalisation: every job's smallest positive speedup is exactly 1
    s = np.where(pr.speedup_table > 0, pr.speedup_table, np.inf).reshape(pr.n_jobs, -1).min(axis=1)
    assert np.allclose(s, 1.0)
    with pytest.raises(ScenarioError, match="idle_penalty"):
        Objective(p=-np.inf, idle_penalty=1.1)
    with pytest.raises(ScenarioError, match="objective.preset"):
        goodopt.scenario_from_dict({"cluster": {"node_groups": [{"gpu_type": "t4", "gpus_per_node": 4,
                                                                 "n_nodes": 1}]},
                                    "objective": {"preset": "gandiva"}, "jobs": [{"name": "a", "application": "ncf"}]})


def test_shipped_heterogeneous_scenarios_load_and_solve():
    for name in ("sia-default", "gavel-default"):
        pr = goodopt.load_scenario(name).problem()
        assert pr.n_gpu_types == 3
        res = goodopt.solve(pr, "milp", {"time_limit_s": 20})
        assert res.feasible and res.status in (Termination.OPTIMAL, Termination.TIME_LIMIT)
        assert res.fitness <= res.bound * (1 + 1e-6)


def test_dual_feasible_functions_never_exceed_one_node():
    from goodopt.formulations.milp import dual_feasible_functions

    def partitions(n, largest):
        if n == 0:
            yield []
            return
        for i in range(min(n, largest), 0, -1):
            for rest in partitions(n - i, i):
                yield [i] + rest

    for cap in range(1, 11):
        fs = dual_feasible_functions(cap)
        assert all(f[cap] == 1.0 for f in fs)
        for f in fs:
            for total in range(cap + 1):
                for part in partitions(total, max(total, 1)):
                    assert sum(f[k] for k in part) <= 1 + 1e-12


def test_dual_feasible_functions_are_shared_read_only():
    # every configuration model asks for them again (about 1 ms each; 9 times in one sia-64 solve): computed
    # once per capacity, so a caller must not be able to change them for the next
    from goodopt.formulations.milp import dual_feasible_functions

    first, again = dual_feasible_functions(8), dual_feasible_functions(8)
    assert len(first) == len(again) > 1 and all(a is b for a, b in zip(first, again))
    with pytest.raises(ValueError, match="read-only"):
        first[0][3] = 2.0
    first.clear()  # the list is the caller's own
    assert len(dual_feasible_functions(8)) == len(again)


@pytest.mark.parametrize("seed", [0, 2])
def test_packing_cuts_certify_the_sia_cluster_quickly(seed):
    # without the bin-packing cuts these rounds ended at a 60 s time limit with a 0.4-8% gap; the configuration
    # level from the start (no LP relaxation first, which certifies seed 0 by its reduced-cost dive instead)
    pr = family("sia-64").scenario(seed).problem()
    res = goodopt.solve(pr, "milp", {"time_limit_s": 60, "lp_rounding": False})
    assert res.status == Termination.OPTIMAL and "placed" in res.extra["proof"]
    assert res.gap <= 1e-6


# ------------------------------------------------------------ simulator
@pytest.fixture(scope="module")
def small_hetero():
    cluster = goodopt.Cluster((goodopt.NodeGroup("t4", 4, 2), goodopt.NodeGroup("a100", 8, 1)))
    wl = generate_workload(3, load=1.0, hours=0.5, name="tiny-hetero")
    wl = Workload(jobs=tuple([j for j in wl.jobs if j.num_replicas <= 8][:6]), name=wl.name)
    truth = model_truth(sorted({j.application for j in wl.jobs}), gpu_type=cluster.gpu_type_names)
    return cluster, wl, truth


@pytest.mark.parametrize("policy,opts", [("milp", {"time_limit_s": 5.0}), ("sia", {"time_limit_s": 5.0}),
                                         ("pollux", {"n_gen": 10}), ("gavel", {"round_s": 120.0}),
                                         ("gavel", {"policy": "finish_time_fairness"}), ("tiresias", {})])
def test_every_heterogeneous_policy_completes_without_spanning_types(small_hetero, policy, opts):
    cluster, wl, truth = small_hetero
    res = simulate(wl, cluster, policy, truth=truth, policy_options=opts, seed=1)
    assert len(res.jobs) == wl.n_jobs and res.jobs["completion_s"].notna().all()
    # the engine checks one type per job every round; the log shows both types were used by someone
    assert res.summary["avg_jct"] > 0


def test_engine_rejects_a_policy_that_spans_types(small_hetero):
    cluster, wl, truth = small_hetero

    class Spanner(goodopt.sim.Policy):
        name = "spanner"

        def allocate(self, state):
            a = np.zeros_like(state.current)
            a[0, 0], a[0, 2] = 1, 1  # one T4 and one A100
            return a

    with pytest.raises(SimulationError, match="spans GPU types"):
        simulate(wl, cluster, Spanner(), truth=truth)


def test_missing_truth_for_a_type_is_named(small_hetero):
    cluster, wl, _ = small_hetero
    truth = model_truth(sorted({j.application for j in wl.jobs}), gpu_type="t4")
    with pytest.raises(ValidationError, match="a100"):
        simulate(wl, cluster, "milp", truth=truth, config=SimConfig())


def test_unaware_pollux_tells_the_scheduler_one_model_for_every_type(small_hetero):
    from goodopt.sim.agent import HeteroAgent

    cluster, wl, truth = small_hetero
    app = wl.jobs[0].application
    apps = {t: truth.on(app, t) for t in cluster.gpu_type_names}
    pooled, aware = HeteroAgent(apps, pooled=True), HeteroAgent(apps)
    aware.bootstrap(apps, 1000.0)
    pooled.bootstrap(apps, 1000.0)  # no profiling when unaware
    assert pooled.n_fits == 0 and len(set(pooled.models.values())) == 1
    pa, pp = aware.profile("x"), pooled.profile("x")
    assert pa.gpu_types["t4"].params != pa.gpu_types["a100"].params  # told apart after profiling
    assert pp.gpu_types["t4"].params == pp.gpu_types["a100"].params


def test_gavel_water_filling_reads_the_workloads_entity_column(small_hetero, tmp_path):
    from goodopt.sim.workload import load_workload

    cluster, wl, truth = small_hetero
    frame = wl.to_frame()
    frame["entity"] = ["team-a" if i % 2 else "team-b" for i in range(len(frame))]
    frame.to_csv(tmp_path / "w.csv", index=False)
    loaded = load_workload(tmp_path / "w.csv")
    assert {j.entity for j in loaded.jobs} == {"team-a", "team-b"}
    opts = {"policy": "max_min_fairness_water_filling", "round_s": 120.0,
            "entities": {"team-a": {"weight": 3}, "team-b": {"weight": 1, "policy": "fifo"}}}
    res = simulate(loaded, cluster, "gavel", truth=truth, policy_options=opts, seed=1)
    assert res.jobs["completion_s"].notna().all()
    with pytest.raises(ValidationError, match="team-b"):
        simulate(loaded, cluster, "gavel", truth=truth, seed=1,
                 policy_options={**opts, "entities": {"team-a": {"weight": 3}}})
    (tmp_path / "bad.csv").write_text("name,time,application,num_replicas,batch_size,entitty\nj,0,cifar10,1,128,a\n")
    with pytest.raises(ValidationError, match="did you mean 'entity'"):
        load_workload(tmp_path / "bad.csv")
