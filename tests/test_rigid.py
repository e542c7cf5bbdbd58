"""Rigid throughput-only jobs (Gavel's simulator): worked examples small enough to check by hand."""

import numpy as np
import pytest

from goodopt.errors import ValidationError
from goodopt.gavel import GAVEL_REFERENCE_TYPE, GavelThroughputs, RigidJob, gavel_trace
from goodopt.sim.rigid import RigidConfig, simulate_rigid, simulate_rigid_steady, spread

# Two types, two job types: "fast-on-v100" runs 4 steps/s on a V100 and 1 on a K80; "indifferent" 1 on both.
RATES = {("v100", "fast-on-v100", 1, True): 4.0, ("k80", "fast-on-v100", 1, True): 1.0,
         ("v100", "indifferent", 1, True): 1.0, ("k80", "indifferent", 1, True): 1.0,
         ("v100", "indifferent", 2, True): 1.8, ("k80", "indifferent", 2, True): 1.8}
THR = GavelThroughputs(single=RATES, pairs={}, gpu_types=("v100", "k80"), job_types=("fast-on-v100", "indifferent"))
ROUND = 360.0


def job(name, jt, steps, arrival=0.0, scale=1):
    return RigidJob(name, jt, scale, arrival, steps, steps)


def run(jobs, capacity, **cfg):
    return simulate_rigid(jobs, THR, capacity, RigidConfig(round_s=ROUND, **cfg))


@pytest.mark.parametrize("policy", ["max_min_fairness", "max_total_throughput", "fifo"])
def test_a_lone_job_runs_at_its_best_speed_and_completes_inside_a_round(policy):
    # 4000 steps at 4 steps/s = 1000 s: two full rounds and 280 s of the third
    res = run([job("a", "fast-on-v100", 4000.0)], {"v100": 1, "k80": 1}, policy=policy)
    assert res.jobs.jct.iloc[0] == pytest.approx(1000.0)
    assert res.summary["avg_jct"] == pytest.approx(1000.0)
    assert res.jobs.gpu_s.iloc[0] == pytest.approx(1000.0)
    assert not res.summary["saturated"]


def test_aware_gives_the_v100_to_the_job_that_gains_from_it():
    # One V100 and one K80. Aware: "fast" on the V100 (4/s), "indifferent" on the K80 (1/s):
    # 1440 steps take 360 s each; both finish in the first round.
    jobs = [job("fast", "fast-on-v100", 1440.0), job("slow", "indifferent", 360.0)]
    res = run(jobs, {"v100": 1, "k80": 1}, policy="max_total_throughput")
    assert res.jobs.set_index("job").jct.to_dict() == pytest.approx({"fast": 360.0, "slow": 360.0})


def test_agnostic_spreads_time_over_types_so_the_fast_job_loses():
    # Agnostic: each job gets half its time on each type, so "fast" averages (4 + 1) / 2 per s and needs longer
    # than aware's 4 rounds on the V100; "indifferent" is unaffected by the type.
    jobs = [job("fast", "fast-on-v100", 4 * 1440.0), job("slow", "indifferent", 4 * 360.0)]
    aware = run(jobs, {"v100": 1, "k80": 1}, policy="max_min_fairness")
    agnostic = run(jobs, {"v100": 1, "k80": 1}, policy="max_min_fairness", agnostic=True)
    fast = agnostic.jobs.set_index("job").jct["fast"]
    assert fast > aware.jobs.set_index("job").jct["fast"] + 1.0
    assert aware.jobs.set_index("job").jct["fast"] == pytest.approx(1440.0)
    # half the time on each type: 5760 steps at (4 + 1) / 2 per s = 2304 s, give or take a round
    assert abs(fast - 2304.0) <= ROUND
    assert agnostic.summary["avg_jct"] > aware.summary["avg_jct"]


