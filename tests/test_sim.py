"""The trace-driven simulator: ground truth, job agent, engine invariants, policies."""

import json

import numpy as np
import pandas as pd
import pytest

from goodopt.cli import main
from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import SimulationError, ValidationError
from goodopt.runs.execute import map_tasks
from goodopt.runs.tasks import cluster_spec, run_simulation, sim_task
from goodopt.sim import POLICIES, SimConfig, generate_workload, model_truth, simulate
from goodopt.sim.policies import Policy
from goodopt.sim.workload import Workload, WorkloadJob, load_workload

APPS = ("cifar10", "ncf")


@pytest.fixture(scope="module")
def truth():
    return model_truth(APPS)


@pytest.fixture(scope="module")
def small_cluster():
    return Cluster((NodeGroup("t4", 4, 2),))


def tiny_workload(n_cifar=3, n_ncf=3, spacing_s=120.0):
    jobs = [WorkloadJob(f"cifar10-{i}", i * spacing_s, "cifar10", 4, 512) for i in range(n_cifar)]
    jobs += [WorkloadJob(f"ncf-{i}", 30.0 + i * spacing_s, "ncf", 1, 32768) for i in range(n_ncf)]
    return Workload(tuple(jobs), name="tiny")


FAST = {"pollux": {"n_gen": 15, "pop_size": 30}, "milp": {"time_limit_s": 5.0}}


# ----------------------------------------------------------------- engine
@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_completes_the_tiny_workload(policy, truth, small_cluster):
    res = simulate(tiny_workload(), small_cluster, policy, truth=truth, seed=1, policy_options=FAST.get(policy))
    jobs = res.jobs
    assert len(jobs) == 6 and jobs["completion_s"].notna().all()
    # a job cannot finish before the first round boundary after its arrival plus the restart delay
    first_round = np.ceil(jobs["arrival_s"] / 60.0) * 60.0
    assert (jobs["completion_s"] >= first_round + 30.0 - 1e-9).all()
    alloc = res.allocations
    assert (alloc.groupby("time_s")["n_gpus"].sum() <= small_cluster.n_gpus).all()
    # no progress without GPUs
    alloc = alloc.sort_values(["job", "time_s"])
    dprog = alloc.groupby("job")["progress"].diff().fillna(alloc["progress"])
    assert (dprog[alloc["n_gpus"] == 0] == 0).all()
    assert (alloc.loc[alloc.job.str.startswith("ncf"), "n_gpus"] <= 1).all()
    for key in ("avg_jct", "makespan", "p99_jct", "restarts"):
        assert key in res.summary


@pytest.mark.parametrize("policy", ["pollux", "greedy", "tiresias"])
def test_same_seed_same_run(policy, truth, small_cluster):
    a = simulate(tiny_workload(), small_cluster, policy, truth=truth, seed=3, policy_options=FAST.get(policy))
    b = simulate(tiny_workload(), small_cluster, policy, truth=truth, seed=3, policy_options=FAST.get(policy))
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.allocations, b.allocations)


class Scripted(Policy):
    """One job: GPUs per round from a script (then 4 GPUs on node 0)."""

    name = "scripted"

    def __init__(self, script):
        super().__init__()
        self.script = script

    def allocate(self, state):
        a = np.zeros_like(state.current)
        rows = self.script.get(state.round_index, [4, 0])
        a[0] = rows
        return a


def test_restart_delay_and_progress_by_hand(truth, small_cluster):
    wl = Workload((WorkloadJob("c", 0.0, "cifar10", 4, 512),))
    script = {0: [1, 0], 1: [1, 0], 2: [0, 0], 3: [2, 0], 4: [2, 0]}
    res = simulate(wl, small_cluster, Scripted(script), truth=truth, seed=0)
    app = truth["cifar10"]
    al = res.allocations.set_index("time_s")
    rate1 = app.gain(128, 0) / app.iteration_time((1,), 128, 0)  # 1 GPU at the initial batch, epoch 0
    # round 0: 30 s restart, 30 s of progress
    assert al.loc[0.0, "progress"] == pytest.approx(rate1 * 30.0)
    # round 1: unchanged allocation, a full round (the batch was chosen at the start)
    b = al.loc[60.0]
    assert b["progress"] > al.loc[0.0, "progress"]
    # round 2: no GPUs, no progress; round 3: a change, restart delay again
    assert al.loc[120.0, "progress"] == al.loc[60.0, "progress"] and al.loc[120.0, "n_gpus"] == 0
    job = res.jobs.iloc[0]
    assert job["n_restarts"] == 2  # start on 1 GPU, preempted, restarts on 2 and then on 4 GPUs


