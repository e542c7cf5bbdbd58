"""The runs layer: a cache keyed on every input, errors that survive workers, outputs that are never
mixed, interrupts that keep finished work (the package's structure: tests/test_architecture.py)."""

import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import goodopt
import goodopt.errors as errors
from goodopt.cli import main
from goodopt.errors import GoodoptError, Interrupted, TaskError, ValidationError
from goodopt.outputs import atomic_dir, check_output, meta_path, table_matches_meta
from goodopt.runs import compare, run_sweep
from goodopt.runs.cache import TaskCache, shipped_digest, task_key
from goodopt.runs.execute import map_tasks
from goodopt.runs.tables import write_table
from goodopt.runs.tasks import solve_task
from goodopt.scenario import save_scenario
from goodopt.sources import load_scenario

ROOT = Path(__file__).resolve().parents[1]
GREEDY = {"name": "g", "kind": "solve", "families": {"names": ["tiny"], "seeds": [0, 1, 2]}, "methods": ["greedy"]}


def _at_a_terminal():
    """Ctrl-C as at a terminal: a shell without job control starts background jobs with SIGINT ignored, and a
    child would inherit that and never see the signal these tests send."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cli(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "goodopt.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=kw.get("cwd"), preexec_fn=_at_a_terminal)


def test_documented_import_paths_keep_working():
    from goodopt.runs import compare as c1
    from goodopt.runs import run_sweep as r1
    from goodopt.runs.tables import summary  # noqa: F401
    from goodopt.scenario import Objective  # noqa: F401

    assert c1 is compare and r1 is run_sweep and goodopt.load_scenario is load_scenario


# ------------------------------------------------------------------ errors across processes
def _all_error_classes():
    out, todo = [], [GoodoptError]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


@pytest.mark.parametrize("exc", [
    errors.ValidationError("jobs[3].max_gpus", "must be >= 1", "e.g. 2"), errors.ValidationError("", "bad"),
    errors.ScenarioError("cluster", "missing"), errors.ShapeError("(3, 4) expected"),
    errors.TraceError("no traces"), errors.FitError("no fit"), errors.SolverError("broke"),
    errors.SimulationError("round 3"), errors.TaskError([("a / milp", "oops"), ("b", "x")], 9),
    errors.Interrupted(3, 9, True), errors.GoodoptError("plain")])
def test_every_error_round_trips_through_pickle(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc) and back.__dict__ == exc.__dict__


def test_the_pickle_cases_cover_every_error_class():
    import goodopt.cli  # noqa: F401  (imports every module that might define an error)

    names = {c.__name__ for c in _all_error_classes()}
    assert names <= {"GoodoptError", "ValidationError", "ScenarioError", "ShapeError", "TraceError", "FitError",
                     "SolverError", "SimulationError", "TaskError", "Interrupted"}, names


def _fail_on_odd(x):
    if x % 2:
        raise ValidationError(f"item[{x}]", "is odd", "use even numbers")
    return x * 10


@pytest.mark.parametrize("workers", [1, 2])
def test_a_task_error_names_the_task_and_keeps_the_others(workers):
    kept = {}
    with pytest.raises(TaskError) as exc:
        map_tasks(_fail_on_odd, [0, 1, 2, 3, 4], workers=workers, progress=False,
                  describe=lambda x: f"#{x}", on_result=lambda i, v: kept.__setitem__(i, v))
    assert kept == {0: 0, 2: 20, 4: 40}
    assert str(exc.value) == "task #1: item[1]: is odd (use even numbers) (and 1 more failed task(s))"
    assert exc.value.failures[1] == ("#3", "item[3]: is odd (use even numbers)")


def _pid(x):
    import time

    time.sleep(0.05)  # long enough that both workers take some
    return os.getpid()


def test_kept_workers_serve_every_call_in_their_block_and_fresh_ones_start_outside_it():
    from goodopt.runs.execute import kept_workers

    with kept_workers(2):
        first = set(map_tasks(_pid, range(6), workers=2, progress=False))
        with pytest.raises(TaskError):  # a failed task does not end the kept workers
            map_tasks(_fail_on_odd, [0, 1], workers=2, progress=False)
        second = set(map_tasks(_pid, range(6), workers=2, progress=False))
        inline = set(map_tasks(_pid, range(3), workers=1, progress=False))  # one worker asked: this process
    assert len(first | second) <= 2 and os.getpid() not in first | second
    assert second <= first or first <= second
    assert inline == {os.getpid()}
    after = set(map_tasks(_pid, range(6), workers=2, progress=False))
    assert not after & (first | second)


def test_cli_sweep_with_a_missing_scenario_is_one_line_before_any_task(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({**GREEDY, "scenarios": ["family:tiny:0", "nowhere.yaml"]}))
    p = _cli("sweep", str(spec), "--out", str(tmp_path / "s.csv"), "--workers", "2", "--quiet")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2, err
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert "goodopt: error: nowhere.yaml: scenario file not found" in err
    assert not list(tmp_path.glob("s-cache/*.json"))  # the spec is checked whole before any task runs


def test_a_typo_in_a_policy_is_reported_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "generated:0.1:0", "--policy", "polux,tiresias", "--workers", "2",
              "--out", str(tmp_path / "o"), "--quiet"])
    assert exc.value.code == 2
    assert "--policy: unknown name 'polux' (did you mean 'pollux'?" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ the cache
def _scenario_with_own_profile(tmp_path):
    prof = goodopt.shipped_profile("cifar10")
    prof.save(tmp_path / "myapp.yaml")
    sc = load_scenario("small-2node")
    save_scenario(sc, tmp_path / "sc.yaml", profile_paths={"cifar10": "myapp.yaml"})
    return tmp_path / "sc.yaml", tmp_path / "myapp.yaml"


def test_editing_a_referenced_profile_recomputes(tmp_path):
    sc, prof = _scenario_with_own_profile(tmp_path)
    spec = {"name": "p", "kind": "solve", "scenarios": [str(sc)], "methods": ["greedy"]}
    first = run_sweep(spec, cache_dir=tmp_path / "c", progress=False)
    assert run_sweep(spec, cache_dir=tmp_path / "c", progress=False).n_cached == 1
    data = yaml.safe_load(prof.read_text())
    data["init_batch_size"] = int(data["init_batch_size"]) * 2  # a different profile
    prof.write_text(yaml.safe_dump(data))
    again = run_sweep(spec, cache_dir=tmp_path / "c", progress=False)
    assert again.n_computed == 1 and again.table.fitness[0] != first.table.fitness[0]


def test_the_key_covers_the_shipped_data_and_fills_in_defaults(tmp_path, monkeypatch):
    t = solve_task("family:tiny:0", "milp", {})
    assert task_key(t) == task_key(solve_task("family:tiny:0", "milp", {"time_limit_s": None}))
    assert task_key(t) != task_key(solve_task("family:tiny:0", "milp", {"mip_rel_gap": 1e-3}))
    import goodopt.sources as sources

    fake = tmp_path / "a.yaml"
    fake.write_text("x: 1\n")
    monkeypatch.setattr(sources, "shipped_data_files", lambda: [fake])
    before_data, before_key = shipped_digest(), task_key(t)
    fake.write_text("x: 2\n")
    os.utime(fake, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert shipped_digest() != before_data and task_key(t) != before_key


def _entry_file(cache, spec):
    from goodopt.runs.spec import spec_from_dict
    from goodopt.runs.tasks import expand

    task = expand(spec_from_dict(spec))[0]
    return task, cache / f"{task_key(task)}.json"


@pytest.mark.parametrize("content", [b"[1, 2]", b"\xff\xfe not utf-8", b'{"result": {"jobs": []}}',
                                     b'{"task": 1, "result": {"row": {}, "jobs": [1]}}', b"{trunc"])
def test_corrupt_entries_are_logged_and_recomputed(tmp_path, content, caplog):
    spec = {**GREEDY, "families": {"names": ["tiny"], "seeds": [0]}}
    good = run_sweep(spec, progress=False).table
    _, f = _entry_file(tmp_path, spec)
    f.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="goodopt.runs.cache"):
        res = run_sweep(spec, cache_dir=tmp_path, progress=False)
    assert res.n_computed == 1 and res.table.fitness[0] == good.fitness[0]
    assert any(str(f) in r.getMessage() for r in caplog.records)
    assert json.loads(f.read_text())["result"]["row"]["fitness"] == good.fitness[0]  # repaired


def test_an_entry_recording_another_task_is_not_used(tmp_path):
    spec = {**GREEDY, "families": {"names": ["tiny"], "seeds": [0]}}
    run_sweep(spec, cache_dir=tmp_path, progress=False)
    task, f = _entry_file(tmp_path, spec)
    entry = json.loads(f.read_text())
    entry["task"]["method"] = "milp"  # hand-edited
    entry["result"]["row"]["fitness"] = 999.0
    f.write_text(json.dumps(entry))
    res = run_sweep(spec, cache_dir=tmp_path, progress=False)
    assert res.n_computed == 1 and res.table.fitness[0] != 999.0
    assert TaskCache(tmp_path).get(task, task_key(task))["row"]["fitness"] != 999.0


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_concurrent_sweeps_share_one_cache(tmp_path):
    spec = tmp_path / "g.yaml"
    spec.write_text(yaml.safe_dump({**GREEDY, "families": {"names": ["tiny"], "seeds": list(range(12))},
                                    "methods": ["greedy", "equal-share"]}))
    for attempt in range(3):
        cache = tmp_path / f"cache{attempt}"
        procs = [_cli("sweep", str(spec), "--out", str(tmp_path / f"r{attempt}-{i}.csv"), "--cache", str(cache),
                      "--workers", "1", "--quiet") for i in range(3)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
        tables = [pd.read_csv(tmp_path / f"r{attempt}-{i}.csv").drop(columns=["seconds", "build_s", "solve_s", "cpu_s"])
                  for i in range(3)]
        for t in tables[1:]:
            pd.testing.assert_frame_equal(t, tables[0])
        assert len(list(cache.glob("*.json"))) == 24 and not list(cache.glob(".*"))


# ------------------------------------------------------------------ outputs
def test_out_is_checked_before_any_work(tmp_path, capsys, monkeypatch):
    import importlib

    rc = importlib.import_module("goodopt.runs.sweep")  # compare runs its solves through the sweep runner
    monkeypatch.setattr(rc, "map_tasks", lambda *a, **k: pytest.fail("work started"))
    (tmp_path / "adir").mkdir()
    assert main(["compare", "family:tiny:0", "--methods", "greedy", "--out", str(tmp_path / "adir")]) == 2
    assert "--out" in capsys.readouterr().err
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(GREEDY))
    assert main(["sweep", str(spec), "--out", str(spec)]) == 2
    assert "--out" in (err := capsys.readouterr().err) and "input" in err
    (tmp_path / "afile").write_text("x")
    assert main(["simulate", "generated:0.1:0", "--out", str(tmp_path / "afile")]) == 2
    assert "is a file" in capsys.readouterr().err
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    assert main(["simulate", "generated:0.1:0", "--out", str(foreign)]) == 2
    assert "not written by goodopt" in capsys.readouterr().err and (foreign / "thesis.tex").is_file()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_a_read_only_location_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ValidationError, match="not writable"):
            check_output(ro / "x.csv")
    finally:
        ro.chmod(0o700)


def test_metadata_never_takes_the_name_of_the_table_or_the_spec(tmp_path):
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(GREEDY))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "s.csv"), "--workers", "1", "--quiet"]) == 0
    assert json.loads(spec.read_text()) == GREEDY
    assert meta_path(tmp_path / "s.csv") == tmp_path / "s.meta.json"
    assert table_matches_meta(tmp_path / "s.csv") and table_matches_meta(tmp_path / "s-jobs.csv")
    write_table(pd.DataFrame({"a": [1]}), tmp_path / "s.csv")
    (tmp_path / "s.csv").write_text("a\n2\n")  # a table that is not the one its metadata describes
    assert not table_matches_meta(tmp_path / "s.csv")


def test_a_failed_folder_write_leaves_the_old_folder(tmp_path):
    out = tmp_path / "o"
    with atomic_dir(out) as d:
        (d / "a.csv").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(out) as d:
        (d / "a.csv").write_text("new")
        raise RuntimeError("killed half-way")
    assert (out / "a.csv").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]  # no staging folder left


def _consistent(folder: Path) -> str:
    """Which run a simulation folder holds ('A' or 'B'); fails on a mix or a half-written folder."""
    summary = json.loads((folder / "summary.json").read_text())
    jobs = pd.read_csv(folder / "jobs.csv")
    assert abs(jobs.jct_s.mean() - summary["avg_jct"]) < 1e-6 * summary["avg_jct"]
    assert len(pd.read_csv(folder / "allocations.csv")) > 0 and len(pd.read_csv(folder / "rounds.csv")) > 0
    return "A" if summary["metadata"]["workload"] == "generated-0.2-1" else "B"


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_killing_simulate_leaves_the_old_or_the_new_folder(tmp_path):
    out = tmp_path / "sim"
    assert main(["simulate", "generated:0.2:1", "--policy", "greedy", "--truth", "model", "--nodes", "4",
                 "--out", str(out), "--quiet"]) == 0
    assert _consistent(out) == "A"
    seen = set()
    for delay in (0.5, 1.5, 2.5, 4.0, 6.0):
        p = _cli("simulate", "generated:0.3:2", "--policy", "greedy", "--truth", "model", "--nodes", "4",
                 "--out", str(out), "--quiet")
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        seen.add(_consistent(out))
    assert seen <= {"A", "B"}


# ------------------------------------------------------------------ interrupts and workers
def _children(pid):
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _wait_for_entries(cache: Path, n: int, p):
    """Wait (however long a loaded machine takes) until the sweep ``p`` has cached ``n`` results."""
    while len(list(cache.glob("*.json"))) < n:
        assert p.poll() is None, "the sweep ended before caching results"
        time.sleep(0.1)


SLOW = {"name": "slow", "kind": "simulate", "generated": {"loads": [0.4], "seeds": list(range(8)), "hours": 1},
        "policies": ["greedy"], "cluster": "small-2node"}


def _slow_sweep(tmp_path):
    """Start (or resume) an eight-simulation sweep on two workers: (process, cache folder)."""
    spec = tmp_path / "slow.yaml"
    spec.write_text(yaml.safe_dump(SLOW))
    cache = tmp_path / "cache"
    return _cli("sweep", str(spec), "--out", str(tmp_path / "r.csv"), "--cache", str(cache), "--workers", "2",
                "--quiet"), cache


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_ctrl_c_keeps_finished_tasks_and_exits_130_in_one_line(tmp_path):
    p, cache = _slow_sweep(tmp_path)
    _wait_for_entries(cache, 2, p)
    workers = _children(p.pid)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=600)  # a guard against a hang, not a speed limit
    assert p.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    done = len(list(cache.glob("*.json")))
    assert err.strip().splitlines()[-1] == f"goodopt: interrupted: {done} of 8 tasks done and cached; run again to resume"
    assert not (tmp_path / "r.csv").exists()
    time.sleep(1)
    assert not any(w.is_running() and w.status() != "zombie" for w in workers)
    p, _ = _slow_sweep(tmp_path)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0 and f"{8 - done} task(s) computed, {done} from the cache" in out


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_workers_do_not_outlive_a_killed_parent(tmp_path):
    p, cache = _slow_sweep(tmp_path)
    _wait_for_entries(cache, 1, p)
    workers = [w for w in _children(p.pid) if "python" in w.name().lower()]
    assert workers
    p.send_signal(signal.SIGKILL)
    p.communicate()
    t0 = time.time()
    while any(w.is_running() and w.status() != "zombie" for w in workers):
        assert time.time() - t0 < 10, "pool workers outlived their parent"
        time.sleep(0.2)


# ------------------------------------------------------------------ tables
def test_compare_without_a_bound_reports_nan_and_warms_up(monkeypatch):
    import goodopt.runs.tasks as tasks

    warmed = []
    real = tasks.warm_up
    monkeypatch.setattr(tasks, "warm_up", lambda m: warmed.append(m) or real(m))
    t = compare(["family:tiny:0"], ["greedy", "ga"], progress=False)
    assert t.best_bound.isna().all() and t.gap_to_bound.isna().all()
    t = compare(["family:tiny:0"], ["milp", "greedy"], progress=False)
    # certified: within the gap the solver may stop at
    assert t.gap_to_bound.notna().all() and 0.0 <= t.set_index("method").loc["milp", "gap_to_bound"] <= 1e-6
    assert warmed.count("milp") == 1 and "ga" in warmed


def test_interrupted_map_says_how_much_is_done():
    def stop_at_two(x):
        if x == 2:
            raise KeyboardInterrupt
        return x

    with pytest.raises(Interrupted) as exc:
        map_tasks(stop_at_two, [0, 1, 2, 3], progress=False, n_before=5, cached=True)
    assert (exc.value.n_done, exc.value.n_tasks) == (7, 9)


def test_a_folder_goodopt_did_not_write_is_never_replaced(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    with pytest.raises(ValidationError, match="not written by goodopt"), atomic_dir(mine):
        pass
    assert (mine / "notes.txt").read_text() == "keep"


def test_the_default_traces_folder_does_not_depend_on_the_current_directory(monkeypatch, tmp_path):
    from goodopt.traces import DEFAULT_TRACES, traces_dir

    monkeypatch.delenv("GOODOPT_TRACES", raising=False)
    monkeypatch.chdir(tmp_path)
    assert DEFAULT_TRACES.is_absolute() and DEFAULT_TRACES == ROOT.parent / "shared" / "traces"
    assert traces_dir(must_exist=False) == DEFAULT_TRACES


@pytest.mark.parametrize("argv, message", [
    (["compare", "family:tiny:0", "--methods", ","], "--methods: no names in ','"),
    (["compare", "family:tiny:0", "--methods", "gredy"], "did you mean 'greedy'?"),
    (["simulate", "generated:0.1:0", "--policy", "polux"], "did you mean 'pollux'?"),
])
def test_name_lists_are_checked_with_a_suggestion(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:  # at parse time, before any file is read
        main([*argv, "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


# ------------------------------------------------------------------ progress while tasks run
@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_running_simulations_report_their_progress(workers, caplog, monkeypatch):
    """Without a terminal, a plain line says how far each running simulation is (here one every report), named
    as the task is listed: two runs of one workload that differ only in their seed are told apart."""
    import goodopt.runs.watch as watch
    from goodopt.runs.tasks import run_task, sim_task

    monkeypatch.setattr(watch, "PLAIN_EVERY_S", 0.0)
    tasks = [sim_task("generated:0.3:0:0.5", "greedy", "small-2node", seed=s) for s in range(2)]
    with caplog.at_level(logging.INFO, logger="goodopt.progress"):
        map_tasks(run_task, tasks, workers=workers, progress=True, label="simulations")
    lines = [r.getMessage() for r in caplog.records if r.name == "goodopt.progress"]
    running = [m for m in lines if "h simulated" in m]
    assert running and all("simulations:" in m and "jobs" in m for m in running), lines[:5]
    assert {t.describe() for t in tasks} <= {part.split(": ")[0].removeprefix("running ")
                                            for m in running for part in m.split("; ")[1:]}
    assert any(m.startswith("simulations: 2 of 2 done") for m in lines)