def test_spread_is_proportional_to_capacity_and_respects_it():
    x = spread(np.array([1.0, 1.0]), np.array([[True, True], [True, False]]), np.array([3, 1]), np.array([1, 1]))
    assert x[0] == pytest.approx([0.75, 0.25])
    assert x[1] == pytest.approx([1.0, 0.0])
    over = spread(np.array([1.0, 1.0, 1.0]), np.ones((3, 2), bool), np.array([1, 1]), np.array([1, 1, 1]))
    assert (over.sum(axis=0) <= 1 + 1e-12).all()


def test_a_job_larger_than_every_type_is_refused_by_name():
    with pytest.raises(ValidationError, match=r"jobs\[big\]"):
        run([job("big", "indifferent", 10.0, scale=2)], {"v100": 1, "k80": 1})


def test_settings_are_checked():
    with pytest.raises(ValidationError, match="policy"):
        RigidConfig(policy="max_min_fairness_agnostic")
    with pytest.raises(ValidationError, match="window"):
        RigidConfig(window=(5, 5))
    with pytest.raises(ValidationError, match="round_s"):
        RigidConfig(round_s=0)
    with pytest.raises(ValidationError, match=r"entities\.A\.weight"):
        RigidConfig(entities={"A": {"weight": 0}})
    with pytest.raises(ValidationError, match=r"entities\.A\.polcy"):
        RigidConfig(entities={"A": {"polcy": "fifo"}})
    with pytest.raises(ValidationError, match=r"entities\.A\.policy"):
        RigidConfig(entities={"A": {"policy": "lottery"}})
    with pytest.raises(ValidationError, match="capacity.k80"):
        run([job("a", "indifferent", 10.0)], {"v100": 1, "k80": 0})


def test_overload_stops_at_max_time_and_says_saturated():
    # Eight 1-GPU jobs of 3600 s on one GPU in all: the last cannot finish within 2 hours
    jobs = [job(f"j{i}", "indifferent", 3600.0) for i in range(8)]
    res = simulate_rigid(jobs, THR, {"v100": 1}, RigidConfig(round_s=ROUND, max_time_s=7200.0))
    assert res.summary["saturated"] and res.summary["n_unfinished"] >= 6
    assert res.summary["avg_jct"] >= 3600.0  # unfinished jobs count at their age so far


def test_gavel_trace_draws_like_gavels_generator():
    thr = GavelThroughputs(single={**RATES, ("v100", "indifferent", 4, True): 3.0},
                           pairs={}, gpu_types=("v100", "k80"), job_types=("fast-on-v100", "indifferent"))
    jobs = gavel_trace(thr, 2.0, 2000, np.random.default_rng(3))
    assert jobs[0].arrival_s == 0.0
    gaps = np.diff([j.arrival_s for j in jobs])
    assert (gaps >= 0).all() and np.mean(gaps) == pytest.approx(1800.0, rel=0.1)  # 2 jobs per hour
    d = np.array([j.duration_s for j in jobs])
    assert d.min() >= 60 * 10**1.5 and d.max() <= 60 * 10**4
    assert np.mean(d <= 60 * 10**3) == pytest.approx(0.8, abs=0.04)
    assert all(j.total_steps == pytest.approx(j.duration_s * thr.rate(GAVEL_REFERENCE_TYPE, j.job_type,
                                                                       j.scale_factor)) for j in jobs)
    assert {j.scale_factor for j in jobs if j.job_type == "fast-on-v100"} == {1}  # measured on 1 GPU only
    assert gavel_trace(thr, 2.0, 50, np.random.default_rng(3)) == jobs[:50]
    with pytest.raises(ValidationError, match="rate_per_h"):
        gavel_trace(thr, 0.0, 5, np.random.default_rng(0))


# Space sharing: "x" and "y" run 1 step/s alone on a V100 and (0.8, 0.6) steps/s sharing it.
PAIRED = GavelThroughputs(single={("v100", "x", 1, True): 1.0, ("v100", "y", 1, True): 1.0},
                          pairs={("v100", "x", "y"): (0.8, 0.6)}, gpu_types=("v100",), job_types=("x", "y"))


