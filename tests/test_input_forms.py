"""Inputs as users write them every day: numbers in scientific notation, keys given twice, options of every
shape, and published files that are damaged; each gives the right result or one clean message."""

import shutil
from pathlib import Path

import pytest
import yaml

import goodopt
from goodopt.cli import main
from goodopt.errors import TraceError, ValidationError
from goodopt.reproduce import reproduce
from goodopt.reproduce.experiments import POLLUX_PUBLISHED, SIA_PUBLISHED, read_published
from goodopt.validation import read_yaml
from goodopt.yaml12 import load_yaml

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ YAML 1.2 numbers, keys given once
@pytest.mark.parametrize("text, value", [("1e-6", 1e-6), ("1.5e3", 1500.0), ("-2E9", -2e9), (".5e-3", 5e-4),
                                         ("1e9", 1e9), ("12", 12), ("0.25", 0.25), ("1e", "1e"), ("e5", "e5"),
                                         # YAML 1.2's core schema where 1.1 differs: decimal with leading zeros,
                                         # 0o octal, 0x hex; no, yes, on, 1_000, 1:30 and dates are text
                                         ("010", 10), ("08", 8), ("0o10", 8), ("0x1F", 31), ("-0", 0),
                                         ("no", "no"), ("yes", "yes"), ("on", "on"), ("Off", "Off"),
                                         ("1_000", "1_000"), ("1:30", "1:30"), ("2024-01-01", "2024-01-01"),
                                         ("true", True), ("FALSE", False), ("~", None), ("null", None),
                                         ("1.", 1.0), ("+3.5", 3.5), (".inf", float("inf")),
                                         ("-.Inf", float("-inf")), ("0o8", "0o8"), ("0x", "0x")])
def test_numbers_are_read_as_yaml_1_2_reads_them(text, value):
    assert load_yaml(text) == value and type(load_yaml(text)) is type(value)


def test_yaml_nan_is_a_float():
    import math

    assert math.isnan(load_yaml(".NaN"))


def test_a_text_read_again_gives_the_same_answer_as_a_copy_of_its_own():
    """A remembered parse: changing what one reader got does not reach the next reader of the same text, and
    an anchor's sharing is kept within each copy."""
    from goodopt.yaml12 import _parse

    text = "base: &b {x: [1, 2]}\nrun: *b\nlimit: 1e-6\n"
    first = load_yaml(text)
    assert first == _parse(text) and first["run"] is first["base"]
    first["base"]["x"].append(3)
    second = load_yaml(text)
    assert second == {"base": {"x": [1, 2]}, "run": {"x": [1, 2]}, "limit": 1e-6}
    assert second["run"] is second["base"] and second["base"] is not first["base"]


def test_a_scenario_reads_yaml_1_2_integers_and_names(tmp_path):
    text = (ROOT / "scenarios" / "small-2node.yaml").read_text().replace("n_nodes: 2", "n_nodes: 010")
    text = text.replace("name: ncf-1,", "name: no,")
    (tmp_path / "s.yaml").write_text(text)
    sc = goodopt.load_scenario(str(tmp_path / "s.yaml"))
    assert sc.cluster.n_nodes == 10 and "no" in [j.name for j in sc.jobs]


@pytest.mark.parametrize("name, why", [("1e3", "must be text"), ("true", "must be text"), ("7", "must be text"),
                                       ("[a, b]", "printable text"), ('"a\\0b"', "printable text"),
                                       ('"  "', "printable text")])
def test_a_job_name_that_is_not_text_is_refused_not_rewritten(tmp_path, name, why):
    text = (ROOT / "scenarios" / "small-2node.yaml").read_text().replace("name: ncf-1,", f"name: {name},")
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(goodopt.ScenarioError, match=why) as err:
        goodopt.load_scenario(str(tmp_path / "s.yaml"))
    assert err.value.field.endswith(".name")


def test_scientific_notation_is_accepted_by_every_reader(tmp_path, capsys):
    assert main(["solve", "small-2node", "--method", "milp", "--option", "mip_rel_gap=1e-6", "--json"]) == 0
    assert main(["solve", "small-2node", "--method", "ga", "--option", "pop_size=2e1", "--option", "n_gen=1e1",
                 "--json"]) == 0
    sc = yaml.safe_load((ROOT / "scenarios" / "small-2node.yaml").read_text())
    text = yaml.safe_dump(sc).replace("eps: 0.001", "eps: 1e-3")
    assert "eps: 1e-3" in text
    (tmp_path / "s.yaml").write_text(text)
    shutil.copytree(ROOT / "scenarios" / "profiles", tmp_path / "profiles")
    assert goodopt.load_scenario(tmp_path / "s.yaml").objective.eps == 1e-3
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: s\nkind: simulate\ngenerated: {loads: [0.1], hours: 0.5}\npolicies: [fifo]\n"
                    "config: {agent_optimism: 1e-2}\n")
    capsys.readouterr()
    assert main(["sweep", str(spec), "--dry-run"]) == 0


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: x\njobs: []\ncluster: {}\njobs:\n- {name: a}\n")
    with pytest.raises(ValidationError, match=r"s\.yaml:4:1.*'jobs' is given twice \(first at line 2\)"):
        read_yaml(f, "scenario")