class Overfull(Policy):
    name = "overfull"

    def allocate(self, state):
        a = np.zeros_like(state.current)
        a[:, 0] = 4
        return a


def test_capacity_violation_is_an_error(truth, small_cluster):
    with pytest.raises(SimulationError, match="over capacity"):
        simulate(tiny_workload(2, 0), small_cluster, Overfull(), truth=truth)


class Never(Policy):
    name = "never"

    def allocate(self, state):
        return np.zeros_like(state.current)


def test_starving_policy_stops_with_named_jobs(truth, small_cluster):
    with pytest.raises(SimulationError, match="unfinished jobs include"):
        simulate(tiny_workload(1, 0), small_cluster, Never(), truth=truth, config=SimConfig(max_time_s=3600))


def test_interference_slows_shared_multi_node_jobs(truth):
    cluster = Cluster((NodeGroup("t4", 4, 3),))
    jobs = (WorkloadJob("a", 0.0, "cifar10", 6, 2048), WorkloadJob("b", 0.0, "cifar10", 6, 2048))
    wl = Workload(jobs)
    base = simulate(wl, cluster, "fifo", truth=truth)  # packed: 4+2 and 2+4 share the middle node
    slow = simulate(wl, cluster, "fifo", truth=truth, config=SimConfig(interference_slowdown=0.5))
    assert slow.summary["avg_jct"] > base.summary["avg_jct"] * 1.3


def test_fifo_starts_jobs_in_arrival_order(truth, small_cluster):
    res = simulate(tiny_workload(4, 2, spacing_s=10.0), small_cluster, "fifo", truth=truth)
    jobs = res.jobs.sort_values("arrival_s")
    assert jobs["start_s"].is_monotonic_increasing


def test_tiresias_demotes_after_threshold(truth, small_cluster):
    wl = Workload((WorkloadJob("long", 0.0, "cifar10", 8, 2048), WorkloadJob("late", 600.0, "cifar10", 8, 2048)))
    res = simulate(wl, small_cluster, "tiresias", truth=truth, policy_options={"threshold_gpu_s": 8 * 300.0})
    late = res.jobs.set_index("job").loc["late"]
    long = res.jobs.set_index("job").loc["long"]
    # "late" arrives after "long" has attained 8 GPUs x 10 min > threshold: it preempts it
    assert late["start_s"] == pytest.approx(600.0)
    assert long["n_restarts"] >= 1
    fifo = simulate(wl, small_cluster, "fifo", truth=truth).jobs.set_index("job")
    assert fifo.loc["late", "start_s"] > 600.0


def test_bad_inputs_name_the_field(truth, small_cluster):
    with pytest.raises(ValidationError, match="policy"):
        simulate(tiny_workload(), small_cluster, "nope", truth=truth)
    with pytest.raises(ValidationError, match="interference_slowdown"):
        SimConfig(interference_slowdown=1.5)
    with pytest.raises(ValidationError, match="application"):
        simulate(Workload((WorkloadJob("x", 0, "bert", 1, 12),)), small_cluster, "fifo", truth=truth)
    with pytest.raises(ValidationError, match="num_replicas"):
        simulate(Workload((WorkloadJob("x", 0, "cifar10", 64, 512),)), small_cluster, "tiresias", truth=truth)


# --------------------------------------------------------------- workloads
def test_generator_is_seeded_and_scales_with_load(tmp_path):
    a, b = generate_workload(5), generate_workload(5)
    assert a == b and a != generate_workload(6)
    assert a.n_jobs == 160 and generate_workload(5, load=2.0).n_jobs == 320
    assert generate_workload(5, hours=2, load=0.5).n_jobs == 20
    times = [j.arrival_s for j in a.jobs]
    assert times == sorted(times) and 0 <= times[0] and times[-1] <= 8 * 3600
    path = a.save(tmp_path / "w.csv")
    assert load_workload(path).jobs == a.jobs


