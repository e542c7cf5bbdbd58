"""Scenario files: shipped ones load, round-trip, and malformed ones fail clearly."""

import copy

import numpy as np
import pytest
import yaml

import goodopt
from goodopt import ScenarioError
from goodopt.scenario import save_scenario, scenario_from_dict
from goodopt.sources import shipped_scenario_names

GOOD = {
    "name": "t",
    "cluster": {"node_groups": [{"gpu_type": "t4", "gpus_per_node": 4, "n_nodes": 2}]},
    "jobs": [
        {"name": "a", "application": "cifar10", "age_s": 100, "allocation": {"t4-0": 2}},
        {"name": "b", "application": "bert", "epoch": 1.0},
    ],
}


def _with(path, value):
    d = copy.deepcopy(GOOD)
    keys = path.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    last = keys[-1]
    if value is _DELETE:
        del cur[last]
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return d


_DELETE = object()

MALFORMED = [
    ("cluster", _DELETE, "cluster"),
    ("cluster.node_groups", [], "cluster.node_groups"),
    ("cluster.node_groups.0.gpus_per_node", 0, "cluster.node_groups[0].gpus_per_node"),
    ("cluster.node_groups.0.gpus_per_node", 2.5, "cluster.node_groups[0].gpus_per_node"),
    ("cluster.node_groups.0.n_nodes", "two", "cluster.node_groups[0].n_nodes"),
    ("cluster.node_groups.0.gpu_typ", "t4", "cluster.node_groups[0].gpu_typ"),
    ("jobs", [], "jobs"),
    ("jobs.0.application", "resnet9000", "jobs[0].application"),
    ("jobs.0.age_s", -5, "jobs[0].age_s"),
    ("jobs.0.weight", 0, "jobs[0].weight"),
    ("jobs.0.allocation", {"t4-9": 1}, "jobs[0].allocation.t4-9"),
    ("jobs.0.allocation", {"t4-0": 5}, "jobs[0].allocation.t4-0"),
    ("jobs.0.allocation", [1, 2], "jobs[0].allocation"),
    ("jobs.0.max_gpus", 0, "jobs[0].max_gpus"),
    ("jobs.0.min_gpus", 0, "jobs[0].min_gpus"),
    ("jobs.0.phi", -3, "jobs[0].phi"),
    ("jobs.1.name", "a", "jobs[1].name"),
    ("jobs.1.n_reallocs", -1, "jobs[1].n_reallocs"),
    ("jobs.1.epochs", 3, "jobs[1].epochs"),
    ("objective", {"p": "fair"}, "objective.p"),
    ("objective", {"eps": 0}, "objective.eps"),
    ("objective", {"base": "half"}, "objective.base"),
    ("objective", {"restart_delay_s": -1}, "objective.restart_delay_s"),
    ("objective", {"interference_avoidance": "yes"}, "objective.interference_avoidance"),
    ("objective", {"base_gpu_type": "h100"}, "objective.base_gpu_type"),
    ("profiles", {"cifar10": "missing.yaml"}, "profiles.cifar10"),
]


@pytest.mark.parametrize("path, value, field", MALFORMED, ids=[m[2] + "=" + repr(m[1])[:12] for m in MALFORMED])
def test_malformed_scenarios_name_the_field(path, value, field):
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(_with(path, value))
    assert e.value.field == field, str(e.value)
    assert isinstance(e.value, ValueError)
    assert field in str(e.value)


def test_mixed_type_allocation_rejected():
    d = copy.deepcopy(GOOD)
    d["cluster"]["node_groups"].append({"gpu_type": "a100", "gpus_per_node": 8, "n_nodes": 1})
    d["jobs"][0]["allocation"] = {"t4-0": 1, "a100-0": 1}
    with pytest.raises(ScenarioError, match="spans GPU types"):
        scenario_from_dict(d)


def test_good_scenario_and_defaults():
    sc = scenario_from_dict(GOOD)
    assert sc.objective.p == -1 and sc.objective.eps == 1e-3 and sc.objective.restart_delay_s == 30
    pr = sc.problem()
    assert pr.node_names == ("t4-0", "t4-1") and pr.gpu_types == ("t4", "t4")
    assert pr.n_jobs == 2 and pr.n_nodes == 2
    assert pr.current.tolist() == [[2, 0], [0, 0]]
    assert pr.realloc[0] == pytest.approx(100 / 130)


