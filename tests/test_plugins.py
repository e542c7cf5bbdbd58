"""A method and a policy from another package, found through entry points, are honoured by every command."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

PLUGIN = textwrap.dedent('''
    """A plug-in: a method that gives every job one GPU where it fits, and a policy that runs nobody."""
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from goodopt.sim.policies import Policy
    from goodopt.solvers.api import Method
    from goodopt.solvers.options import MethodOptions
    from goodopt.solvers.result import MethodOutcome, Termination


    @dataclass(frozen=True, kw_only=True)
    class OneEachOptions(MethodOptions):
        method: ClassVar[str] = "one-each"
        jobs: int = 1000


    def one_each(problem, ev, opts, t_start):
        x = np.zeros((problem.n_jobs, problem.n_nodes), dtype=np.int64)
        free = problem.node_capacity.copy()
        for j in range(min(problem.n_jobs, opts.jobs)):
            n = int(np.argmax(free))
            if free[n] > 0:
                x[j, n], free[n] = 1, free[n] - 1
        return MethodOutcome(alloc=x, status=Termination.COMPLETED, solver="one-each")


    METHOD = Method(OneEachOptions, one_each)


    def raiser(problem, ev, opts, t_start):
        raise ZeroDivisionError("a bug of the plug-in's")


    RAISER = Method(OneEachOptions, raiser)


    class Idle(Policy):
        name = "idle"

        def allocate(self, state):
            return np.zeros((state.n_jobs, state.cluster.n_nodes), dtype=np.int64)


    class Crash(Policy):
        name = "crash"

        def allocate(self, state):
            raise KeyError("a bug of the plug-in's")
''')


def _install(tmp_path, broken=False):
    (tmp_path / "oneplug.py").write_text(PLUGIN)
    info = tmp_path / "oneplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oneplug\nVersion: 0.1\n")
    bad = "bad = oneplug:NOTHING\n" if broken else ""  # names an object the module does not have
    eps = (f"[goodopt.methods]\none-each = oneplug:METHOD\nraiser = oneplug:RAISER\n{bad}\n"
           "[goodopt.policies]\nidle = oneplug:Idle\ncrash = oneplug:Crash\n")
    (info / "entry_points.txt").write_text(eps)
    return {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def _goodopt(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "goodopt.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_an_installed_method_and_policy_are_taken_by_every_command(tmp_path):
    env = _install(tmp_path)
    solved = _goodopt(env, "solve", "small-2node", "--method", "one-each", "--json")
    assert solved.returncode == 0, solved.stderr
    out = json.loads(solved.stdout)
    assert out["status"] == "completed" and out["fitness"] > 0  # re-scored by goodopt's evaluator
    assert "one-each" in _goodopt(env, "solve", "--help").stdout
    assert "idle" in _goodopt(env, "simulate", "--help").stdout
    assert "jobs" in _goodopt(env, "options", "one-each").stdout
    bad = _goodopt(env, "solve", "small-2node", "--method", "one-each", "--option", "jobs=x")
    assert bad.returncode == 2 and "options.jobs" not in bad.stdout  # its options class checks its options
    cmp = _goodopt(env, "compare", "small-2node", "--methods", "one-each,greedy", "--out", str(tmp_path / "c.csv"),
                   "--quiet")
    assert cmp.returncode == 0, cmp.stderr
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"name": "p", "kind": "solve", "scenarios": ["small-2node"],
                                    "methods": ["one-each"]}))
    assert _goodopt(env, "sweep", str(spec), "--workers", "2", "--quiet").returncode == 0  # workers find it too
    sim = _goodopt(env, "simulate", "generated:0.1:0:0.3", "--policy", "idle", "--truth", "model", "--dry-run")
    assert sim.returncode == 0, sim.stderr


def test_a_broken_plug_in_is_named_and_goodopt_keeps_working(tmp_path):
    env = _install(tmp_path, broken=True)
    res = _goodopt(env, "solve", "small-2node", "--method", "greedy", "--json")
    assert res.returncode == 0 and "plug-in 'bad'" in res.stderr


@pytest.mark.slow
def test_a_plug_in_that_raises_fails_its_task_with_exit_2_in_every_command(tmp_path):
    env = _install(tmp_path)
    solved = _goodopt(env, "solve", "small-2node", "--method", "raiser")
    assert solved.returncode == 2 and "plug-in method 'raiser' raised ZeroDivisionError" in solved.stderr
    cmp = _goodopt(env, "compare", "small-2node", "--methods", "greedy,raiser", "--out", str(tmp_path / "c.csv"),
                   "--quiet")
    assert cmp.returncode == 2 and "raiser" in cmp.stderr
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"name": "p", "kind": "solve", "scenarios": ["small-2node"],
                                    "methods": ["greedy", "raiser"]}))
    swept = _goodopt(env, "sweep", str(spec), "--workers", "2", "--quiet")
    assert swept.returncode == 2 and "raiser" in swept.stderr
    sim = _goodopt(env, "simulate", "generated:0.1:0:0.3", "--policy", "crash", "--truth", "model", "--nodes", "2",
                   "--out", str(tmp_path / "sim"), "--quiet")
    assert sim.returncode == 2 and "plug-in policy 'crash' raised KeyError" in sim.stderr
    for run in (solved, cmp, swept, sim):
        assert "Traceback" not in run.stderr
    assert not (tmp_path / "sim").exists()
