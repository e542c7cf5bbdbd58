"""Gavel's own round mechanism (``mechanism: gavel``), worked by hand."""

import numpy as np
import pytest
from goodopt.solvers.gavel import solve_gavel
from hypothesis import given
from hypothesis import strategies as st

from goodopt.errors import ValidationError
from goodopt.gavel import GavelThroughputs, RigidJob, ThroughputMatrix
from goodopt.gavel.gavel_mechanism import FIRST_PRIORITY, GavelRounds
from goodopt.sim.rigid import RigidConfig, simulate_rigid

RATES = {("v100", "fast", 1, True): 4.0, ("k80", "fast", 1, True): 1.0,
         ("v100", "even", 1, True): 1.0, ("k80", "even", 1, True): 1.0}
THR = GavelThroughputs(single=RATES, pairs={}, gpu_types=("v100", "k80"), job_types=("fast", "even"))
GAVEL = {"mechanism": "gavel", "options": {"second_stage": False, "lp_method": "ipm"}}


def job(name, jt, steps, arrival=0.0):
    return RigidJob(name, jt, 1, arrival, steps, steps)


def run(jobs, capacity, **cfg):
    return simulate_rigid(jobs, THR, capacity, RigidConfig(round_s=360.0, **cfg)).jobs.set_index("job")


def test_priority_is_the_fraction_over_the_share_of_the_types_time_since_the_reset():
    a, b = 0, 1  # jobs are known by id
    g = GavelRounds(2, 360.0)
    g.sync([a, b])
    g.reset(0.0, [a, b], np.array([[1.0, 0.0], [0.5, 0.5]]))
    # every credit restarts at half a round: t_jk = 180, W_k = 2 x 180 = 360, so a job's share is 1/2
    assert g.priorities([a, b], np.ones((2, 2), bool)) == pytest.approx(np.array([[2.0, 0.0], [1.0, 1.0]]))
    # types in turn: a (priority 2) takes the V100, b the K80
    assert g.assign([a, b], [1, 1], [1, 1], np.ones((2, 2), bool), [0, 1]).tolist() == [0, 1]
    g.record([a, b], [0, 1], [360.0, 360.0])
    # a's V100 share is now 540 / 720, b's 180 / 720: b comes first on the V100 (0.5 / 0.25 = 2 > 1 / 0.75), and
    # a, at priority 0 on the K80 (no time there in its allocation), still takes the free K80
    p = g.priorities([a, b], np.ones((2, 2), bool))
    assert p == pytest.approx(np.array([[4 / 3, 0.0], [2.0, 0.5 / (540 / 720)]]))
    assert g.assign([a, b], [1, 1], [1, 1], np.ones((2, 2), bool), [0, 1]).tolist() == [1, 0]


def test_a_job_that_arrived_after_the_reset_waits_for_the_next_one():
    a, c = 0, 2
    g = GavelRounds(2, 360.0)
    g.sync([a])
    g.reset(0.0, [a], np.array([[1.0, 0.0]]))
    g.reset(360.0, [a], np.array([[1.0, 0.0]]))
    g.sync([a, c])
    assert g.runs([a, c]).tolist() == [True, False]
    assert not g.due(360.0 + 1919.0) and g.due(360.0 + 1920.0)
    # the deficit settles what a was owed (1 x 360 s on the V100) against what it got (nothing recorded)
    assert g.deficit[a] == pytest.approx([360.0, 0.0])


def test_a_type_no_job_has_run_on_gives_the_large_first_priority():
    g = GavelRounds(1, 360.0)
    g.sync([0])
    g.share[0] = 0.25  # as if a reset had given it a quarter of the type, with no time recorded since
    assert g.priorities([0], np.ones((1, 1), bool))[0, 0] == pytest.approx(0.25 * FIRST_PRIORITY)


