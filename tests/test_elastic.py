"""Elastic clusters and auto-scalers: the node pool's bookkeeping, each auto-scaler's rule, the engine's invariants."""

import math
import pickle
from types import SimpleNamespace

import numpy as np
import pytest
from goodopt.solvers import solve

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import SimulationError, ValidationError
from goodopt.goodput import ThroughputParams
from goodopt.scenario import Objective
from goodopt.sim import SimConfig, model_truth, simulate
from goodopt.sim import autoscale as asc
from goodopt.sim.autoscale import (
    AUTOSCALERS,
    Autoscaler,
    ExactAutoscaler,
    ScaleState,
    ThroughputAutoscaler,
    make_autoscaler,
    utility_band_size,
)
from goodopt.sim.elastic import NodePool
from goodopt.sim.policies import goodput_problem
from goodopt.sim.workload import Workload, WorkloadJob

FOUR = Cluster((NodeGroup("t4", 4, 4),))  # 4 nodes x 4 GPUs


def pool(**kw):
    """The four-node pool at 1 USD per GPU-hour."""
    return NodePool(FOUR, np.full(4, 1 / 3600), **kw)


# ------------------------------------------------------------------ the pool
def test_a_requested_node_is_billed_at_once_and_joins_after_the_delay():
    p = pool(elastic=True, min_nodes=1, provision_delay_s=180)
    assert p.up.tolist() == [True, False, False, False]
    p.record(0.0)  # 1 node: 4 USD/h
    assert p.resize(0, 3, 600.0).size == 0
    assert p.counts(0) == (1, 2)
    assert p.record(600.0) == pytest.approx(12.0)  # provisioning nodes cost from the request
    p.join(779.0)
    assert p.counts(0) == (1, 2)
    p.join(780.0)
    assert p.counts(0) == (3, 0)
    assert p.view().cluster.n_nodes == 3 and p.view().index.tolist() == [0, 1, 2]
    # 600 s at 4 USD/h, then 3000 s at 12 USD/h
    cost, gpu_h = p.totals(0.0, 3600.0)
    assert cost == pytest.approx(4 * 600 / 3600 + 12 * 3000 / 3600)
    assert gpu_h == pytest.approx(cost)  # 1 USD per GPU-hour
    assert p.totals(300.0, 900.0)[0] == pytest.approx(4 * 300 / 3600 + 12 * 300 / 3600)


def test_a_shrink_cancels_requests_first_then_removes_the_last_provisioned_nodes():
    p = pool(elastic=True, min_nodes=1, provision_delay_s=100)
    p.resize(0, 2, 0.0)
    p.join(100.0)
    p.resize(0, 4, 200.0)  # nodes 2, 3 on their way
    assert p.resize(0, 3, 250.0).size == 0  # node 3 cancelled, nothing provisioned removed
    assert p.billed.tolist() == [True, True, True, False]
    removed = p.resize(0, 1, 260.0)  # node 2 cancelled, node 1 removed
    assert removed.tolist() == [1]
    assert p.billed.tolist() == [True, False, False, False]
    p.join(1000.0)
    assert p.up.tolist() == [True, False, False, False]  # a cancelled request never joins


def test_the_pool_refuses_sizes_outside_its_bounds():
    p = pool(elastic=True, min_nodes=1)
    with pytest.raises(SimulationError, match=r"allowed \[1, 4\]"):
        p.resize(0, 5, 0.0)
    with pytest.raises(SimulationError):
        p.resize(0, 0, 0.0)


def test_a_fixed_pool_has_every_node_up_and_bills_them_all():
    p = pool()
    assert p.view().cluster is FOUR
    p.record(0.0)
    assert p.totals(0.0, 1800.0) == pytest.approx((8.0, 8.0))


