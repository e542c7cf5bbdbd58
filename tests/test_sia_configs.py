"""``configs: sia``: the exact method over Sia's configuration set, the apples-to-apples comparison with Sia's
ILP -- the set as Sia's artifact lists it, its optimum never above the full one, and its bound kept apart."""

import numpy as np
import pytest
from goodopt.formulations.configs import SIA_MAX_GPUS, enumerate_configs, sia_configs
from goodopt.solvers import solve
from hypothesis import HealthCheck, given, settings

import goodopt
from goodopt.families import FAMILIES

from .test_fullrange import problems


def test_sia_set_is_powers_of_two_on_a_node_and_whole_nodes_beyond():
    pr = FAMILIES["sia-64"].scenario(0).problem()  # 4-GPU and 8-GPU nodes
    cs = sia_configs(pr)
    caps = {g: int(pr.node_capacity[pr.node_type == g].max()) for g in range(pr.n_gpu_types)}
    moves = ~cs.keep
    for c in np.flatnonzero(moves):
        k, cap = int(cs.n_gpus[c]), caps[int(cs.gpu_type[c])]
        if cs.multi[c]:
            assert k % cap == 0 and 2 * cap <= k <= SIA_MAX_GPUS, (k, cap)
        else:
            assert k in (1, 2, 4, 8) and k <= cap, (k, cap)
    # on an 8-GPU type Sia lists 1, 2, 4, 8 GPUs on one node and 2-8 whole nodes: every one of a job's in reach
    full = enumerate_configs(pr, prune=False)
    j, g = 0, next(g for g, c in caps.items() if c == 8)
    mine = {(int(k), bool(m)) for k, m, jj, gg, kp in zip(cs.n_gpus, cs.multi, cs.job, cs.gpu_type, cs.keep)
            if jj == j and gg == g and not kp}
    reachable = {(int(k), bool(m)) for k, m, jj, gg, kp in zip(full.n_gpus, full.multi, full.job, full.gpu_type,
                                                                full.keep) if jj == j and gg == g and not kp}
    expected = {(k, False) for k in (1, 2, 4, 8)} | {(8 * n, True) for n in range(2, 9)}
    assert mine == expected & reachable
    assert cs.keep.sum() == enumerate_configs(pr).keep.sum()  # running jobs keep their allocation


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pr=problems())
def test_the_restricted_optimum_is_feasible_never_above_the_full_one_and_claims_no_bound(pr):
    full = solve(pr, "milp")
    sia = solve(pr, "milp", {"configs": "sia"})
    assert sia.has_solution and sia.feasible
    # the full problem's optimum is at most its certified bound (its answer may lie within the solver's gap
    # below it, and the restricted answer may then be the better one: p = -2, fitness 8.66025e-7, gap 4e-7)
    ceiling = full.bound if np.isfinite(full.bound) else full.fitness
    assert sia.fitness <= ceiling * (1 + 1e-9) + 1e-300, (pr.p, sia.fitness, full.fitness, full.bound)
    assert np.isnan(sia.bound) and sia.status in ("completed", "time_limit", "numerical")
    if sia.extra["restricted_status"] == "optimal":
        assert sia.extra["restricted_bound"] >= sia.fitness * (1 - 1e-6)


def test_the_restricted_optimum_on_sia_64_is_below_the_full_one():
    pr = goodopt.load_scenario("family:sia-64:0").problem()
    full, sia = solve(pr, "milp"), solve(pr, "milp", {"configs": "sia"})
    assert full.status == "optimal" and sia.extra["restricted_status"] == "optimal"
    assert sia.fitness < full.fitness and sia.extra["n_configs"] < full.extra["n_configs"]
    assert "Sia's configuration set" in sia.message


def test_configs_is_checked():
    with pytest.raises(goodopt.errors.ValidationError, match="configs"):
        solve(FAMILIES["tiny"].scenario(0).problem(), "milp", {"configs": "pollux"})