def test_a_type_is_filled_first_fit_down_its_queue():
    # one type of 5 GPUs; the queue (by priority) asks for 2, 4, 1, 2 GPUs: 2 fit, 4 does not (3 left),
    # 1 fits, then 2 fills the type. A job that cannot run there, or already placed, is passed over.
    g = GavelRounds(1, 360.0)
    ids = [0, 1, 2, 3, 4]
    g.sync(ids)
    g.reset(0.0, ids, np.array([[0.5], [0.4], [0.3], [0.2], [0.1]]))
    runnable = np.array([[True], [True], [True], [True], [False]])
    assert g.assign(ids, [2, 4, 1, 2, 1], [5], runnable, [0]).tolist() == [0, -1, 0, 0, -1]
    assert g.assign(ids, [2, 4, 1, 2, 1], [4], runnable, [0]).tolist() == [0, -1, 0, -1, -1]


def test_a_new_job_waits_for_the_reset_interval_to_pass():
    # a and b keep two V100s busy; c (360 s of work) arrives at 500 s to a free V100. Gavel's mechanism reset at
    # 0 and 360 s (its first reset after time 0 is immediate), so c waits for the round at or after 360 + 1920 s:
    # 2520 s, and ends at 2880 s. With no interval it starts at the next round, 720 s.
    jobs = [job("a", "even", 1e5), job("b", "even", 1e5, arrival=100.0), job("c", "even", 360.0, arrival=500.0)]
    waits = run(jobs, {"v100": 3, "k80": 1}, **GAVEL)
    now = run(jobs, {"v100": 3, "k80": 1}, reset_interval_s=0.0, **GAVEL)
    assert waits.jct["c"] == pytest.approx(2880.0 - 500.0)
    assert now.jct["c"] == pytest.approx(1080.0 - 500.0)
    assert run(jobs, {"v100": 3, "k80": 1}).jct["c"] == pytest.approx(1080.0 - 500.0)


def test_a_round_ends_with_its_last_job_and_an_idle_cluster_waits_for_the_next_arrival():
    # a needs 100 s; b arrives at 150 s. Gavel's rounds end when their last job does and the clock jumps to the
    # next arrival, so b starts at once; goodopt's rounds keep a 360 s grid, so b starts at 360 s.
    jobs = [job("a", "even", 100.0), job("b", "even", 100.0, arrival=150.0)]
    assert run(jobs, {"v100": 1, "k80": 1}, **GAVEL).jct.to_dict() == pytest.approx({"a": 100.0, "b": 100.0})
    assert run(jobs, {"v100": 1, "k80": 1}).jct.to_dict() == pytest.approx({"a": 100.0, "b": 310.0})


def test_an_agnostic_runs_type_order_comes_from_the_seed():
    rng = np.random.default_rng(7)
    jobs = [job(f"j{i}", "fast" if i % 2 else "even", float(rng.integers(500, 5000)), arrival=60.0 * i)
            for i in range(12)]
    cfg = RigidConfig(round_s=360.0, agnostic=True, **GAVEL)
    a, b = (simulate_rigid(jobs, THR, {"v100": 2, "k80": 2}, cfg, seed=3).jobs for _ in range(2))
    assert a.jct.tolist() == b.jct.tolist()
    assert all(np.isfinite(a.jct))


@pytest.mark.parametrize("change, field", [({"mechanism": "gavels"}, "mechanism"),
                                           ({"mechanism": "gavel", "policy": "max_min_fairness_packed"}, "mechanism"),
                                           ({"reset_interval_s": -1.0}, "reset_interval_s")])
def test_mechanism_settings_are_checked(change, field):
    with pytest.raises(ValidationError) as e:
        RigidConfig(**change)
    assert e.value.field == field


def _tied():
    # two jobs that run equally fast everywhere and fit anywhere: every split of their time is optimal
    return ThroughputMatrix(job_names=("a", "b"), type_names=("x", "y", "z"), throughput=np.ones((2, 3)),
                            scale_factor=np.ones(2, dtype=np.int64), capacity=np.array([2, 2, 2]))