def test_yaml_merge_keys_may_still_be_overridden():
    assert load_yaml("base: &b {x: 1, y: 2}\nrun: {<<: *b, x: 3}")["run"] == {"x": 3, "y": 2}


# ------------------------------------------------------------------ options of every shape
@pytest.mark.parametrize("method, option, field", [
    ("gavel", "policy_options=nan", "options.policy_options"),
    ("gavel", "policy_options=[1, 2]", "options.policy_options"),
    ("gavel", "policy_options={second_stage: 3}", "options.policy_options.second_stage"),
    ("gavel", "policy_options={tolerance: -1}", "options.policy_options.tolerance"),
    ("gavel", "policy_options={max_lps: 2.5}", "options.policy_options.max_lps"),
    ("gavel", "entities=[1]", "options.entities"),
    ("gavel", "entities={a: 3}", "options.entities.a"),
    ("gavel", "entities=nan", "options.entities"),
    ("milp", "highs_options=nan", "options.highs_options"),
    ("milp", "highs_options={presolve: [1]}", "options.highs_options.presolve"),
    ("milp", "highs_options={no_such_option: 1}", "options.highs_options.no_such_option"),
    ("ga", "pop_size=1e9", "options.pop_size"),
])
def test_mapping_valued_options_are_checked_by_type(method, option, field, capsys):
    assert main(["solve", "sia-default" if method == "gavel" else "small-2node", "--method", method,
                 "--option", option]) == 2
    err = capsys.readouterr().err
    assert f"error: {field}:" in err and "Traceback" not in err


@pytest.mark.parametrize("option", ["pop_size=1e9", "every_s={a: 1}", "min_utility=nan", "n_gen=2.5"])
def test_auto_scaler_options_are_checked(option, capsys):
    assert main(["simulate", "generated:0.1:0", "--autoscale", "pollux", "--autoscale-option", option,
                 "--dry-run"]) == 2
    assert "autoscale_options." in capsys.readouterr().err


@pytest.mark.parametrize("value", [[1, 2], "[[1, 2]]", 7, "text", {1: 2}])
def test_auto_scaler_options_of_the_wrong_shape_are_refused(value):
    from goodopt.sim.config import SimConfig

    with pytest.raises(goodopt.ValidationError, match="autoscale_options"):
        SimConfig(autoscale="pollux", autoscale_options=load_yaml(value) if isinstance(value, str) else value)


def test_an_option_given_twice_is_refused(capsys):
    assert main(["simulate", "generated:0.1:0", "--autoscale", "pollux", "--autoscale-option", "every_s=600",
                 "--autoscale-option", "every_s=300", "--dry-run"]) == 2
    assert "given twice" in capsys.readouterr().err
    assert main(["solve", "small-2node", "--method", "ga", "--option", "n_gen=2", "--option", "n_gen=3"]) == 2


