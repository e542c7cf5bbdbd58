"""Sweeps: spec validation, the tidy tables, the input-hash cache (resume) and Dask vs the local pool."""

import json
from dataclasses import replace

import pandas as pd
import pytest
import yaml

import goodopt.runs.sweep as sweep
from goodopt.cli import main
from goodopt.errors import Interrupted, ValidationError
from goodopt.runs.cache import task_key
from goodopt.runs.spec import spec_from_dict
from goodopt.runs.sweep import run_sweep
from goodopt.runs.tasks import TIMING_COLUMNS, expand

SOLVE = {"name": "solve", "kind": "solve", "families": {"names": ["tiny"], "seeds": [0, 1]},
         "methods": ["milp", "greedy", {"label": "ga-small", "method": "ga", "options": {"pop_size": 16, "n_gen": 8}}],
         "seeds": 2, "p": [1, "-inf"]}
PARETO = {"name": "fronts", "kind": "pareto", "scenarios": ["family:hetero-tiny:1", "family:hetero-16:0"],
          "objectives": ["efficiency,fairness"], "seeds": 2,
          "methods": ["exact", {"label": "nsga2-small", "method": "nsga2", "options": {"pop_size": 16, "n_gen": 6}}]}
SIM = {"name": "sim", "kind": "simulate", "generated": {"loads": [0.5], "seeds": [0], "hours": 0.5},
       "policies": ["greedy", "tiresias"], "vary": {"interval_s": [60, 120]}}


def _untimed(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=[c for c in TIMING_COLUMNS if c in df.columns]).reset_index(drop=True)


@pytest.mark.parametrize("bad, field", [
    ({**SOLVE, "colour": 1}, "spec.colour"),
    ({**SOLVE, "kind": "race"}, "spec.kind"),
    ({**SOLVE, "methods": ["simplex"]}, "spec.methods"),
    ({**SOLVE, "seeds": [-1]}, "spec.seeds"),
    ({**SOLVE, "time_limit_s": 0}, "spec.time_limit_s"),
    ({**SOLVE, "methods": ["milp", {"label": "milp", "method": "greedy"}]}, "spec.methods"),
    ({**SIM, "vary": {"speed": [1]}}, "spec.vary.speed"),
    ({**SIM, "vary": {"interval_s": [-5]}}, "spec.vary.interval_s[0]"),
    ({**SIM, "policies": ["lottery"]}, "spec.policies"),
    ({**PARETO, "methods": [{"method": "exact", "options": {"n_gen": 5}}]}, "spec.methods.exact.options"),
    ({**PARETO, "methods": ["nsga4"]}, "spec.methods"),
    ({**PARETO, "scenarios": ["family:five-types-512:0"], "objectives": ["efficiency,cost"]}, "spec.objectives[0]"),
    ({**PARETO, "objectives": ["efficiency,speed"]}, "spec.objectives[0]"),
])
def test_bad_specs_name_the_field(bad, field):
    with pytest.raises(ValidationError) as exc:
        spec_from_dict(bad)
    assert exc.value.field.startswith(field)
    assert isinstance(exc.value, ValueError)


def test_expand_is_the_full_grid_and_keys_ignore_labels():
    tasks = expand(spec_from_dict(SOLVE))
    # 2 scenarios x 2 p x (milp + greedy + 2 GA seeds)
    assert len(tasks) == 2 * 2 * 4
    assert len({task_key(t) for t in tasks}) == len(tasks)
    renamed = replace(tasks[0], label="another name")
    assert task_key(renamed) == task_key(tasks[0])
    assert task_key(replace(tasks[0], options={**tasks[0].options, "time_limit_s": 3})) != task_key(tasks[0])
    sim = expand(spec_from_dict(SIM))
    assert len(sim) == 1 * 2 * 2 and {t.config["interval_s"] for t in sim} == {60, 120}


