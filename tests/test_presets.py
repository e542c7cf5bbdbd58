"""Presets: one name for the settings of a paper's simulator, expanded where settings are read; what a user
gives beside a preset wins."""

import pickle

import pytest

from goodopt.errors import ValidationError
from goodopt.runs.spec import spec_from_dict
from goodopt.runs.tasks import expand
from goodopt.sim.config import SIA_SIM_RESTART_DELAYS_S, SIA_SIM_SLOWDOWNS, SimConfig
from goodopt.sim.presets import SIM_PRESETS
from goodopt.sim.rigid_config import RigidConfig

from .test_rigid import write_throughputs


def test_the_sia_preset_is_sias_restart_delays_and_slowdowns_and_a_change_wins():
    sia = SimConfig.preset("sia")
    assert sia == SimConfig.sia()
    assert sia.restart_delay_of("imagenet") == SIA_SIM_RESTART_DELAYS_S["imagenet"] == 250.0
    assert sia.slowdown_of("cifar10") == SIA_SIM_SLOWDOWNS["cifar10"] == 1.8
    assert SimConfig.preset("sia", slowdowns={}).slowdown_of("cifar10") == 1.0
    assert SimConfig.preset("pollux") == SimConfig()  # Pollux's simulator's settings are the defaults


def test_the_gavel_preset_is_gavels_mechanism_arrivals_and_lp_and_a_policys_option_wins():
    las = RigidConfig.preset("gavel")
    assert (las.mechanism, las.arrivals, las.round_s, las.generator) == ("gavel", "until_window", 360.0, "gavel")
    assert dict(las.options) == {"lp_method": "ipm", "second_stage": False, "scale_by_size": True}
    ftf = RigidConfig.preset("gavel", "finish_time_fairness")
    assert dict(ftf.options) == {"lp_method": "ipm"}  # LAS's own LP settings are not FTF's
    vertex = RigidConfig.preset("gavel", agnostic=True, options={"lp_method": "simplex"}, mechanism="goodopt")
    assert dict(vertex.options) == {"lp_method": "simplex", "second_stage": False, "scale_by_size": True}
    assert vertex.mechanism == "goodopt" and vertex.agnostic


@pytest.mark.parametrize("make, name, hint", [
    (lambda: SimConfig.preset("gavel"), "gavel", "rigid-job runs"),
    (lambda: RigidConfig.preset("sia"), "sia", "simulations"),
    (lambda: SimConfig.preset("sai"), "sai", "sia"),
])
def test_an_unknown_preset_is_refused_with_the_presets_there_are(make, name, hint):
    with pytest.raises(ValidationError, match="preset") as err:
        make()
    assert name in str(err.value) and hint in str(err.value)
    assert isinstance(err.value, ValueError)
    assert str(pickle.loads(pickle.dumps(err.value))) == str(err.value)


def _simulate_spec(**fields):
    return {"name": "p", "kind": "simulate", "workloads": ["generated:0.5:0:1"], "policies": ["pollux"], **fields}


def test_a_simulation_spec_under_a_preset_runs_the_tasks_it_spells_out():
    spelled = {"restart_delays_s": SIA_SIM_RESTART_DELAYS_S, "slowdowns": SIA_SIM_SLOWDOWNS}
    assert expand(spec_from_dict(_simulate_spec(preset="sia"))) == expand(spec_from_dict(_simulate_spec(
        config=spelled)))
    mine = expand(spec_from_dict(_simulate_spec(preset="sia", config={"slowdowns": {"cifar10": 1.1}})))
    config = SimConfig(**mine[0].config)
    assert config.slowdowns == (("cifar10", 1.1),)  # the spec's own setting wins
    assert config.restart_delay_of("imagenet") == SIA_SIM_RESTART_DELAYS_S["imagenet"]


@pytest.mark.parametrize("kind, preset", [("simulate", "gavel"), ("rigid", "pollux"), ("simulate", 3)])
def test_a_spec_names_its_preset_when_it_is_not_one_of_its_kind(tmp_path, kind, preset):
    spec = _simulate_spec(preset=preset) if kind == "simulate" else _rigid_spec(tmp_path, preset=preset)
    with pytest.raises(ValidationError, match="spec.preset"):
        spec_from_dict(spec)


def _rigid_spec(tmp_path, **fields):
    return {"name": "g", "kind": "rigid", "rates": [4], "n_jobs": 30, "capacity": {"v100": 2},
            "throughputs": str(write_throughputs(tmp_path / "t.json")), "generator": "numpy",
            "policies": ["max_min_fairness", {"label": "ftf", "policy": "finish_time_fairness"}], **fields}


def test_a_rigid_spec_under_the_gavel_preset_runs_the_four_settings_it_saves_writing(tmp_path):
    spelled = _rigid_spec(tmp_path, mechanism="gavel", arrivals="until_window", policies=[
        {"label": "max_min_fairness", "policy": "max_min_fairness",
         "options": {"options": {"lp_method": "ipm", "second_stage": False, "scale_by_size": True}}},
        {"label": "ftf", "policy": "finish_time_fairness", "options": {"options": {"lp_method": "ipm"}}}])
    assert expand(spec_from_dict(_rigid_spec(tmp_path, preset="gavel"))) == expand(spec_from_dict(spelled))


def test_a_rigid_specs_own_settings_win_over_the_preset(tmp_path):
    spec = _rigid_spec(tmp_path, preset="gavel", mechanism="goodopt", policies=[
        {"policy": "max_min_fairness", "options": {"round_s": 60, "options": {"lp_method": "simplex"}}}])
    (task,) = expand(spec_from_dict(spec))
    assert (task.config["mechanism"], task.config["round_s"], task.config["generator"]) == ("goodopt", 60, "numpy")
    assert task.config["options"] == {"lp_method": "simplex", "second_stage": False, "scale_by_size": True}
    assert task.config["arrivals"] == "until_window"  # not given: the preset's


def test_simulate_takes_every_simulation_preset_and_names_a_wrong_one(tmp_path, capsys):
    from goodopt.cli import main

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text.partition("--preset")[2] for name in SIM_PRESETS)
    for name in SIM_PRESETS:
        assert main(["simulate", "generated:0.5:0:1", "--preset", name, "--dry-run", "--out", str(tmp_path)]) == 0
    assert main(["simulate", "generated:0.5:0:1", "--preset", "gavel", "--dry-run", "--out", str(tmp_path)]) == 2
    assert "--preset" in capsys.readouterr().err