# ------------------------------------------------------------- auto-scalers
def test_the_utility_band_keeps_the_size_when_the_fittest_allocation_that_fits_lies_in_the_band():
    nodes, fit = [1, 2, 3, 4], [1.0, 1.5, 1.8, 1.9]
    assert utility_band_size(nodes, fit, [0.9, 0.6, 0.4, 0.3], 2, (0.35, 0.65)) == (2, 0.6)
    # above the band at 1 node: go to the utility nearest 0.5 (0.4 at 3 nodes beats 0.6 at 2)
    assert utility_band_size(nodes, fit, [0.9, 0.62, 0.45, 0.3], 1, (0.35, 0.65)) == (3, 0.9)
    # ties in distance: fewer nodes
    assert utility_band_size(nodes, fit, [0.9, 0.6, 0.4, 0.2], 1, (0.35, 0.65))[0] == 2
    # nothing fits the current size (0 nodes billed): the nearest to 0.5
    assert utility_band_size(nodes, fit, [0.9, 0.6, 0.5, 0.3], 0, (0.35, 0.65)) == (3, None)


def _job(params, *, limit=64, init=128, max_local=256, max_batch=4096, fixed=None):
    app = SimpleNamespace(init_batch_size=init, max_local_bsz=max_local, max_batch_size=max_batch)
    agent = SimpleNamespace(app=app, refit=lambda: params, gpu_limit=lambda: limit)
    return SimpleNamespace(agent=agent, fixed_gpus=fixed)


LINEAR = ThroughputParams(alpha_c=0.0, beta_c=1e-3, alpha_r=0.0, beta_r=0.0, alpha_n=0.0, beta_n=0.0, gamma=1.0)


def test_the_throughput_rule_doubles_a_job_while_doubling_pays_fifty_percent():
    scaler = ThroughputAutoscaler()
    assert scaler.job_gpus(_job(LINEAR), 4, 64) == 32  # linear scaling: up to the batch limit 4096 / 128
    assert scaler.job_gpus(_job(LINEAR, limit=8), 4, 64) == 8  # the GPUs the job may explore
    assert scaler.job_gpus(_job(LINEAR), 4, 16) == 16  # the cluster
    assert scaler.job_gpus(_job(LINEAR, fixed=1), 4, 64) == 1
    # each step takes 1.28 s of compute; within a node a 1.2 s sync, across nodes 10 s: 1 -> 2 GPUs gives
    # 2 * 1.28 / (1.28 + 1.2) = 1.03x, below 1.5x, so the job stays on one GPU
    slow = ThroughputParams(alpha_c=0.0, beta_c=0.01, alpha_r=1.2, beta_r=0.0, alpha_n=10.0, beta_n=0.0, gamma=1.0)
    assert scaler.job_gpus(_job(slow), 4, 64) == 1
    assert ThroughputAutoscaler(min_gain=0.0).job_gpus(_job(slow), 4, 64) == 4  # 2 -> 4 same node; 8 slower


def _state(jobs, cluster, billed=1, min_nodes=1, objective=None):
    return ScaleState(0.0, 0, cluster, tuple(jobs), np.zeros((len(jobs), cluster.n_nodes), np.int64), billed,
                      min_nodes, objective or Objective())


def _sim_jobs(truth, names):
    from goodopt.sim.agent import JobAgent

    out = []
    for i, app in enumerate(names):
        agent = JobAgent(truth[app], "t4")
        agent.observe((1,), 128, 0.1, 0.0, 2000.0)
        agent.observe((2,), 128, 0.12, 0.02, 2000.0)
        agent.observe((2, 2), 128, 0.2, 0.1, 2000.0)
        out.append(SimpleNamespace(name=f"{app}-{i}", application=app, arrival_s=0.0, n_restarts=0, agent=agent,
                                   fixed_gpus=None))
    return out


def test_the_exact_autoscaler_picks_the_size_brute_force_finds_best():
    truth = model_truth(("cifar10",))
    cluster = Cluster((NodeGroup("t4", 2, 3),))  # 3 nodes x 2 GPUs
    jobs = _sim_jobs(truth, ["cifar10", "cifar10"])
    for worth in (0.0, 0.3, 0.8, 5.0):
        scaler = ExactAutoscaler(gpu_worth=worth)
        scaler.reset(cluster, np.random.default_rng(0))
        state = _state(jobs, cluster)
        values = []
        for n in (1, 2, 3):  # speedups over one GPU: one yardstick for every size
            problem = goodput_problem(state.round_state(n), Objective(base="one-gpu"))
            res = solve(problem, "brute-force", {})
            values.append(2 * res.fitness - worth * 2 * n)
            assert scaler.value(state, n) == pytest.approx(values[-1], rel=1e-6)
        assert scaler.target(state) == 1 + int(np.argmax(values))
    assert values[0] == max(values)  # a GPU worth 5 speedups never pays: the smallest cluster