def test_solve_sweep_table():
    res = run_sweep(SOLVE, progress=False)
    t = res.table
    assert len(t) == 16 and res.n_computed == 16
    assert {"scenario", "p", "label", "method", "seed", "fitness", "bound", "gap_to_bound",
            "relative_fitness", "status"} <= set(t.columns)
    milp = t[t.label == "milp"]
    # certified: the bound (loosened by the gap the solver may stop at) is within 1e-6 of the fitness
    assert (milp.status == "optimal").all() and (milp.gap_to_bound.between(0.0, 1e-6)).all()
    # nothing beats the certified optimum of its (scenario, p)
    assert (t.fitness <= t.best_bound * (1 + 1e-9)).all()
    assert set(t[t.method == "ga"].seed) == {0, 1}
    # the per-job table: allocations use at most the cluster's GPUs, one row per job and solve
    j = res.jobs
    used = j.groupby(["scenario", "p", "label", "seed"], dropna=False).n_gpus.sum()
    assert (used <= 8).all() and len(j) == 16 * 4


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    real = sweep.run_task
    calls = []

    def flaky(task):
        if len(calls) == 5:
            raise KeyboardInterrupt  # the user stops the sweep after five tasks
        calls.append(task_key(task))
        return real(task)

    monkeypatch.setattr(sweep, "run_task", flaky)
    with pytest.raises(Interrupted, match="interrupted: 5 of 16 tasks done and cached; run again to resume"):
        run_sweep(SOLVE, cache_dir=cache, progress=False)
    assert len(list(cache.glob("*.json"))) == 5
    monkeypatch.setattr(sweep, "run_task", lambda task: calls.append(task_key(task)) or real(task))
    done_before = list(calls)
    res = run_sweep(SOLVE, cache_dir=cache, progress=False)
    assert res.n_cached == 5 and res.n_computed == 11
    recomputed = calls[len(done_before):]
    assert not set(recomputed) & set(done_before)  # nothing finished before the interruption ran again
    again = run_sweep(SOLVE, cache_dir=cache, progress=False)
    assert again.n_computed == 0
    pd.testing.assert_frame_equal(again.table, res.table)
    fresh = run_sweep(SOLVE, progress=False)
    pd.testing.assert_frame_equal(_untimed(res.table), _untimed(fresh.table))


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_dask_local_cluster_gives_the_local_pool_table():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        on_dask = [run_sweep(s, dask=lc.scheduler_address, progress=False) for s in (SOLVE, SIM)]
    on_pool = [run_sweep(s, workers=2, progress=False) for s in (SOLVE, SIM)]
    for d, p in zip(on_dask, on_pool):
        pd.testing.assert_frame_equal(_untimed(d.table), _untimed(p.table))
        pd.testing.assert_frame_equal(_untimed(d.jobs), _untimed(p.jobs))
    sim = on_pool[1].table
    assert len(sim) == 4 and (sim.n_jobs == 5).all() and sim.avg_jct.gt(0).all()


def test_cli_sweep_writes_tables_and_resumes(tmp_path, capsys):
    spec = tmp_path / "grid.yaml"
    spec.write_text(yaml.safe_dump({**SIM, "name": "grid"}))
    out = tmp_path / "res" / "grid.csv"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert "4 task(s) computed, 0 from the cache" in capsys.readouterr().out
    table = pd.read_csv(out)
    jobs = pd.read_csv(out.with_name("grid-jobs.csv"))
    meta = json.loads(out.with_name("grid.meta.json").read_text())
    assert len(table) == 4 and meta["n_rows"] == 4 and meta["sweep"]["kind"] == "simulate"
    assert {"job", "jct_s", "label", "interval_s"} <= set(jobs.columns) and len(jobs) == 20
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert "0 task(s) computed, 4 from the cache" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: solve\nmethods: [milp]\n")
    assert main(["sweep", str(bad), "--quiet"]) == 2
    assert "spec.scenarios" in capsys.readouterr().err


def test_node_limit_is_a_deterministic_budget_of_exact_methods():
    spec = spec_from_dict({"kind": "solve", "scenarios": ["family:tiny:0"], "node_limit": 7,
                           "methods": ["milp", "milp-pwl", "greedy", {"label": "ga", "method": "ga"}]})
    opts = {t.label: t.options for t in expand(spec)}
    assert opts["milp"]["node_limit"] == 7 and opts["milp-pwl"]["node_limit"] == 7
    assert "node_limit" not in opts["greedy"] and opts["ga"]["n_gen"] > 0 and "node_limit" not in opts["ga"]
    with pytest.raises(ValidationError, match="spec.node_limit"):
        spec_from_dict({"kind": "solve", "scenarios": ["family:tiny:0"], "methods": ["milp"], "node_limit": 0})


