"""Every input checked up front: each bad input below is one line on standard error naming the place
(field path or ``file:line``) and exit status 2, before any work; then the seeded fuzz of every input kind."""

import json
import logging
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from goodopt.cli import main

from .fuzz_inputs import CASES, fuzz

SMALL = yaml.safe_load((Path(__file__).resolve().parents[1] / "scenarios" / "small-2node.yaml").read_text())
HEADER = "name,time,application,num_replicas,batch_size\n"


def _run(argv, capsys) -> str:
    """Run ``goodopt ARGV``; the error line it printed (exit status 2, from the command or from argparse)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


# ------------------------------------------------------------------ workload CSVs
@pytest.mark.parametrize("body, expected", [
    ("", "w.csv: has no jobs"),
    ("a,0,cifar10,1\n", "w.csv:2: 4 cells for 5 columns"),
    ("a,0,cifar10,1,128\nb,\xff,ncf,1,1\n", None),  # bytes written below
    ('a,0,"cifar10,1,128\n', "w.csv:2"),
    ("a,0,cifar10,x,128\n", "w.csv:2: num_replicas: must be a whole number"),
    ("a,abc,cifar10,1,128\n", "w.csv:2: time: must be a finite second >= 0, got 'abc'"),
    ("a,0,cifar10,2.7,128\n", "num_replicas: must be a whole number in [1, 2147483647], got '2.7' (values are not rounded)"),
    (",0,cifar10,1,128\n", "w.csv:2: name: is empty"),
    ("a,0,cifar10,1,1000000000000\n", "w.csv:2: batch_size: must be a whole number"),
    ("a,0,cifar10,1,8192\n", "w.csv:2: batch_size: 8192 is above cifar10's maximum 4096"),
    ("a,1e12,cifar10,1,128\n", "w.csv:2: time: arrival 1e+12 s is after the simulation's end"),
    ("a,0,cifar11,1,128\nb,0,ncf,1,128\n", "w.csv:2: application: unknown 'cifar11' (did you mean 'cifar10'?"),
    ("a,0,cifar10,1,128\na,5,ncf,1,128\n", "w.csv:3: duplicate job name 'a'"),
])
def test_bad_workload_rows_are_named_by_file_and_line(body, expected, tmp_path, capsys):
    f = tmp_path / "w.csv"
    if expected is None:  # a byte that is not UTF-8 on line 3
        f.write_bytes(HEADER.encode() + b"a,0,cifar10,1,128\nb,\xff,ncf,1,1\n")
        expected = "w.csv:3:3: byte 0xff is not UTF-8 text (save the file as UTF-8)"
    else:
        f.write_text(HEADER + body)
    err = _run(["simulate", str(f), "--policy", "fifo", "--truth", "model", "--out", str(tmp_path / "o")], capsys)
    assert expected in err
    assert not (tmp_path / "o").exists()


def test_all_bad_rows_of_a_workload_are_reported_at_once(tmp_path, capsys):
    f = tmp_path / "w.csv"
    f.write_text(HEADER + "a,0,cifar10,x,128\nb,0,ncf,1,128\nc,-5,ncf,1,128\n")
    err = _run(["simulate", str(f), "--dry-run"], capsys)
    assert "2 bad row(s)" in err and "w.csv:2: num_replicas" in err and "w.csv:4: time" in err


def test_a_misspelt_column_is_named_with_a_suggestion(tmp_path, capsys):
    f = tmp_path / "w.csv"
    f.write_text("name,time,aplication,num_replicas,batch_size\na,0,cifar10,1,128\n")
    assert "w.csv:1: unknown column 'aplication' (did you mean 'application'?" in _run(
        ["simulate", str(f), "--dry-run"], capsys)


# ------------------------------------------------------------------ profiles and scenarios
def _scenario_with_profile(tmp_path, change) -> Path:
    prof = yaml.safe_load((Path(__file__).resolve().parents[1] / "scenarios" / "profiles" / "ncf.yaml").read_text())
    change(prof)
    (tmp_path / "myapp.yaml").write_text(yaml.safe_dump(prof))
    sc = {**SMALL, "profiles": {"myapp": "myapp.yaml"}}
    sc["jobs"] = [dict(j) for j in SMALL["jobs"]]
    sc["jobs"][1]["application"] = "myapp"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sc))
    return tmp_path / "s.yaml"


def _zero_throughput(prof):
    for gpu in prof["gpu_types"].values():
        gpu["throughput"] = {k: (1.0 if k == "gamma" else 0.0) for k in gpu["throughput"]}


@pytest.mark.parametrize("change, expected", [
    (_zero_throughput, "alpha_c: alpha_c and beta_c are both 0, so a step would take no time"),
    (lambda p: p.update(epoch_iterations="abc"), "myapp.yaml.epoch_iterations: must be a number, got 'abc'"),
    (lambda p: p.update(epoch_iterations=float("inf")), "myapp.yaml.epoch_iterations: must be finite"),
    (lambda p: p.update(max_batch_size=10 ** 12), "myapp.yaml.max_batch_size: must be <= 2147483647"),
])
def test_bad_profiles_are_refused_with_the_field(change, expected, tmp_path, capsys):
    assert expected in _run(["info", str(_scenario_with_profile(tmp_path, change))], capsys)


@pytest.mark.parametrize("change, expected", [
    (lambda s: s["objective"].update(n_batch_candidates=100_000_000), "objective.n_batch_candidates: must be <= 4096"),
    (lambda s: s["cluster"]["node_groups"][0].update(n_nodes=100_000_000),
     "cluster.node_groups[0].n_nodes: must lie in [1, 4096], got 100000000"),
    (lambda s: s["jobs"][0].update(application="imagnet"), "jobs[0].application: no shipped profile named "
                                                            "'imagnet' (did you mean 'imagenet'?"),
])
def test_sizes_are_bounded_and_names_suggested(change, expected, tmp_path, capsys):
    sc = json.loads(json.dumps(SMALL))
    change(sc)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sc))
    assert expected in _run(["info", str(tmp_path / "s.yaml")], capsys)


def test_every_bad_job_of_a_scenario_is_reported_at_once(tmp_path, capsys):
    sc = json.loads(json.dumps(SMALL))
    sc["jobs"][0]["age_s"] = -1
    sc["jobs"][3]["colour"] = "red"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sc))
    err = _run(["info", str(tmp_path / "s.yaml")], capsys)
    assert "jobs: 2 bad jobs:" in err and "jobs[0].age_s: must be >= 0" in err
    assert "jobs[3].colour: unknown field" in err


def test_a_job_that_can_never_run_and_pinned_jobs_are_warned_of(tmp_path, capsys, caplog):
    sc = json.loads(json.dumps(SMALL))
    sc["jobs"][1]["min_gpus"] = 100
    sc["jobs"] = [{k: v for k, v in j.items() if k != "age_s"} for j in sc["jobs"]]  # every age at its default 0
    sc["jobs"] = [{k: v for k, v in j.items() if k != "allocation"} for j in sc["jobs"]]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(sc))
    with caplog.at_level(logging.WARNING, logger="goodopt"):
        assert main(["info", str(tmp_path / "s.yaml")]) == 0
    text = caplog.text
    assert "jobs[1].min_gpus: 100 is more than the 8 GPUs of any one type it can use" in text
    assert "every job is pinned at speedup 0, so the empty allocation is optimal" in text
    assert "jobs[0].age_s" in text


@pytest.mark.parametrize("kind, argv", [
    ("scenario", ["info", "{f}"]),
    ("allocation", ["evaluate", "small-2node", "--allocation", "{f}"]),
    ("spec", ["sweep", "{f}", "--dry-run"]),
])
def test_a_byte_that_is_not_utf8_is_named_by_line_and_column(kind, argv, tmp_path, capsys):
    f = tmp_path / "f.yaml"
    f.write_bytes(b"name: x\nkind: \xe9t\xe9\n")
    assert "f.yaml:2:7: byte 0xe9 is not UTF-8 text (save the file as UTF-8)" in _run(
        [a.replace("{f}", str(f)) for a in argv], capsys)


def test_yaml_syntax_errors_name_line_and_column(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text("name: x\njobs: [\n")
    assert "s.yaml:3:1: not valid YAML" in _run(["info", str(f)], capsys)


# ------------------------------------------------------------------ sweep specs
GOOD_SOLVE = {"kind": "solve", "scenarios": ["small-2node"], "methods": ["greedy"]}
GOOD_SIM = {"kind": "simulate", "generated": {"loads": [0.5], "hours": 1}, "policies": ["fifo"],
            "cluster": "pollux-testbed"}  # 64 GPUs: FIFO runs every job of the drawn workload


@pytest.mark.parametrize("spec, expected", [
    ({**GOOD_SOLVE, "methods": [{"method": "ga", "optoins": {"n_gen": 2}}]},
     "spec.methods[0].optoins: unknown field (did you mean 'options'?"),
    ({**GOOD_SOLVE, "methods": [{"method": "greedy", "lable": "x"}]}, "spec.methods[0].lable: unknown field"),
    ({**GOOD_SIM, "generated": {"loads": [1], "hours": "-inf"}}, "spec.generated.hours: must be a number"),
    ({**GOOD_SIM, "generated": {"loads": [1], "hours": "abc"}}, "spec.generated.hours: must be a number"),
    ({**GOOD_SIM, "generated": {"loads": [1], "hours": {}}}, "spec.generated.hours: must be a number, got {}"),
    ({**GOOD_SIM, "generated": {"loads": [1], "hoursx": 2}}, "spec.generated.hoursx: unknown field"),
    ({**GOOD_SOLVE, "scenarios": ["missing.yaml"]}, "missing.yaml: scenario file not found"),
    ({**GOOD_SOLVE, "scenarios": ["family:tinny:0"]}, "unknown family 'tinny' (did you mean 'tiny'?"),
    ({**GOOD_SOLVE, "methods": ["ga"], "options": {"ga": {"pop_sise": 8}}},
     "options.pop_sise: not an option of method 'ga' (did you mean 'pop_size'?"),
    ({**GOOD_SOLVE, "options": {"gredy": {}}}, "spec.options.gredy: unknown field (did you mean 'greedy'?"),
    ({**GOOD_SIM, "truth": "modle"}, "spec.truth: 'modle' is neither model, traces nor a traces folder "
                                     "(did you mean 'model'?"),
    ({**GOOD_SIM, "workloads": ["nowhere.csv"]}, "nowhere.csv: workload file not found"),
    ({**GOOD_SOLVE, "seeds": 100_000_000}, "spec.seeds: a count of seeds must lie in [1, 10000]"),
    ({**GOOD_SOLVE, "kidn": 1}, "spec.kidn: unknown field (did you mean 'kind'?"),
])
def test_bad_sweep_specs_are_refused_whole_before_any_task(spec, expected, tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(spec))
    assert expected in _run(["sweep", str(f), "--out", str(tmp_path / "t.csv")], capsys)
    assert not list(tmp_path.glob("t*"))


def test_a_dry_run_lists_the_tasks_of_a_good_spec(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({**GOOD_SIM, "seeds": 2}))
    assert main(["sweep", str(f), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 task(s); every input checked" in out and "generated-0.5-0-1 / fifo seed 1" in out


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize("argv, expected", [
    (["evaluate", "small-2node", "--allocation", "."], ".: is a folder, where the allocation file was expected"),
    (["solve", "small-2node", "--option", "time_limit_s=99999999999999999999"],
     "options.time_limit_s: must be a number of seconds in (0, 1e+06]"),
    (["solve", "small-2node", "--method", "greedy", "--option", "strat=current"],
     "options.strat: not an option of method 'greedy' (did you mean 'start'?"),
    (["compare", "small-2node", "--methods", ","], "argument --methods: no names in ','"),
    (["info", "family:tiny:\u00b2"], "family scenarios are written family:NAME:SEED"),
    (["info", "small-2nod"], "small-2nod: scenario file not found (did you mean 'small-2node'?"),
    (["sweep", "s.yaml", "--dask", "not-a-url"], "argument --dask: 'not-a-url' is not a scheduler address"),
    (["simulate", "generated:1:0", "--interval", "1e-9"], "interval_s: 1e-09 s rounds over max_time_s"),
    (["simulate", "generated:1:0", "--nodes", "100000000"], "argument --nodes: must lie in [1, 4096]"),
    (["simulate", "generated:1:0", "--seeds", "100000000"], "argument --seeds: must lie in [1, 10000]"),
    (["simulate", "generated:1:0", "--policy", "fifo,tiresais"], "did you mean 'tiresias'?"),
    (["solve", "small-2node", "--method", "gredy"], "argument --method: unknown name 'gredy' (did you mean"),
    (["simulate", "generated:1000:0:8760"], "load 1000 over 8760 hours gives 175200000 jobs"),
])
def test_bad_arguments_are_one_line_each(argv, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert expected in _run(argv + (["--dry-run"] if argv[0] == "simulate" else []), capsys)


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_an_unreachable_dask_scheduler_is_one_line(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(GOOD_SOLVE))
    err = _run(["sweep", str(f), "--out", str(tmp_path / "t.csv"), "--dask", "tcp://127.0.0.1:1", "--no-cache"],
               capsys)
    assert "--dask: no Dask scheduler answered at tcp://127.0.0.1:1" in err


# ------------------------------------------------------------------ the seeded fuzz
def test_a_seeded_fuzz_of_every_input_kind_finds_no_traceback():
    """A short fuzz in the quick tier (the slow tier runs a long one): 10 cases of each input kind (options of every method, policy and
    auto-scaler, sweep names, damaged published files, misbehaving plug-ins, planted journals and spec-level
    method options among them)."""
    rep = fuzz(10 * len(CASES), seed=1)
    assert rep.cases == 10 * len(CASES) and set(rep.kinds.values()) == {10}
    assert rep.tracebacks == [] and rep.hangs == []
    assert rep.outcomes["exit 2"] > 0 and rep.outcomes["exit 0"] > 0  # both bad and good inputs were drawn


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (6 * 2 ** 30, 6 * 2 ** 30))


@pytest.mark.slow
def test_a_long_seeded_fuzz_finds_no_traceback_no_hang_in_bounded_memory(tmp_path):
    """1,350 cases (150 of each kind) in a process limited to 6 GiB of address space, 60 s per case."""
    p = subprocess.run([sys.executable, "-m", "tests.fuzz_inputs", "--cases", "1350", "--seed", "2024",
                        "--timeout", "60"], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True,
                       timeout=3600, preexec_fn=_limit_memory)
    rep = json.loads(p.stdout)
    print(json.dumps({k: rep[k] for k in ("cases", "kinds", "outcomes")}))
    assert rep["tracebacks"] == [] and rep["hangs"] == [], rep["tracebacks"][:3] + rep["hangs"][:3]
    assert rep["cases"] == 1350 and p.returncode == 0