def test_a_packed_policy_runs_a_useful_pair_together_on_one_gpu():
    # together: 720 steps at 0.8/s and 540 at 0.6/s both take 900 s; taking turns the GPU needs 1260 s in all
    jobs = [job("a", "x", 720.0), job("b", "y", 540.0)]
    packed = simulate_rigid(jobs, PAIRED, {"v100": 1}, RigidConfig(policy="max_total_throughput_packed"))
    assert packed.jobs.jct.tolist() == pytest.approx([900.0, 900.0])
    assert packed.jobs.shared_s.tolist() == pytest.approx([900.0, 900.0])
    alone = simulate_rigid(jobs, PAIRED, {"v100": 1}, RigidConfig(policy="max_total_throughput"))
    assert alone.jobs.jct.max() >= 1260.0 and alone.jobs.shared_s.sum() == 0.0
    assert packed.summary["avg_jct"] < alone.summary["avg_jct"]


def test_packed_policies_have_no_agnostic_variant():
    with pytest.raises(ValidationError, match="agnostic"):
        RigidConfig(policy="max_min_fairness_packed", agnostic=True)


def write_throughputs(path):
    """A Gavel-format file: job types x, y on one V100 type; together they share at (0.8, 0.6)."""
    import json

    path.write_text(json.dumps({"v100": {"('x', 1)": {"null": 1.0, "('y', 1)": [0.8, 0.6]},
                                         "('y', 1)": {"null": 1.0, "('x', 1)": [0.6, 0.8]}}}))
    return path


def test_a_rigid_sweep_compares_packed_and_singleton_policies(tmp_path):
    from goodopt.runs.sweep import run_sweep

    spec = {"name": "pack", "kind": "rigid", "rates": [20], "n_jobs": 30, "window": [5, 25],
            "capacity": {"v100": 2}, "throughputs": str(write_throughputs(tmp_path / "t.json")),
            "generator": "numpy", "policies": ["max_total_throughput", "max_total_throughput_packed"]}
    res = run_sweep(spec, cache_dir=tmp_path / "cache", progress=False)
    jct = res.table.set_index("label").avg_jct
    assert jct["max_total_throughput_packed"] < jct["max_total_throughput"]  # overloaded: sharing pays
    assert res.jobs[res.jobs.label == "max_total_throughput_packed"].shared_s.sum() > 0
    again = run_sweep(spec, cache_dir=tmp_path / "cache", progress=False)
    assert again.n_cached == 2 and again.table.avg_jct.tolist() == res.table.avg_jct.tolist()


@pytest.mark.parametrize("change, field", [
    ({"policies": ["max_min_fairnes"]}, "policies"), ({"window": [5, 500]}, "window"),
    ({"capacity": {"h100": 4}}, "capacity.h100"), ({"capacity": {"v100": 0}}, "capacity.v100"),
    ({"rates": [0]}, "rates"), ({"policies": [{"policy": "max_min_fairness_packed",
                                               "options": {"agnostic": True}}]}, "agnostic"),
    ({"generator": "gavel"}, "spec.generator"), ({"generator": "python"}, "generator"),
    ({"scale_factors": {1: 0.5, 3: 0.5}}, "scale_factors"), ({"scale_factors": {1: 0.5, 2: 0.4}}, "scale_factors"),
    ({"scale_factors": {1: 1.5}}, "scale_factors.1"), ({"mechanism": "gavl"}, "mechanism"),
    ({"policies": [{"policy": "max_min_fairness", "options": {"mechanism": "gavel", "reset_interval_s": -5}}]},
     "reset_interval_s")])