def test_interior_point_returns_the_centre_of_a_tied_optimum():
    ipm = solve_gavel(_tied(), "max_min_fairness", {"second_stage": False, "lp_method": "ipm"})
    simplex = solve_gavel(_tied(), "max_min_fairness", {"second_stage": False})
    assert ipm.fun == pytest.approx(simplex.fun) == pytest.approx(1.0)
    assert ipm.x == pytest.approx(np.full((2, 3), 1 / 3), abs=1e-6)
    assert np.count_nonzero(simplex.x > 1e-9) == 2  # a vertex: each job on one type
    with pytest.raises(ValidationError) as e:
        solve_gavel(_tied(), "max_min_fairness", {"lp_method": "barrier"})
    assert e.value.field == "options.lp_method"


@pytest.mark.parametrize("seed", range(4))
def test_finish_time_fairness_takes_the_isolated_finish_time_it_is_given(seed):
    rng = np.random.default_rng(seed)
    J = 6
    base = dict(job_names=tuple("abcdef"), type_names=("x", "y"), throughput=rng.uniform(0.5, 4.0, (J, 2)),
                scale_factor=np.ones(J, dtype=np.int64), capacity=np.array([2, 2]),
                remaining_steps=rng.uniform(1e3, 1e5, J), elapsed_s=rng.uniform(0.0, 5e3, J))
    plain = ThroughputMatrix(**base)
    eq = plain.equal_share_throughput()
    default = base["elapsed_s"] + base["remaining_steps"] / eq
    same = solve_gavel(ThroughputMatrix(**base, isolated_s=default), "finish_time_fairness")
    assert same.fun == pytest.approx(solve_gavel(plain, "finish_time_fairness").fun)
    # set on a matrix already made (as the simulator does on every allocation): the same LPs, the same answer
    later = solve_gavel(plain.with_isolated_s(default), "finish_time_fairness")
    assert later.fun == same.fun and np.array_equal(later.x, same.x) and plain.isolated_s is None
    for bad in (np.zeros(J), default[:-1], np.full(J, np.nan)):
        with pytest.raises(ValidationError) as e:
            plain.with_isolated_s(bad)
        assert e.value.field == "isolated_s"
    # Gavel's isolated time counts the work done at the isolated speed, less than the elapsed time: the equal
    # share's rho then passes 1, and the bisection starts above it
    short = base["remaining_steps"] / eq + 0.2 * base["elapsed_s"]
    res = solve_gavel(ThroughputMatrix(**base, isolated_s=short), "finish_time_fairness")
    rho = (base["elapsed_s"] + base["remaining_steps"] / res.throughput) / short
    assert res.success and res.fun == pytest.approx(rho.max())
    assert res.fun <= ((base["elapsed_s"] + base["remaining_steps"] / eq) / short).max() + 1e-9


def test_an_interior_point_that_does_not_conclude_is_settled_by_simplex(monkeypatch):
    import dataclasses

    import goodopt.solvers.gavel.runner as sg
    from goodopt.solvers.result import Termination

    class Stalling(sg.HighsSession):  # the interior-point method ends without a verdict, as it can on a feasibility LP
        def solve(self, **kw):
            out, x = super().solve(**kw)
            if self._ipm:
                return dataclasses.replace(out, termination=Termination.ERROR), None
            return out, x

        def __init__(self, model, highs_options=None, **kw):
            super().__init__(model, highs_options=highs_options, **kw)
            self._ipm = bool(highs_options)

    monkeypatch.setattr(sg, "HighsSession", Stalling)
    res = solve_gavel(_tied(), "max_min_fairness", {"second_stage": False, "lp_method": "ipm"})
    assert res.success and res.fun == pytest.approx(1.0)
    assert [st.get("fallback") for st in res.stages] == ["simplex"]


def test_a_run_stopped_before_its_window_arrived_has_no_jct():
    # the window's second job arrives at 10 days; the run may last one day
    jobs = [job("a", "even", 3600.0), job("b", "even", 3600.0, arrival=10 * 86400.0 + 100.0)]
    res = simulate_rigid(jobs, THR, {"v100": 1, "k80": 1}, RigidConfig(round_s=360.0, max_time_s=86400.0))
    assert res.summary["n_unarrived"] == 1 and res.summary["saturated"]
    assert np.isnan(res.summary["avg_jct"]) and np.isnan(res.summary["p99_jct"])


