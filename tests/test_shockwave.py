"""Shockwave (NSDI'23): the plan and the ranking MILPs against brute force on tiny instances, then the policy in a
simulation."""

import itertools

import numpy as np
import pytest
from goodopt.formulations.shockwave import PlanData, plan_columns, plan_model, plan_value, priorities, rank_model
from goodopt.solvers.mip_solvers.highs_arrays import HighsSession

from goodopt.cluster import Cluster, NodeGroup
from goodopt.errors import ValidationError
from goodopt.sim import model_truth, simulate
from goodopt.sim.workload import Workload, WorkloadJob


def solve(model):
    out, x = HighsSession(model, threads=1).solve(mip_rel_gap=0.0)
    return out, x


def tiny(rng, fair_factor):
    J = int(rng.integers(1, 4))
    total = rng.uniform(100, 1000, J)
    done = total * rng.uniform(0, 0.9, J)
    step = rng.uniform(0.1, 2.0, J)
    elapsed = rng.uniform(0, 3000, J)
    C = int(rng.integers(1, 5))
    gpus = rng.integers(1, C + 1, J).astype(float)
    fair = (elapsed + (total - done) * step) * fair_factor
    return PlanData(gpus, done, total, step, elapsed, fair, C, int(rng.integers(1, 3)), 60.0, 1e-4, 1.0)


def fair_ok(d, p):
    left = d.remaining_s - d.step_s * p
    return bool(np.all(d.elapsed_s + d.rounds * d.round_s + left / d.share <= d.rho_max * d.fair_finish_s + 1e-6))


def brute_force(d, pi, fairness):
    best = -np.inf
    J, W = d.n_jobs, d.rounds
    for bits in itertools.product((0, 1), repeat=J * W):
        x = np.array(bits).reshape(J, W)
        if (d.gpus @ x > d.n_gpus).any():
            continue
        value, p = plan_value(d, x, pi)
        if fairness and not fair_ok(d, p):
            continue
        best = max(best, value)
    return best


@pytest.mark.parametrize("seed", range(30))
def test_the_plan_is_the_best_of_every_schedule_of_the_window(seed):
    rng = np.random.default_rng(seed)
    fairness = seed % 2 == 0
    d = tiny(rng, fair_factor=rng.uniform(0.9, 3.0))
    pi = None if fairness else priorities(d, 12.0)
    want = brute_force(d, pi, fairness)
    out, sol = solve(plan_model(d, pi, fairness=fairness))
    if not np.isfinite(want):
        assert sol is None and str(out.termination) == "infeasible"
        return
    x = np.rint(sol[plan_columns(d)[0]])
    assert (d.gpus @ x <= d.n_gpus).all()
    assert out.objective == pytest.approx(want, rel=1e-6, abs=1e-9)
    assert plan_value(d, x, pi)[0] == pytest.approx(want, rel=1e-6, abs=1e-9)  # its rounds are worth the optimum


def test_priorities_raise_the_jobs_past_the_fairness_bound_and_most_the_ones_about_to_finish():
    d = PlanData(np.ones(3), np.array([0.0, 0.0, 99.0]), np.full(3, 100.0), np.ones(3), np.array([0.0, 50.0, 50.0]),
                 np.full(3, 100.0), 1, 2, 60.0, 1e-9, 1.0)
    pi = priorities(d, 12.0)
    # rho: (0 + 300) / 100, (50 + 300) / 100, (50 + 3) / 100 with a third of the cluster each
    assert pi[2] < pi[0] < pi[1] == 1.0
    assert pi[0] == pytest.approx((3.0 / 3.5) ** 12)


@pytest.mark.parametrize("seed", range(20))
def test_the_ranking_is_the_best_order_of_the_planned_rounds(seed):
    rng = np.random.default_rng(seed)
    J, W, C = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 5))
    gpus = rng.integers(1, C + 1, J)
    pi = rng.uniform(0.1, 1.0, J)
    running = rng.random(J) < 0.5
    # a plan that fits: some schedule of the window, its round counts kept
    plan = np.zeros((J, W), dtype=int)
    for w in range(W):
        free = C
        for j in rng.permutation(J):
            if rng.random() < 0.6 and gpus[j] <= free:
                plan[j, w], free = 1, free - gpus[j]
    n = plan.sum(axis=1)
    model = rank_model(gpus, n, pi, C, W, running)
    best = -np.inf
    for bits in itertools.product((0, 1), repeat=J * W):
        z = np.array(bits).reshape(J, W)
        if (z.sum(axis=1) == n).all() and (gpus @ z <= C).all():
            best = max(best, float(model.cost @ z.ravel()))
    out, sol = solve(model)
    assert out.objective == pytest.approx(best, rel=1e-9, abs=1e-12)
    z = np.rint(sol).reshape(J, W)
    assert (z.sum(axis=1) == n).all() and (gpus @ z <= C).all()


@pytest.fixture(scope="module")
def truth():
    return model_truth(("cifar10", "ncf"))


def workload():
    jobs = [WorkloadJob(f"cifar10-{i}", 200.0 * i, "cifar10", 2, 512) for i in range(4)]
    jobs += [WorkloadJob(f"ncf-{i}", 100.0 + 300.0 * i, "ncf", 1, 32768) for i in range(3)]
    return Workload(tuple(jobs))


def test_shockwave_runs_every_job_to_the_end_and_twice_the_same_under_a_node_budget(truth):
    cluster = Cluster((NodeGroup("t4", 4, 1),))
    options = {"node_limit": 500, "time_limit_s": None}
    first = simulate(workload(), cluster, "shockwave", truth=truth, policy_options=options)
    again = simulate(workload(), cluster, "shockwave", truth=truth, policy_options=options)
    assert first.jobs.completion_s.notna().all()
    assert first.jobs.completion_s.tolist() == again.jobs.completion_s.tolist()
    assert (first.rounds.gpus_allocated <= 4).all()
    assert set(first.rounds.policy_status) <= {"optimal", "gap_limit"}


@pytest.mark.parametrize("options, field", [({"window_rounds": 0}, "window_rounds"), ({"rho_max": 0}, "rho_max"),
                                            ({"priority_power": -1}, "priority_power"),
                                            ({"node_limit": 0}, "node_limit"), ({"time_limit_s": 0}, "time_limit_s")])
def test_bad_shockwave_options_name_the_option(truth, options, field):
    with pytest.raises(ValidationError, match=field):
        simulate(workload(), Cluster((NodeGroup("t4", 4, 1),)), "shockwave", truth=truth, policy_options=options)


def test_a_sweep_runs_themis_and_shockwave_by_name_and_names_a_bad_option():
    from goodopt.runs.spec import spec_from_dict
    from goodopt.runs.tasks import expand

    spec = {"name": "fair", "kind": "simulate", "workloads": ["generated:0.5:0:1"],
            "policies": ["themis", {"label": "sw-3", "policy": "shockwave", "options": {"window_rounds": 3}}]}
    tasks = expand(spec_from_dict(spec))
    assert [t.policy for t in tasks] == ["themis", "shockwave"]
    assert tasks[1].describe().startswith("generated-0.5-0-1 / sw-3")
    spec["policies"][1]["options"] = {"window_rounds": 0}
    with pytest.raises(ValidationError, match="spec.policies.sw-3.options"):
        spec_from_dict(spec)