# ------------------------------------------------------------------ Dask: an address that never answers, no workers
@pytest.mark.slow  # waits out the connection deadline
def test_a_dask_address_that_accepts_and_never_answers_is_refused_in_time():
    import socket
    import threading
    import time

    from goodopt.errors import ValidationError
    from goodopt.runs.execute import DASK_CONNECT_S, open_executor

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held = []
    threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()  # accepts, says nothing
    t0 = time.monotonic()
    with pytest.raises(ValidationError, match="never answered as a Dask scheduler does"):
        with open_executor(dask=f"tcp://127.0.0.1:{server.getsockname()[1]}"):
            pass
    assert time.monotonic() - t0 < DASK_CONNECT_S + 10
    server.close()


def test_a_dask_cluster_without_workers_is_said_to_be_so(caplog, monkeypatch):
    from goodopt.runs import execute

    class Cluster:
        workers: dict = {}

        def nthreads(self):
            return self.workers

    monkeypatch.setattr(execute, "NO_WORKER_WARN_S", 0.0)
    idle, client = execute._NoWorkers(), Cluster()
    idle.check(client, 3)
    assert "no Dask worker for 0 s; 3 task(s) wait for one" in caplog.text
    client.workers = {"tcp://w": 1}
    idle.check(client, 3)
    assert idle.since is None and idle.said == 0  # a worker is back: the clock starts again


@pytest.mark.slow  # a real cluster, started with no worker and given one after the warning
def test_a_sweep_on_a_dask_cluster_whose_workers_are_gone_waits_and_says_so(caplog, monkeypatch):
    import threading
    import time

    distributed = pytest.importorskip("distributed")
    from goodopt.runs import execute

    monkeypatch.setattr(execute, "NO_WORKER_WARN_S", 2.0)
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        def rescue():
            deadline = time.monotonic() + 60
            while "no Dask worker" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.2)
            lc.scale(1)

        threading.Thread(target=rescue, daemon=True).start()
        res = run_sweep(SOLVE, dask=lc.scheduler_address, progress=False)
    assert "no Dask worker for" in caplog.text and len(res.table) > 0


def test_a_pareto_sweep_is_the_studys_fronts_judged_alike_and_cached(tmp_path):
    """Each front of a pareto sweep is the front the study computes (same points); each heuristic row carries the
    indicators of its front against the exact one, and each heuristic has its three attainment surfaces; a
    second run reads every front from the cache and gives the same table."""
    from goodopt.families import FAMILIES
    from goodopt.pareto.heuristic import HeuristicFrontOptions
    from goodopt.pareto.study import pareto_study

    first = run_sweep(PARETO, cache_dir=tmp_path / "c", progress=False)
    table = first.table
    assert first.n_computed == 6 and first.n_cached == 0
    pr = FAMILIES["hetero-16"].scenario(0).problem()
    study = pareto_study(pr, "efficiency,fairness", ("exact", "nsga2"), seeds=(0, 1),
                         heuristic=HeuristicFrontOptions(pop_size=16, n_gen=6))
    mine = table[table["scenario"] == "family:hetero-16:0"]
    for f, r in zip(study.indicator_rows, mine[(mine["method"] == "nsga2") & (mine["surface"] == "")].itertuples()):
        assert r.seed == f["seed"] and r.points == f["points"]
        assert (r.hv_ratio, r.igd_plus, r.eps_additive, r.attained) == pytest.approx(
            (f["hv_ratio"], f["igd_plus"], f["eps_additive"], f["attained"]), rel=1e-12)
    surfaces = {r["level"]: r for r in study.attainment_rows}
    for r in mine[mine["surface"] != ""].itertuples():
        assert r.points == surfaces[r.surface]["points"]
        assert r.hv_ratio == pytest.approx(surfaces[r.surface]["hv_ratio"], rel=1e-12)
    exact_rows = mine[mine["method"] == "exact"].iloc[0]
    assert exact_rows["points"] == exact_rows["certified"] == len(study.fronts[0].points)
    points = first.jobs[(first.jobs["scenario"] == "family:hetero-16:0") & (first.jobs["method"] == "exact")]
    assert sorted(points["efficiency"]) == pytest.approx(sorted(study.fronts[0].values[:, 0]), rel=1e-12)
    again = run_sweep(PARETO, cache_dir=tmp_path / "c", progress=False)
    assert again.n_computed == 0 and again.n_cached == 6
    pd.testing.assert_frame_equal(_untimed(again.table.drop(columns="front_cpu_s")),
                                  _untimed(table.drop(columns="front_cpu_s")))