def test_the_reproductions_time_limit_lets_every_window_job_arrive():
    from goodopt.reproduce.experiments import GAVEL_RATES, GAVEL_WINDOW, gavel_max_time_s

    for mode, window in GAVEL_WINDOW.items():
        for rate in (r for rates in GAVEL_RATES[mode].values() for r in rates):
            # arrivals are Poisson: the window's last job comes at about hi / rate hours
            # (1.5 times that is far in the tail), and its jobs, the longest of which runs for a week alone,
            # get 30 days after that
            assert gavel_max_time_s(window, rate) >= 1.5 * window[1] / rate * 3600.0 + 30 * 86400.0


def test_scale_by_size_gives_a_job_on_s_gpus_one_sth_of_the_time_as_gavels_code_does():
    # one type of 2 GPUs; a runs on 1 GPU, b on 2, both at 1 step/s. Plain LAS equalises their time fractions
    # (2/3 each fills the 2 GPUs); Gavel's code multiplies b's term by its 2 GPUs, so b needs half of a's time
    # for the same level: a 1, b 1/2 (1 + 2 x 1/2 = 2 GPUs).
    mx = ThroughputMatrix(job_names=("a", "b"), type_names=("x",), throughput=np.ones((2, 1)),
                          scale_factor=np.array([1, 2]), capacity=np.array([2]))
    plain = solve_gavel(mx, "max_min_fairness", {"second_stage": False})
    sized = solve_gavel(mx, "max_min_fairness", {"second_stage": False, "scale_by_size": True})
    assert plain.x[:, 0] == pytest.approx([2 / 3, 2 / 3])
    assert sized.x[:, 0] == pytest.approx([1.0, 0.5])


@given(st.integers(0, 2**32 - 1), st.integers(0, 70), st.integers(1, 4), st.booleans())
def test_the_compiled_assignment_is_the_array_statement_job_for_job(seed, n_jobs, n_types, nan):
    """Priorities (bit for bit) and each job's type: tied priorities, deficits and fractions (few distinct
    values), jobs outside the allocation, types no job ran on yet, sizes past a type's free GPUs, shuffled
    type orders and NaN fractions, against tests/gavel_rounds_reference.py."""
    from . import gavel_rounds_reference as ref

    rng = np.random.default_rng(seed)
    g = GavelRounds(n_types, 360.0)
    ids = rng.permutation(2 * n_jobs + 1)[:n_jobs]
    g.sync(ids)
    pick = lambda *v: rng.choice(np.array(v, dtype=float), size=(n_jobs, n_types))  # noqa: E731
    g.reset(0.0, ids, pick(0.0, 0.25, 0.5, 1.0) * (rng.random((n_jobs, 1)) < 0.8))
    g.credit[ids] = pick(0.0, 180.0, 360.0, 720.0)
    g.deficit[ids] = pick(-1.0, 0.0, 0.0, 3.0)
    g.worker_s[:] = rng.choice([0.0, 360.0, 1080.0], size=n_types)
    if nan and n_jobs:
        g.share[ids[rng.integers(0, n_jobs)], rng.integers(0, n_types)] = np.nan
    runnable = rng.random((n_jobs, n_types)) < 0.85
    size = rng.choice([1, 1, 2, 4, 8], size=n_jobs)
    capacity = rng.integers(0, 20, size=n_types)
    order = rng.permutation(n_types)
    prio = ref.priorities(g.share, g.credit, g.worker_s, ids, runnable)
    assert g.priorities(ids, runnable).tobytes() == prio.tobytes()
    want = ref.assign(g.share, g.deficit, prio, ids, size, capacity, runnable, order)
    np.testing.assert_array_equal(g.assign(ids, size, capacity, runnable, order), want)
    # the simulator's one call: runnable where the speed is positive, jobs outside the allocation given none
    rate = np.where(runnable, rng.choice([0.5, 1.0, 3.0], size=(n_jobs, n_types)), 0.0)
    allocated = g.allocated[ids]
    want_round = np.where(allocated, ref.assign(g.share, g.deficit, prio, ids, size, capacity, rate > 0, order), -1)
    got = g.round_types(ids, size.astype(np.int64), capacity.astype(np.int64), rate, order.astype(np.int64))
    np.testing.assert_array_equal(got, want_round)