@pytest.mark.parametrize("name", shipped_scenario_names())
def test_shipped_scenarios_load_and_round_trip(name, tmp_path):
    sc = goodopt.load_scenario(name)
    pr = sc.problem()
    ev = pr.evaluator()
    assert ev.violation(pr.current) == 0
    out = tmp_path / "s.yaml"
    from goodopt.profiles import ThroughputProfile, shipped_profiles_dir

    paths = {app: str(shipped_profiles_dir() / "gavel" / f"{app}.yaml") for app, p in sc.profiles.items()
             if isinstance(p, ThroughputProfile)}
    save_scenario(sc, out, profile_paths=paths or None)
    again = goodopt.load_scenario(out)
    assert again.jobs == sc.jobs and again.cluster == sc.cluster and again.objective == sc.objective
    assert ev.fitness(pr.current) == again.problem().evaluator().fitness(pr.current)


def test_p_infinity_in_yaml(tmp_path):
    d = copy.deepcopy(GOOD)
    d["objective"] = {"p": "-inf"}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(d))
    assert goodopt.load_scenario(f).objective.p == -np.inf


def test_missing_file():
    with pytest.raises(ScenarioError, match="not found"):
        goodopt.load_scenario("no/such/file.yaml")


def test_family_descriptions_state_their_size():
    import re

    from goodopt.families import FAMILIES

    for f in FAMILIES.values():
        assert f"{f.n_jobs} jobs" in f.description, f.name
        groups = re.findall(r"(\d+) x (\d+) ", f.description)  # "NODES x GPUS_PER_NODE"
        assert sum(int(n) * int(g) for n, g in groups) == f.n_gpus, f.name


@pytest.mark.parametrize("single,base_k,base_rate", [
    ({1: 1.0}, 1, 1.0),   # fair share 4 -> walk down past 3 (measured over two nodes only) to 1 GPU on one node
    ({}, 3, 2.4),         # nothing on one node at all: the smallest measured count, at its measured spread
])
def test_throughput_job_based_on_a_count_valid_on_its_own_spread(tmp_path, single, base_k, base_rate):
    # A job measured at 3 GPUs over two 4-GPU nodes (none on one node) with min_gpus 3: a valid scenario.
    # Its base stays on the base GPU type t4, although the a100 node has a single-node rate at 3 GPUs.
    (tmp_path / "odd.yaml").write_text(yaml.safe_dump({
        "kind": "throughput", "name": "odd", "batch_size": 32,
        "rates": {"t4": {"single_node": single, "multi_node": {3: 2.4}},
                  "a100": {"single_node": {3: 9.0}, "multi_node": {}}}}))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({
        "name": "odd", "profiles": {"odd": "odd.yaml"},
        "cluster": {"node_groups": [{"gpu_type": "t4", "gpus_per_node": 4, "n_nodes": 2},
                                    {"gpu_type": "a100", "gpus_per_node": 4, "n_nodes": 1}]},
        "objective": {"base_gpu_type": "t4"},
        "jobs": [{"name": "j", "application": "odd", "min_gpus": 3, "age_s": 3600},
                 {"name": "k", "application": "odd", "min_gpus": 3, "age_s": 3600}]}))
    pr = goodopt.load_scenario(tmp_path / "s.yaml").problem()
    assert pr.type_names[pr.base_type[0]] == "t4"
    assert pr.base_gpus[0] == base_k
    # speedup 1 at the base, and the 3-GPU two-node rate relative to it
    g = pr.type_names.index("t4")
    assert pr.speedup_table[0, g, 3, 1] == pytest.approx(2.4 / base_rate)


def test_a_gpu_type_no_job_can_run_on_is_an_error_naming_it_and_the_profiles():
    d = _with("cluster.node_groups", [{"gpu_type": "t4", "gpus_per_node": 4, "n_nodes": 2},
                                      {"gpu_type": "h100", "gpus_per_node": 8, "n_nodes": 1}])
    with pytest.raises(ScenarioError, match=r"no job can run on 'h100'.*bert \(.*t4.*\).*cifar10") as err:
        scenario_from_dict(d)
    assert err.value.field == "cluster.node_groups[1].gpu_type"
    assert "add h100 measurements" in str(err.value)


def test_a_gpu_type_some_job_can_run_on_is_accepted():
    d = _with("cluster.node_groups", [{"gpu_type": "t4", "gpus_per_node": 4, "n_nodes": 2},
                                      {"gpu_type": "a100", "gpus_per_node": 8, "n_nodes": 1}])
    pr = scenario_from_dict(d).problem()
    assert pr.n_gpu_types == 2 and goodopt.solve(pr, "milp").status == "optimal"