@pytest.mark.parametrize("name", ["sia-64", "hetero-16", "mixed-64"])
def test_the_bench_baseline_is_sia_s_ilp_a_relaxation_of_the_restricted_problem(name):
    """Sia's ILP (one configuration per job, GPUs per type, no node rows) bounds the restricted optimum."""
    from dataclasses import replace

    from goodopt.formulations.configs import sia_configs
    from goodopt.formulations.scaled_objective import fitness_of_value, reference_fitness
    from goodopt.solvers.mip_solvers import Limits, adapter

    from goodopt.bench.sia_ilp import sia_ilp_matrix
    from goodopt.scenario import Objective

    pr = replace(FAMILIES[name].scenario(0), objective=Objective.sia()).problem()
    mm = sia_ilp_matrix(pr)
    assert set(mm.names) <= {"0c", "1", "R2"} and mm.n_configs == sia_configs(pr).n_configs
    out, _ = adapter("highs").solve(mm, Limits(threads=1, mip_rel_gap=0.0))
    r = reference_fitness(pr, sia_configs(pr), None)
    ilp = fitness_of_value(out.objective, pr.p, float(pr.weights.sum()), r)
    restricted = solve(pr, "milp", {"configs": "sia"})
    assert restricted.extra["restricted_status"] == "optimal"
    assert ilp >= restricted.fitness * (1 - 1e-7)


def test_the_bench_times_both_configuration_sets_beside_sia_s_ilp(monkeypatch):
    # One instance of the bench's table: goodopt over every configuration and over Sia's set, each certified,
    # the larger set never worse (Sia's set is part of it), every ratio the quotient of its own columns.
    from goodopt.bench import sia_ilp

    monkeypatch.setattr(sia_ilp, "BASELINE_SOLVERS", ("highs",))  # CBC's program need not be installed here
    rows, summary = sia_ilp.sia_table([("sia-64", (0, 3))])
    for r in rows:
        assert r["goodopt_status"] == "optimal" and r["sia_set_status"] == "optimal"
        assert r["fitness"] >= r["sia_set_fitness"] * (1 - 1e-9) and r["full_set_gain"] >= -1e-9
        assert r["ratio_to_highs"] == pytest.approx(r["goodopt_cpu_s"] / r["sia_ilp_highs_cpu_s"])
        assert r["sia_set_ratio_to_highs"] == pytest.approx(r["sia_set_cpu_s"] / r["sia_ilp_highs_cpu_s"])
    (s,) = summary
    assert s["sia_set_certified"] and s["worst_sia_set_ratio_to_highs"] == max(r["sia_set_ratio_to_highs"] for r in rows)
    assert s["worst_seed_sia_set_highs"] in (0, 3)


def test_the_bench_compares_with_sia_s_ilp_on_the_instances_it_is_given(tmp_path, monkeypatch):
    # --sia-instances FAMILY:SEEDS puts any seeds beside the ILP, so a reader can check seeds outside the table's
    # own set the same way; a bad spec is refused before anything runs, naming the flag and the fix.
    import pandas as pd

    from goodopt.bench import sia_ilp
    from goodopt.bench.__main__ import main
    from goodopt.errors import ValidationError

    assert sia_ilp.parse_instances(["mixed-2048:5-9", "sia-64:0,3", "sia-64:7"]) == (
        ("mixed-2048", (5, 6, 7, 8, 9)), ("sia-64", (0, 3)), ("sia-64", (7,)))
    for bad in ("sia-64", "sia-64:", "sia-64:9-5", "sia-64:1-", "sia-64:a,b", "sia-64:1,,2", "sia-46:0"):
        with pytest.raises(ValidationError) as e:
            sia_ilp.parse_instances([bad])
        assert e.value.field == "--sia-instances"
    assert "did you mean 'sia-64'" in str(e.value)  # the unknown family's message suggests the near name
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "no"), "--only", "sia", "--sia-instances", "sia-64:x"])
    assert not (tmp_path / "no" / "sia_ilp.csv").exists()
    monkeypatch.setattr(sia_ilp, "BASELINE_SOLVERS", ("highs",))  # CBC's program need not be installed here
    assert main(["--out", str(tmp_path), "--only", "sia", "--sia-instances", "sia-64:12"]) == 0
    rows = pd.read_csv(tmp_path / "sia_ilp.csv")
    assert rows[["family", "seed"]].values.tolist() == [["sia-64", 12]]
    assert rows["goodopt_status"].tolist() == ["optimal"]