def test_a_rigid_sweep_spec_names_the_bad_field(tmp_path, change, field):
    from goodopt.runs.spec import spec_from_dict

    spec = {"name": "pack", "kind": "rigid", "rates": [2], "n_jobs": 30, "capacity": {"v100": 2},
            "throughputs": str(write_throughputs(tmp_path / "t.json")), "policies": ["max_min_fairness"],
            "generator": "numpy", **change}
    with pytest.raises(ValidationError, match=field):
        spec_from_dict(spec)


def test_a_hierarchical_rigid_sweep_gives_the_heavier_entity_more(tmp_path):
    from goodopt.runs.sweep import run_sweep

    spec = {"name": "ent", "kind": "rigid", "rates": [30], "n_jobs": 40, "window": [5, 35],
            "capacity": {"v100": 2}, "throughputs": str(write_throughputs(tmp_path / "t.json")), "generator": "numpy",
            "policies": [{"label": "wf", "policy": "max_min_fairness_water_filling",
                          "options": {"entities": {"heavy": {"weight": 4, "share": 1},
                                                   "light": {"weight": 1, "share": 1, "policy": "fifo"}}}}]}
    res = run_sweep(spec, progress=False)
    window = res.jobs[res.jobs.in_window]
    by = window.groupby("entity").jct.mean()
    assert set(by.index) == {"heavy", "light"}
    assert by["heavy"] < by["light"]  # four times the weight: served sooner


def test_jobs_keep_arriving_until_the_measured_window_has_finished():
    """At a load the cluster carries, a 40-job trace stops arriving before jobs 10-20 finish; as in
    Gavel's simulator, more of the same endless trace arrive until the window is done, and the window's
    numbers do not depend on how many jobs were asked for up front."""
    thr = GavelThroughputs(single={**RATES, ("v100", "indifferent", 4, True): 3.0},
                           pairs={}, gpu_types=("v100", "k80"), job_types=("fast-on-v100", "indifferent"))
    cfg = RigidConfig(round_s=ROUND, window=(10, 20), max_time_s=1e7)

    def trace(n):  # 40 jobs at 1.2 an hour stop arriving at 35 h; the window then finishes at 56 h
        return gavel_trace(thr, 1.2, n, np.random.default_rng(5))

    capacity = {"v100": 8, "k80": 8}
    drained = simulate_rigid(trace(40), thr, capacity, cfg)
    steady = simulate_rigid_steady(trace, 40, thr, capacity, cfg)
    longer = simulate_rigid_steady(trace, 80, thr, capacity, cfg)
    assert steady.summary["n_jobs"] > 40  # the trace was extended ...
    assert max(j.arrival_s for j in trace(steady.summary["n_jobs"])) >= steady.summary["end_s"]  # ... far enough
    assert steady.summary["avg_jct"] > 1.2 * drained.summary["avg_jct"]  # a draining cluster flatters the window
    window = steady.jobs[steady.jobs.in_window].jct.to_numpy()
    np.testing.assert_allclose(longer.jobs[longer.jobs.in_window].jct.to_numpy(), window)


# The first jobs Gavel's own generator (scheduler/utils.py generate_job, random.Random(seed + 2) for jobs,
# random.Random(seed + 3) for inter-arrival times at lam = 3600 / rate) gives for seed 0 at 5 jobs per hour,
# as Gavel's code printed them: (job type, scale factor, arrival s, steps).
GAVEL_SEED0_RATE5 = [("ResNet-18 (batch size 64)", 8, 0.0, 17484476.26110642),
                     ("Transformer (batch size 16)", 1, 195.6688583282412, 343170.46864225325)]