@given(st.integers(0, 2**32 - 1), st.integers(0, 40))
def test_a_compiled_round_moves_jobs_and_credits_as_the_array_statements_bit_for_bit(seed, n):
    """advance_round and GavelRounds.record against the whole-array statements they replace: jobs that finish
    mid-round, within 1e-9 of their total, exactly at the round's end and not at all; type changes from no
    type, the same type and another; shared and alone; credits and per-type totals added in the given order."""
    from goodopt.sim.round_steps import advance_round

    rng = np.random.default_rng(seed)
    N, K, round_s, t = n + 5, 3, 360.0, float(rng.choice([0.0, 1e5, 123.456]))
    idx = rng.permutation(N)[:n].astype(np.int64)
    ks = rng.integers(0, K, n).astype(np.int64)
    rates = rng.choice([1e-3, 0.7, 1.0, 3.0], n) * rng.uniform(0.5, 2.0, n)
    shared = rng.random(n) < 0.3
    scale = rng.choice([1, 2, 8], N).astype(np.int64)
    total = rng.choice([10.0, 360.0, 1e4, 1e7], N)
    done = total * rng.choice([0.0, 0.5, 1 - 1e-12, 0.999], N)
    done[idx[:1]] = total[idx[:1]] - rates[:1] * round_s  # finishes exactly at the round's end
    state = {"gpu_s": rng.uniform(0, 1e4, N), "shared_s": rng.uniform(0, 1e3, N), "completion": np.full(N, np.nan),
             "last_type": rng.integers(-1, K, N).astype(np.int64), "changes": rng.integers(0, 5, N).astype(np.int64)}
    want = {k: v.copy() for k, v in state.items()}
    want_done = done.copy()
    # the array statements
    was = want["last_type"][idx]
    moved = ks != was
    want["changes"][idx[moved]] += was[moved] >= 0
    want["last_type"][idx] = ks
    left = total[idx] - want_done[idx]
    secs = np.minimum(round_s, left / rates)
    want_done[idx] += rates * secs
    want["gpu_s"][idx] += scale[idx] * secs
    want["shared_s"][idx] += np.where(shared, secs, 0.0)
    finished = (secs < round_s) | (left - rates * secs <= 1e-9 * total[idx])
    want_done[idx[finished]] = total[idx[finished]]
    want["completion"][idx[finished]] = t + secs[finished]
    seconds = np.empty(n)
    assert advance_round(idx, ks, rates, shared, scale, total, done, state["gpu_s"], state["shared_s"],
                         state["last_type"], state["changes"], state["completion"], t, round_s, seconds) == -1
    assert seconds.tobytes() == secs.tobytes() and done.tobytes() == want_done.tobytes()
    for k in state:
        assert state[k].tobytes() == want[k].tobytes(), k
    # a job given a type it cannot run on: its position, nothing changed
    if n:
        bad = rates.copy()
        bad[-1] = 0.0
        before = done.copy()
        assert advance_round(idx, ks, bad, shared, scale, total, done, state["gpu_s"], state["shared_s"],
                             state["last_type"], state["changes"], state["completion"], t, round_s, seconds) == n - 1
        assert done.tobytes() == before.tobytes()
    # credits
    g = GavelRounds(K, round_s)
    g.sync(np.arange(N))
    credit, worker = g.credit.copy(), g.worker_s.copy()
    credit[idx, ks] += secs
    np.add.at(worker, ks, secs)
    g.record(idx, ks, secs)
    assert g.credit.tobytes() == credit.tobytes() and g.worker_s.tobytes() == worker.tobytes()