def test_published_workloads_load(traces):
    wl = load_workload(traces / "pollux" / "workloads" / "load-1.0" / "workload-6.csv")
    assert wl.n_jobs == 160 and {j.application for j in wl.jobs} <= set(generate_workload(0).to_frame().application) | {
        "imagenet", "yolov3", "bert"}


# --------------------------------------------------------------------- CLI
def test_cli_simulate_json_and_files(tmp_path, capsys):
    rc = main(["simulate", "generated:0.1:0", "--policy", "fifo", "--truth", "model", "--nodes", "12",
               "--out", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("avg_jct", "makespan", "p99_jct", "restarts"):
        assert key in out
    for f in ("jobs.csv", "rounds.csv", "allocations.csv", "summary.json"):
        assert (tmp_path / f).is_file()
    assert pd.read_csv(tmp_path / "jobs.csv")["jct_s"].mean() == pytest.approx(out["avg_jct"])


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_sweep_pool_matches_serial(tmp_path):
    mix = {"cifar10": 1, "ncf": 1}
    wls = [str(generate_workload(s, hours=0.5, load=0.5, mix=mix).save(tmp_path / f"w{s}.csv")) for s in (1, 2)]
    cluster = cluster_spec(Cluster((NodeGroup("t4", 4, 4),)))
    tasks = [sim_task(w, p, cluster) for w in wls for p in ("greedy", "tiresias")]

    def rows(workers):
        return pd.DataFrame([row for _, row, _ in map_tasks(run_simulation, tasks, workers=workers,
                                                              progress=False)])

    serial, pooled = rows(1), rows(2)
    cols = ["workload", "policy", "avg_jct", "makespan", "restarts"]
    pd.testing.assert_frame_equal(serial[cols], pooled[cols])
    assert len(serial) == 4 and serial["avg_jct"].gt(0).all()


@pytest.mark.slow
def test_cli_simulate_folder_sweep(tmp_path, capsys):
    d = tmp_path / "wls"
    for s in (1, 2):
        generate_workload(s, hours=0.5, load=0.5, mix={"cifar10": 1, "ncf": 1}).save(d / f"w{s}.csv")
    rc = main(["simulate", str(d), "--policy", "tiresias,fifo", "--truth", "model", "--nodes", "4",
               "--out", str(tmp_path / "out"), "--workers", "2", "--quiet"])
    assert rc == 0
    table = pd.read_csv(tmp_path / "out" / "sweep.csv")
    assert len(table) == 4 and set(table.policy) == {"tiresias", "fifo"}
    assert "fifo" in capsys.readouterr().out


# ----------------------------------------------------------------- engine settings of the papers' simulators
def test_per_application_restart_delays_and_calibration_slowdowns_act_as_published(truth, small_cluster):
    """One cifar10 job under FIFO (it starts once, never moves): a 50 s restart delay adds exactly 20 s to
    the 30 s default; a slowdown of 1.8 stretches the running time 1.8-fold; Sia's preset does both."""
    wl = Workload((WorkloadJob("c", 0.0, "cifar10", 4, 512),))

    def jct(**config):
        res = simulate(wl, small_cluster, "fifo", truth=truth, config=SimConfig(**config))
        assert res.jobs.n_restarts.iloc[0] == 0
        return float(res.jobs.jct_s.iloc[0])

    base = jct()
    assert jct(restart_delays_s={"cifar10": 50}) == pytest.approx(base + 20, abs=1e-6)
    assert jct(restart_delays_s={"ncf": 500}) == pytest.approx(base, abs=1e-6)  # another application's
    assert jct(slowdowns={"cifar10": 1.8}) - 30 == pytest.approx(1.8 * (base - 30), rel=1e-6)
    sia = SimConfig.sia()
    assert sia.restart_delay_of("cifar10") == 50 and sia.slowdown_of("cifar10") == 1.8
    assert jct(**{k: getattr(sia, k) for k in ("restart_delays_s", "slowdowns")}) - 50 == \
        pytest.approx(1.8 * (base - 30), rel=1e-6)


@pytest.mark.parametrize("bad, field", [({"slowdowns": {"cifar10": 0.5}}, "slowdowns.cifar10"),
                                        ({"restart_delays_s": {"bert": -1}}, "restart_delays_s.bert"),
                                        ({"restart_delays_s": 5}, "restart_delays_s")])
def test_per_application_engine_settings_are_checked(bad, field):
    with pytest.raises(ValidationError) as exc:
        SimConfig(**bad)
    assert exc.value.field == field


def test_a_fixed_batch_never_rounds_above_the_application_maximum(truth):
    cifar = truth["cifar10"]  # max batch 4096
    local, accum = cifar.fixed_config(4096, 6)  # 4096 / 6 = 682.7 per GPU
    assert 6 * local * (accum + 1) <= 4096 and local == 682
    local, accum = cifar.fixed_config(2048, 8)  # divides: unchanged
    assert (local, accum) == (256, 0)


def test_most_free_placement_takes_the_freest_node_first():
    from goodopt.placement import place_most_free

    types = np.zeros(3, dtype=np.int64)
    free = np.array([4, 2, 3])
    assert place_most_free(types, free, 0, 5).tolist() == [4, 0, 1]
    assert place_most_free(types, free, 0, 2).tolist() == [2, 0, 0]
    assert place_most_free(types, free, 0, 10) is None
    assert free.tolist() == [4, 2, 3]  # nothing modified


@pytest.mark.parametrize("singles_first", [False, True])
@pytest.mark.parametrize("family", ["hetero-16", "sia-64", "mixed-64", "cluster-256"])
def test_chosen_configurations_are_placed_by_the_documented_rule(family, singles_first):
    # Keep configurations take their rows, multi-node moves then single-node moves (single-node moves first with
    # singles_first), largest first, each by place_one on what is left; place_configs gives the same rows and
    # the same failures, job for job.
    from goodopt.formulations.configs import enumerate_configs

    from goodopt.families import FAMILIES
    from goodopt.placement import place_configs, place_one

    for seed in range(3):
        pr = FAMILIES[family].scenario(seed).problem()
        cs = enumerate_configs(pr)
        rng = np.random.default_rng(seed)
        for _ in range(4):
            chosen = np.array([s.start + rng.integers(s.stop - s.start) if s.stop > s.start and rng.random() < 0.9
                               else -1 for s in map(cs.of_job, range(pr.n_jobs))])
            alloc, failed = place_configs(pr, cs, chosen, singles_first=singles_first)
            ref, ref_failed = np.zeros_like(alloc), []
            free, blocked = pr.node_capacity.copy(), np.zeros(pr.n_nodes, bool)
            jobs = [j for j in range(pr.n_jobs) if chosen[j] >= 0]
            jobs.sort(key=lambda j: (not cs.keep[chosen[j]], bool(cs.multi[chosen[j]]) == singles_first,
                                     -cs.n_gpus[chosen[j]]))
            for j in jobs:
                c = chosen[j]
                row = pr.current[j].copy() if cs.keep[c] else place_one(
                    pr.node_type, free, blocked, cs.gpu_type[c], cs.n_gpus[c], bool(cs.multi[c]))
                spread = row is not None and (row > 0).sum() > 1
                if row is None or np.any(row > free) or (cs.keep[c] and spread and blocked[row > 0].any()):
                    ref_failed.append(j)
                    continue
                ref[j], free = row, free - row
                blocked |= (row > 0) if spread else False
            assert np.array_equal(alloc, ref) and sorted(failed) == sorted(ref_failed)
            assert (alloc.sum(axis=0) <= pr.node_capacity).all()


def test_packing_the_single_node_jobs_first_places_what_the_usual_order_cannot():
    # Four 4-GPU nodes, a 6-GPU job over several nodes and three 3-GPU jobs on one node each. The usual order
    # puts the 6 GPUs on the two freest nodes (4 + 2), which leaves room for two of the 3s; the single-node
    # jobs first take three nodes, and the 6 GPUs go on the fourth and one GPU on each of two others.
    from goodopt.formulations.configs import enumerate_configs

    from goodopt.placement import place_configs

    from .synthetic import make_problem

    pr = make_problem([[1.0, 1.9, 2.7, 3.4, 4.0, 4.5]] + [[1.0, 1.8, 2.5]] * 3, capacity=[4, 4, 4, 4],
                      multi=[[0.0, 1.9, 2.7, 3.4, 4.0, 4.5]] + [[1.0, 1.8, 2.5]] * 3)
    cs = enumerate_configs(pr)
    pick = {(0, 6, True)} | {(j, 3, False) for j in (1, 2, 3)}
    chosen = np.full(pr.n_jobs, -1)
    for c in range(cs.n_configs):
        if (int(cs.job[c]), int(cs.n_gpus[c]), bool(cs.multi[c])) in pick and not cs.keep[c]:
            chosen[cs.job[c]] = c
    assert (chosen >= 0).all()
    alloc, failed = place_configs(pr, cs, chosen)
    assert len(failed) == 1 and alloc[0].tolist() == [4, 2, 0, 0]
    alloc, failed = place_configs(pr, cs, chosen, singles_first=True)
    assert failed == [] and pr.evaluator().violation(alloc) == 0
    assert alloc[0].sum() == 6 and (alloc[0] > 0).sum() == 3 and sorted(alloc[1:].sum(axis=1)) == [3, 3, 3]


def test_single_node_jobs_one_after_another_land_where_place_one_puts_them():
    # Ties in free GPUs are common here (capacities 2-8, a third of the nodes host a multi-node job), so the
    # order among equals (a node hosting a multi-node job first, then the lower index) is exercised.
    from goodopt.placement import _BestFit, place_one

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        node_type, blocked = rng.integers(0, 2, n), rng.random(n) < 0.3
        free = rng.integers(0, rng.choice([2, 4, 8]) + 1, n)
        fit, left = _BestFit(node_type, free, blocked), free.copy()
        for g, k in zip(rng.integers(0, 3, 8).tolist(), rng.integers(1, 5, 8).tolist()):
            row = place_one(node_type, left, blocked, g, k, False)
            node = fit.take(g, k)
            assert (row is None and node is None) or (row is not None and row[node] == k == row.sum())
            if row is not None:
                left = left - row


def test_tiresias_serves_its_second_queue_in_order_of_demotion():
    """Two 4-GPU jobs on 4 GPUs, both past the threshold: the one demoted first runs, though it arrived later."""
    from types import SimpleNamespace

    from goodopt.sim.policies import TiresiasPolicy

    cluster = Cluster((NodeGroup("t4", 4, 1),))
    pol = TiresiasPolicy(threshold_gpu_s=100.0)
    pol.reset(cluster, np.random.default_rng(0))

    def job(name, attained):
        return SimpleNamespace(name=name, attained_gpu_s=attained, fixed_gpus=None, num_replicas=4)

    def state(t, jobs):
        return SimpleNamespace(time_s=t, n_jobs=len(jobs), jobs=jobs, current=np.zeros((len(jobs), 1), np.int64))

    early, late = job("early", 0.0), job("late", 500.0)  # "late" is already demoted at t = 0
    assert pol.allocate(state(0.0, [early, late]))[:, 0].tolist() == [4, 0]  # first queue first
    early.attained_gpu_s = 200.0  # demoted at t = 60, after "late"
    assert pol.allocate(state(60.0, [early, late]))[:, 0].tolist() == [0, 4]
    assert pol.describe() == {"name": "tiresias", "placement": "most-free", "threshold_gpu_s": 100.0}


def test_virtual_nodes_split_machines_and_map_allocations_back():
    from goodopt.sim.policies import VirtualNodes

    cl = Cluster((NodeGroup("t4", 4, 2), NodeGroup("a100", 8, 1)))
    vn = VirtualNodes(cl, 4)
    assert list(vn.cluster.node_capacity) == [4, 4, 4, 4] and list(vn.physical) == [0, 1, 2, 2]
    current = np.array([[0, 0, 6], [1, 0, 2]])
    v = vn.to_virtual(current)
    assert v.tolist() == [[0, 0, 4, 2], [1, 0, 0, 2]]
    assert (vn.to_physical(v) == current).all()
    with pytest.raises(ValidationError, match="virtual_node_gpus"):
        VirtualNodes(Cluster((NodeGroup("rtx", 6, 1),)), 4)


def test_sias_pollux_baseline_caps_jobs_and_plans_on_virtual_nodes():
    # Two 8-GPU machines, one job that could use all 16: capped at 4 GPUs it never holds more
    cl = Cluster((NodeGroup("t4", 8, 2),))
    wl = Workload((WorkloadJob("c", 0.0, "cifar10", 4, 512),))
    res = simulate(wl, cl, "pollux", seed=0, policy_options={"max_gpus": 4, "virtual_node_gpus": 4,
                                                             "pop_size": 16, "n_gen": 8})
    assert res.allocations.n_gpus.max() <= 4
    free = simulate(wl, cl, "pollux", seed=0, policy_options={"pop_size": 16, "n_gen": 8})
    assert free.allocations.n_gpus.max() > 4  # the cap is what holds it back


def test_single_gpu_accumulation_splits_a_large_fixed_batch_on_one_gpu():
    app = model_truth(("ncf",))["ncf"]
    big = 2 * app.init_batch_size
    assert app.fixed_config(big, 1, single_gpu_accumulation=True)[1] >= 1
    assert app.fixed_config(big, 1)[1] == 0 or big > app.max_local_bsz
    # two micro-batches of half the batch each: the same total batch
    local, accum = app.fixed_config(big, 1, single_gpu_accumulation=True)
    assert local * (accum + 1) >= big
    # on two GPUs, or at the initial batch, the rule does nothing
    assert app.fixed_config(big, 2, single_gpu_accumulation=True) == app.fixed_config(big, 2)
    assert app.fixed_config(app.init_batch_size, 1, single_gpu_accumulation=True) == \
        app.fixed_config(app.init_batch_size, 1)


def test_single_gpu_accumulation_changes_an_ncf_run_under_pollux():
    wl = Workload((WorkloadJob("n", 0.0, "ncf", 1, 32768),))
    cl = Cluster((NodeGroup("t4", 4, 1),))
    on = simulate(wl, cl, "greedy", seed=0)
    off = simulate(wl, cl, "greedy", seed=0, config=SimConfig(single_gpu_accumulation=False))
    assert on.allocations.accum_steps.max() >= 1 and off.allocations.accum_steps.max() == 0
    assert on.jobs.jct_s.iloc[0] != pytest.approx(off.jobs.jct_s.iloc[0], rel=1e-6)
    with pytest.raises(ValidationError, match="single_gpu_accumulation"):
        SimConfig(single_gpu_accumulation="yes")


def test_a_run_reports_its_cost_at_the_published_prices():
    from goodopt.prices import PRICES_PER_GPU_H

    wl = Workload((WorkloadJob("c", 0.0, "cifar10", 2, 512),))
    cl = Cluster((NodeGroup("t4", 4, 1),))
    res = simulate(wl, cl, "tiresias", seed=0)
    s, job = res.summary, res.jobs.iloc[0]
    # the 4-GPU node is charged from the arrival to the completion; the job for its 2 GPUs' seconds
    assert s["cost"] == pytest.approx(4 * PRICES_PER_GPU_H["t4"] * job.completion_s / 3600)
    assert job.cost == pytest.approx(PRICES_PER_GPU_H["t4"] * job.attained_gpu_s / 3600)
    assert s["used_gpu_hours"] == pytest.approx(job.attained_gpu_s / 3600) and s["gpu_hours"] >= s["used_gpu_hours"]
    own = simulate(wl, cl, "tiresias", seed=0, config=SimConfig(prices_per_gpu_h={"t4": 1.0}))
    assert own.summary["cost"] == pytest.approx(4 * job.completion_s / 3600)
    rtx = simulate(wl, Cluster((NodeGroup("rtx2080ti", 4, 1),)), "tiresias", seed=0,
                   truth=model_truth(("cifar10",), gpu_type="rtx2080ti"), config=SimConfig(gpu_type="rtx2080ti"))
    assert np.isnan(rtx.summary["cost"])  # no published price: unknown, never silently 0
    with pytest.raises(ValidationError, match="prices_per_gpu_h"):
        SimConfig(prices_per_gpu_h={"t4": -1})