def test_gavels_generator_gives_gavels_jobs_for_a_seed(request):
    from goodopt.gavel import read_gavel_throughputs
    from goodopt.gavel.generator import gavel_trace_exact

    from .conftest import _traces_path

    path = _traces_path()
    if not (path / "gavel").is_dir():
        pytest.skip(f"Gavel's throughputs not found at {path}")
    thr = read_gavel_throughputs(path)
    jobs = gavel_trace_exact(thr, 5.0, 2000, 0)
    for job, (jt, s, t, steps) in zip(jobs, GAVEL_SEED0_RATE5):
        assert (job.job_type, job.scale_factor) == (jt, s)
        assert job.arrival_s == pytest.approx(t, rel=1e-12) and job.total_steps == pytest.approx(steps, rel=1e-12)
    sizes = np.array([j.scale_factor for j in jobs])
    assert 1.75 < sizes.mean() < 2.0  # Gavel's sizes: 1.9 GPUs a job in expectation (types redrawn for sizes > 1)
    single = gavel_trace_exact(thr, 5.0, 50, 0, {1: 1.0})
    assert all(j.scale_factor == 1 for j in single)
    # continuous-single draws the same durations and arrivals as continuous-multiple: only sizes (and so
    # the types a size > 1 would have redrawn) differ
    assert [j.arrival_s for j in single] == [j.arrival_s for j in jobs[:50]]
    assert single[0].duration_s == jobs[0].duration_s


def test_a_run_past_saturation_is_cut_and_marked(tmp_path):
    """max_active_jobs: once the queue passes it, the run stops and the window is marked saturated."""
    from goodopt.runs.sweep import run_sweep

    spec = {"name": "cut", "kind": "rigid", "rates": [200], "n_jobs": 60, "window": [10, 50],
            "capacity": {"v100": 2}, "throughputs": str(write_throughputs(tmp_path / "t.json")), "generator": "numpy",
            "arrivals": "until_window",
            "policies": [{"label": "cut", "policy": "max_min_fairness", "options": {"max_active_jobs": 20}}]}
    row = run_sweep(spec, progress=False).table.iloc[0]
    assert bool(row.saturated) and row.n_unfinished > 0


def test_a_rigid_sweep_spec_takes_gavels_mechanism_once_for_every_policy(tmp_path):
    from goodopt.runs.spec import spec_from_dict
    from goodopt.runs.tasks import expand

    spec = spec_from_dict({"name": "mech", "kind": "rigid", "rates": [2], "n_jobs": 30, "capacity": {"v100": 2},
                           "throughputs": str(write_throughputs(tmp_path / "t.json")), "generator": "numpy",
                           "mechanism": "gavel", "policies": ["max_min_fairness", "finish_time_fairness"]})
    assert {t.config["mechanism"] for t in expand(spec)} == {"gavel"}


def test_the_order_of_the_gpu_types_is_part_of_a_rigid_task(traces):
    """The round mechanism considers the GPU types in ``capacity``'s order, and the answer follows it (Gavel's
    cluster and throughputs, 60 jobs at 6 an hour under finish-time fairness: 111,121 s given v100 first,
    110,367 s given k80 first); two orders are two tasks, each with its own cache key."""
    from goodopt.gavel import read_gavel_throughputs
    from goodopt.runs.cache import task_key
    from goodopt.runs.tasks import rigid_task

    thr = read_gavel_throughputs(traces)
    jobs = gavel_trace(thr, 6.0, 60, np.random.default_rng(0))
    cfg = RigidConfig(policy="finish_time_fairness", window=(10, 50), max_time_s=1e8, options={"lp_method": "ipm"})
    orders = ({"v100": 8, "p100": 8, "k80": 8}, {"k80": 8, "p100": 8, "v100": 8})
    v100_first, k80_first = (simulate_rigid(jobs, thr, capacity, cfg).summary["avg_jct"] for capacity in orders)
    assert v100_first != k80_first
    tasks = [rigid_task(traces, capacity, 6.0, 60, window=[10, 50], policy="finish_time_fairness")
             for capacity in orders]
    assert tasks[0].inputs()["capacity"] == [["v100", 8], ["p100", 8], ["k80", 8]]
    assert task_key(tasks[0]) != task_key(tasks[1])
    assert task_key(tasks[0]) == task_key(rigid_task(traces, dict(orders[0]), 6.0, 60, window=[10, 50],
                                                     policy="finish_time_fairness"))