@pytest.mark.parametrize("field", ["restart_delays_s", "slowdowns"])
def test_a_misspelt_application_in_a_per_application_setting_is_refused(field, tmp_path, capsys):
    import yaml

    spec = {"name": "apps", "kind": "simulate", "generated": {"loads": [0.5], "seeds": [0], "hours": 1},
            "policies": ["fifo"], "cluster": "small-2node", "config": {field: {"cifra10": 2.0}}}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(spec))
    assert main(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{field}.cifra10" in err and "did you mean 'cifar10'" in err and not (tmp_path / "o.csv").exists()


def test_a_misspelt_application_in_a_scenarios_restart_delays_is_refused(tmp_path):
    text = (ROOT / "scenarios" / "small-2node.yaml").read_text().replace(
        "restart_delay_s: 30.0,", "restart_delay_s: 30.0, restart_delays_s: {imagnet: 250},")
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(goodopt.ScenarioError, match="did you mean 'imagenet'"):
        goodopt.load_scenario(str(tmp_path / "s.yaml"))


def test_a_misspelt_gavel_policy_gets_a_suggestion(capsys):
    assert main(["simulate", "generated:0.1:0", "--policy", "gavel", "--option", "policy=max_min_fairnes",
                 "--dry-run"]) == 2
    assert "did you mean 'max_min_fairness'" in capsys.readouterr().err
    with pytest.raises(goodopt.ValidationError, match="did you mean 'max_min_fairness'"):
        goodopt.solve(goodopt.load_scenario("small-2node"), "gavel", {"policy": "max_min_fairnes"})


# ------------------------------------------------------------------ published files, checked before any task
def _corruptions():
    good = "experiment,setting,policy,n_workloads,mean_avg_jct_s\njobload,load=0.5,pollux,8,1534.0\n" \
           "jobload,load=0.5,optimus,8,2000.0\n"
    return {
        "non-numeric value": good.replace("1534.0", "fast"),
        "renamed column": good.replace("mean_avg_jct_s", "avg_jct"),
        "missing column": good.replace(",mean_avg_jct_s", "").replace(",1534.0", "").replace(",2000.0", ""),
        "duplicate key row": good + "jobload,load=0.5,pollux,8,1600.0\n",
        "empty file": "",
        "ragged row": good + "jobload,load=1.0,pollux\n",
        "non-UTF-8": good.replace("pollux", "poll\udcffux"),
        "empty cell": good.replace("1534.0", ""),
        "negative": good.replace("1534.0", "-1534.0"),
        "inf": good.replace("1534.0", "inf"),
        "nan": good.replace("1534.0", "nan"),
        "zero baseline": good.replace("2000.0", "0"),
        "header only": good.splitlines()[0] + "\n",
        "empty key": good.replace("load=0.5,pollux", ",pollux"),
        "blank header": "\n" + good,
    }


@pytest.mark.parametrize("kind", list(_corruptions()))
def test_a_damaged_published_file_is_named_with_its_line(tmp_path, kind):
    f = tmp_path / POLLUX_PUBLISHED.path
    f.parent.mkdir(parents=True)
    f.write_bytes(_corruptions()[kind].encode("utf-8", "surrogateescape"))
    with pytest.raises(TraceError, match=r"published-results\.csv"):
        read_published(tmp_path, POLLUX_PUBLISHED)


def test_the_published_files_as_shipped_are_accepted(traces):
    assert len(read_published(traces, POLLUX_PUBLISHED)) > 0 and len(read_published(traces, SIA_PUBLISHED)) == 3


def test_reproduce_checks_the_published_files_before_any_task(tmp_path, traces, monkeypatch):
    import goodopt.reproduce as rp

    monkeypatch.setattr(rp, "run_sweep", lambda *a, **k: pytest.fail("work started"))
    monkeypatch.setattr(rp, "run_tasks", lambda *a, **k: pytest.fail("work started"))
    copy = tmp_path / "traces"
    (copy / "pollux").mkdir(parents=True)
    (copy / "pollux" / "published-results.csv").write_text("experiment,setting\n")
    with pytest.raises(TraceError, match=r"published-results\.csv:1: column .policy. is missing"):
        reproduce(["pollux-fig8"], out=tmp_path / "out", traces=copy)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ a dry run checks what a run checks
@pytest.mark.parametrize("args, field", [
    (["generated:0.1:0", "--autoscale", "pollux", "--min-nodes", "20", "--nodes", "4"], "min_nodes"),
    (["generated:1.0:0:2", "--cluster", "sia-default", "--policy", "gavel"], "num_replicas"),
    (["generated:0.1:0", "--min-nodes", "3"], "--min-nodes"),  # a setting that would change nothing
    (["generated:0.1:0", "--provision-delay", "10"], "--provision-delay"),
    (["generated:0.1:0", "generated:0.1:0"], "given twice"),
])
def test_a_dry_run_refuses_what_the_run_would_refuse(args, field, capsys):
    assert main(["simulate", *args, "--dry-run"]) == 2
    assert field in capsys.readouterr().err


@pytest.mark.parametrize("extra, field", [
    ("vary: {interval_s: []}\n", "spec.vary.interval_s"),
    ("config: {min_nodes: 2}\n", "spec.config.min_nodes"),
    ("seeds: [0, 0]\n", "given twice"),
])
def test_a_sweep_refuses_empty_or_idle_settings_and_repeated_tasks(tmp_path, extra, field, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nkind: simulate\ngenerated: {loads: [0.1], hours: 0.5}\npolicies: [fifo]\n" + extra)
    assert main(["sweep", str(spec), "--dry-run"]) == 2
    assert field in capsys.readouterr().err


@pytest.mark.parametrize("value", ["NaN", "-1.5", "Infinity", '"fast"'])
def test_a_bad_throughput_in_a_rigid_jobs_file_is_refused(tmp_path, value, traces):
    text = (traces / "gavel" / "simulation_throughputs.json").read_text()
    first = text.index('"null": ') + len('"null": ')
    end = min(text.index(",", first), text.index("}", first))
    bad = tmp_path / "thr.json"
    bad.write_text(text[:first] + value + text[end:])
    from goodopt.gavel import read_gavel_throughputs

    with pytest.raises(TraceError, match="throughput must be a finite number >= 0"):
        read_gavel_throughputs(bad)


# ------------------------------------------------------------------ every Gavel policy from solve
def test_finish_time_policies_take_the_jobs_work_as_options():
    sc = goodopt.load_scenario("gavel-default")
    names = [j.name for j in sc.jobs]
    with pytest.raises(ValidationError, match="--option remaining_steps"):
        goodopt.solve(sc, "gavel", {"policy": "min_makespan"})
    work = {n: 1000.0 * (1 + i % 5) for i, n in enumerate(names)}
    for policy in ("min_makespan", "finish_time_fairness", "finish_time_fairness_packed"):
        res = goodopt.solve(sc, "gavel", {"policy": policy, "remaining_steps": work,
                                          "elapsed_s": {names[0]: 600.0}})
        assert res.has_solution and res.status == "completed", policy
    with pytest.raises(ValidationError, match="gives no value for job"):
        goodopt.solve(sc, "gavel", {"policy": "min_makespan", "remaining_steps": {names[0]: 1.0}})


def test_packed_policies_run_on_the_shipped_gavel_scenario():
    sc = goodopt.load_scenario("gavel-default")
    res = goodopt.solve(sc, "gavel", {"policy": "max_min_fairness_packed"})
    alone = goodopt.solve(sc, "gavel", {"policy": "max_min_fairness"})
    assert res.has_solution and res.extra["pair_fractions"]  # some jobs share GPUs
    # sharing only adds options: the packed LP's level is at least the one without pairs
    assert res.extra["policy_objective"] >= alone.extra["policy_objective"] - 1e-6
    with pytest.raises(ValidationError, match="no measured pair throughputs"):
        goodopt.solve(goodopt.load_scenario("sia-default"), "gavel", {"policy": "max_min_fairness_packed"})


def test_methods_policies_and_auto_scalers_share_one_options_system():
    # Every policy and auto-scaler declares a frozen options class like the methods': made from keywords,
    # checked once, listed with its defaults by `goodopt options`, and a wrong key or type is named.
    import dataclasses
    import pickle

    from goodopt.solvers.options import OPTIONS

    from goodopt.sim.autoscale import AUTOSCALERS, make_autoscaler
    from goodopt.sim.policies import POLICIES, SimPolicyOptions, make_policy, policy_options
    from goodopt.typed_options import TypedOptions

    for cls in [*OPTIONS.values(), *(p.Options for p in POLICIES.values()), *(a.Options for a in AUTOSCALERS.values())]:
        assert issubclass(cls, TypedOptions) and cls.__dataclass_params__.frozen, cls
    for name, policy in POLICIES.items():
        assert issubclass(policy.Options, SimPolicyOptions)
        assert policy_options(name) == policy.Options.defaults()
        made = make_policy(name)
        assert made.opts == policy.Options.build(None)
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.opts.x = 1  # type: ignore[misc]
    assert make_policy("themis", lease_s=60).opts.lease_s == 60.0
    with pytest.raises(goodopt.ValidationError, match=r"policy_options.leas_s: not an option of policy 'themis' "
                       r"\(did you mean 'lease_s'"):
        make_policy("themis", leas_s=60)
    with pytest.raises(goodopt.ValidationError, match=r"policy_options.window_rounds: must be a whole number") as err:
        make_policy("shockwave", window_rounds=2.5)
    again = pickle.loads(pickle.dumps(err.value))
    assert type(again) is type(err.value) and str(again) == str(err.value)
    with pytest.raises(goodopt.ValidationError, match="policy_options.interference_avoidance: must be true or false"):
        make_policy("pollux", interference_avoidance="yes")
    assert make_policy("milp", p=float("-inf")).objective.p == float("-inf")  # p's whole range, -inf included
    assert make_autoscaler("exact", gpu_worth=0.3).opts.gpu_worth == 0.3
    with pytest.raises(goodopt.ValidationError, match="autoscale_options.gpu_worth: must be >= 0"):
        make_autoscaler("exact", gpu_worth=-1)