def test_autoscalers_size_an_empty_queue_to_the_minimum():
    for name in AUTOSCALERS:
        scaler = make_autoscaler(name)
        scaler.reset(FOUR, np.random.default_rng(0))
        assert scaler.target(_state([], FOUR, billed=3, min_nodes=2)) == 2


def test_a_wish_beyond_the_bounds_is_kept_next_to_the_size_given():
    class Greedy(Autoscaler):
        name = "greedy"

        def wanted(self, state):
            return 99

    scaler = Greedy()
    assert scaler.target(_state([], FOUR)) == 4 and scaler.last_stats["wanted"] == 99


# ------------------------------------------------------------------ engine
def _workload(n=4, spacing=300.0):
    jobs = [WorkloadJob(f"cifar10-{i}", i * spacing, "cifar10", 4, 512) for i in range(n)]
    return Workload(tuple(jobs), name="elastic")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "pollux" else n
                                  for n in sorted(AUTOSCALERS)])
def test_an_elastic_run_stays_in_bounds_and_bills_at_least_what_jobs_hold(name):
    cfg = SimConfig(autoscale=name, min_nodes=1, provision_delay_s=120, autoscale_options={"every_s": 120})
    res = simulate(_workload(), FOUR, "greedy", config=cfg, seed=0)
    r, s = res.rounds, res.summary
    assert r["nodes_billed"].between(1, 4).all() and (r["nodes_up"] <= r["nodes_billed"]).all()
    assert (r["gpus_allocated"] <= 4 * r["nodes_up"]).all()  # no GPU on a node not provisioned
    assert s["used_gpu_hours"] <= s["gpu_hours"] + 1e-9
    assert s["cost"] == pytest.approx(s["gpu_hours"] * 3.912 / 4)  # one price per GPU-hour
    assert s["n_jobs"] == 4 and res.jobs["completion_s"].notna().all()


def test_a_job_on_a_removed_node_restarts_and_pays_the_restart(monkeypatch):
    class Shrink(Autoscaler):
        """Two nodes, then one from t = 600 s."""

        name = "shrink"

        def wanted(self, state):
            return 2 if state.time_s < 600 else 1

    monkeypatch.setitem(AUTOSCALERS, "shrink", Shrink)
    wl = Workload((WorkloadJob("a", 0.0, "cifar10", 4, 512), WorkloadJob("b", 0.0, "cifar10", 4, 512)), name="two")
    cfg = SimConfig(autoscale="shrink", min_nodes=1, provision_delay_s=0, autoscale_options={"every_s": 60},
                    log_allocations=True)
    res = simulate(wl, FOUR, "greedy", config=cfg, seed=0)
    rounds = res.rounds.set_index("time_s")
    assert rounds.loc[540.0, "nodes_up"] == 2 and rounds.loc[600.0, "nodes_up"] == 1
    at = res.allocations[res.allocations.time_s == 540.0].set_index("job")["n_gpus"]
    assert at.sum() == 8  # both nodes in use before the shrink
    assert res.jobs["n_restarts"].sum() >= 1  # whoever was on node 1 started again elsewhere


def test_a_fixed_cluster_run_is_unchanged_by_the_elastic_settings():
    wl = _workload(2)
    a = simulate(wl, FOUR, "greedy", config=SimConfig(), seed=0).summary
    b = simulate(wl, FOUR, "greedy", config=SimConfig(min_nodes=3, provision_delay_s=999), seed=0).summary
    assert a["avg_jct"] == b["avg_jct"] and a["cost"] == pytest.approx(b["cost"])


# -------------------------------------------------------------- validation
def test_bad_elastic_settings_name_the_field_and_the_fix():
    with pytest.raises(ValidationError, match="autoscale.*unknown auto-scaler 'polux'.*did you mean 'pollux'"):
        SimConfig(autoscale="polux")
    with pytest.raises(ValidationError, match="autoscale_options.every.*did you mean 'every_s'.*valid options: every_s, min_gain"):
        SimConfig(autoscale="throughput", autoscale_options={"every": 60})
    with pytest.raises(ValidationError, match="min_nodes"):
        SimConfig(min_nodes=-1)
    with pytest.raises(ValidationError, match="min_nodes"):
        SimConfig(min_nodes=1.5)
    with pytest.raises(ValidationError, match="min_nodes: must be a number, got 'a'"):
        SimConfig(min_nodes="a")
    with pytest.raises(ValidationError, match="autoscale_options.pop_size: must be a number"):
        SimConfig(autoscale="pollux", autoscale_options={"pop_size": "x"})
    with pytest.raises(ValidationError, match="autoscale_options.n_gen: must be a whole number >= 2"):
        SimConfig(autoscale="pollux", autoscale_options={"n_gen": 2.5})
    with pytest.raises(ValidationError, match="max_utility: must be > 0.7"):
        SimConfig(autoscale="pollux", autoscale_options={"min_utility": 0.7, "max_utility": 0.6})
    with pytest.raises(ValidationError, match="min_nodes: 5 is more than the cluster's 4 nodes"):
        simulate(_workload(1), FOUR, "greedy", config=SimConfig(autoscale="pollux", min_nodes=5))
    with pytest.raises(ValidationError, match="autoscale: the .tiresias. policy plans on a fixed cluster"):
        simulate(_workload(1), FOUR, "tiresias", config=SimConfig(autoscale="pollux"))
    two_types = Cluster((NodeGroup("t4", 4, 2), NodeGroup("v100", 4, 2)))
    with pytest.raises(ValidationError, match="one node group"):
        simulate(_workload(1), two_types, "greedy", config=SimConfig(autoscale="pollux"),
                 truth=model_truth(("cifar10",), gpu_type=("t4", "v100")))
    err = pickle.loads(pickle.dumps(ValidationError("min_nodes", "bad", "fix")))
    assert isinstance(err, ValueError) and err.field == "min_nodes"


def test_the_cli_offers_every_autoscaler():
    from goodopt.cli import build_parser

    action = next(a for a in build_parser()._subparsers._group_actions[0].choices["simulate"]._actions
                  if a.dest == "autoscale")
    assert set(action.choices) == {"none", *AUTOSCALERS}
    assert math.isclose(SimConfig().provision_delay_s, 180.0)
    band = asc.PolluxAutoscaler.Options.defaults()
    assert band["min_utility"] == 0.35 and band["max_utility"] == 0.65


def test_a_sweep_varies_the_autoscaler_and_refuses_a_fixed_cluster_policy_when_read(tmp_path):
    from goodopt.runs import spec_from_dict
    from goodopt.runs.tasks import expand

    base = {"name": "as", "kind": "simulate", "generated": {"loads": [1.0], "seeds": [0], "hours": 0.5},
            "policies": ["greedy"], "config": {"min_nodes": 2, "autoscale_options": {"every_s": 600}}}
    tasks = expand(spec_from_dict({**base, "vary": {"autoscale": ["none", "pollux", "exact"]}}))
    assert [t.config["autoscale"] for t in tasks] == ["none", "pollux", "exact"]
    assert all(t.config["min_nodes"] == 2 and dict(t.config["autoscale_options"]) == {"every_s": 600}
               for t in tasks)
    with pytest.raises(ValidationError, match=r"spec.vary.autoscale\[1\].*did you mean 'pollux'"):
        spec_from_dict({**base, "vary": {"autoscale": ["none", "polux"]}})
    with pytest.raises(ValidationError, match="spec.policies.tiresias: the 'tiresias' policy plans on a fixed"):
        spec_from_dict({**base, "policies": ["tiresias"], "config": {"autoscale": "pollux"}})
    with pytest.raises(ValidationError, match="spec.config.autoscale.*must be a name"):
        spec_from_dict({**base, "config": {"autoscale": 3}})
    with pytest.raises(ValidationError, match="spec.cluster: auto-scaling sizes one node group; the cluster has 3"):
        spec_from_dict({**base, "policies": ["milp"], "cluster": "sia-default", "config": {"autoscale": "pollux"}})


def test_pollux_utility_uses_speedups_over_one_gpu():
    truth = model_truth(("cifar10",))
    cluster = Cluster((NodeGroup("t4", 2, 3),))
    jobs = _sim_jobs(truth, ["cifar10"])
    state = _state(jobs, cluster)
    problem = goodput_problem(state.round_state(3), state.objective)
    alloc = np.zeros((2, 1, 3), np.int64)
    alloc[0, 0, 0] = 1  # one GPU: speedup 1, utility 1
    alloc[1, 0, :2] = 2  # four GPUs on two nodes: below ideal scaling
    s = asc.one_gpu_speedups(problem, alloc, state)
    assert s[0, 0] == pytest.approx(1.0)
    assert 1.0 < s[1, 0] < 4.0


def test_from_zero_nodes_no_job_starts_before_the_first_node_joins():
    cfg = SimConfig(autoscale="throughput", min_nodes=0, provision_delay_s=180)
    res = simulate(_workload(2), FOUR, "greedy", config=cfg, seed=0)
    first = res.rounds.iloc[0]
    assert first["nodes_up"] == 0 and first["nodes_billed"] >= 1 and first["gpus_allocated"] == 0
    assert res.jobs["start_s"].min() == pytest.approx(180.0)  # the round at which the nodes joined
    assert res.summary["cost"] > 0 and res.jobs["completion_s"].notna().all()


def test_an_idle_cluster_shrinks_at_the_autoscalers_next_look_not_at_the_next_arrival():
    wl = Workload((WorkloadJob("early", 0.0, "cifar10", 4, 512), WorkloadJob("late", 20 * 3600.0, "cifar10", 4, 512)),
                  name="gap")
    cfg = SimConfig(autoscale="throughput", min_nodes=1, provision_delay_s=0, autoscale_options={"every_s": 600})
    res = simulate(wl, FOUR, "greedy", config=cfg, seed=0)
    done = res.jobs.set_index("job")["completion_s"]
    busy_h = (done["early"] + done["late"] - 20 * 3600.0) / 3600
    gap_h = (20 * 3600.0 - done["early"]) / 3600
    assert res.rounds.nodes_billed.max() > 1  # it grew while the jobs ran
    # billed: at most the whole cluster while busy and for one look (+ a round) after, one node in the gap
    assert res.summary["gpu_hours"] <= 16 * (busy_h + 660 / 3600) + 4 * gap_h + 1e-6


def test_the_simulators_problem_is_the_problem_of_the_same_round_written_as_a_scenario():
    # goodput_problem fills the problem's columns straight from the simulation's state; written out as a
    # scenario (each job its own application, its agent's profile, its age and restarts, Sia's per-application
    # restart delays) the same round gives the same arrays, except that a job holding nothing pays no
    # re-allocation factor in the simulator
    import dataclasses

    from goodopt.scenario import Job, Scenario

    truth = model_truth(("cifar10", "bert"))
    cluster = Cluster((NodeGroup("t4", 4, 3),))
    jobs = _sim_jobs(truth, ["cifar10", "bert", "cifar10"])
    jobs[0].arrival_s, jobs[0].n_restarts = 100.0, 2
    jobs[1].arrival_s = 3000.0
    current = np.array([[2, 0, 0], [0, 4, 0], [0, 0, 0]], np.int64)
    state = SimpleNamespace(cluster=cluster, jobs=tuple(jobs), current=current, time_s=5000.0)
    objective = Objective.sia()
    got = goodput_problem(state, objective, max_gpus=6)

    written = Scenario(cluster=cluster, profiles={job.name: job.agent.profile(job.name) for job in jobs},
                       objective=dataclasses.replace(objective, restart_delays_s={
                           job.name: objective.restart_delay_of(job.application) for job in jobs}),
                       jobs=tuple(Job(name=job.name, application=job.name, age_s=5000.0 - job.arrival_s,
                                      n_reallocs=job.n_restarts, max_gpus=6, phi=job.agent.phi or 1e12,
                                      allocation={cluster.node_names[n]: int(current[j, n])
                                                  for n in np.flatnonzero(current[j])})
                                  for j, job in enumerate(jobs))).problem()
    assert 0 < got.realloc[0] < 1 and got.realloc[2] == 1.0 and written.realloc[2] < 1.0
    assert np.array_equal(got.realloc[:2], written.realloc[:2])
    for f in dataclasses.fields(got):
        if f.name != "realloc":
            a, b = getattr(got, f.name), getattr(written, f.name)
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name
