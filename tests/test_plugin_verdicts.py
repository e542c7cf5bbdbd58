"""A plug-in's answer is judged as the exact method's is: its allocation checked, its status and bound re-judged
from the evaluator's re-score; its failure is its own task's; its name is a label; the solver is one goodopt
documents."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from goodopt.solvers.api import REGISTRY, Method, register_method
from goodopt.solvers.options import MethodOptions
from goodopt.solvers.result import MethodOutcome, Termination

import goodopt
from goodopt.cli import main
from goodopt.errors import SolverError, ValidationError


@dataclass(frozen=True, kw_only=True)
class ClaimOptions(MethodOptions):
    method: ClassVar[str] = "claims"


@pytest.fixture
def plug_in():
    """``plug_in(name, runner)`` registers a method for one test."""
    names = []

    def add(name, runner):
        register_method(name, Method(ClaimOptions, runner))
        names.append(name)
        return name

    yield add
    for name in names:
        REGISTRY.pop(name)


def _problem():
    return goodopt.load_scenario("small-2node").problem()  # 5 jobs on two 4-GPU nodes, p = -1


def _claiming(alloc, status, bound=float("nan")):
    return lambda pr, ev, opts, t0: MethodOutcome(alloc=alloc(pr) if callable(alloc) else alloc, status=status,
                                                  bound=bound, solver="claims")


def _one_gpu_each(pr):
    x = np.zeros((pr.n_jobs, pr.n_nodes), np.int64)
    x[np.arange(4), 0] = 1
    return x


# ------------------------------------------------------------------ status and bound, re-judged
def test_a_bound_below_the_rescored_fitness_is_dropped(plug_in):
    res = goodopt.solve(_problem(), plug_in("low-bound", _claiming(_one_gpu_each, Termination.OPTIMAL, 1e-3)))
    assert res.fitness > 1e-3  # the plug-in's bound lies below its own answer ...
    assert np.isnan(res.bound) and np.isnan(res.gap)  # ... so it is no bound, and no gap 0 is shown
    assert res.status == Termination.NUMERICAL and "below the re-scored fitness" in res.message


def test_optimal_without_a_bound_is_not_optimal(plug_in):
    res = goodopt.solve(_problem(), plug_in("no-bound", _claiming(_one_gpu_each, Termination.OPTIMAL)))
    assert res.status == Termination.NUMERICAL and "no finite fitness bound" in res.message


def test_optimal_far_from_its_bound_is_not_optimal(plug_in):
    res = goodopt.solve(_problem(), plug_in("far", _claiming(_one_gpu_each, Termination.OPTIMAL, 100.0)))
    assert res.status == Termination.NUMERICAL and res.bound == 100.0


def test_an_optimal_claim_the_numbers_support_stands(plug_in):
    pr = _problem()
    best = goodopt.solve(pr, "brute-force")
    res = goodopt.solve(pr, plug_in("true", _claiming(best.x, Termination.OPTIMAL, best.fitness)))
    assert res.status == Termination.OPTIMAL and res.gap == 0


@pytest.mark.parametrize("status", [Termination.OPTIMAL, Termination.GAP_LIMIT])
def test_an_optimum_claimed_without_an_allocation_is_not_one(plug_in, status):
    res = goodopt.solve(_problem(), plug_in("nothing", _claiming(None, status, 1.0)))  # found by the fuzz, seed 103
    assert res.status == Termination.NUMERICAL and not res.has_solution and "no allocation" in res.message


def test_an_unknown_status_is_an_error(plug_in):
    res = goodopt.solve(_problem(), plug_in("odd", _claiming(_one_gpu_each, "splendid")))
    assert res.status == Termination.ERROR and "unknown status 'splendid'" in res.message


def test_a_string_status_of_goodopts_is_read_as_one(plug_in):
    res = goodopt.solve(_problem(), plug_in("text", _claiming(_one_gpu_each, "completed")))
    assert res.status == Termination.COMPLETED


# ------------------------------------------------------------------ allocations, checked
def test_an_infeasible_allocation_is_infeasible_and_never_ranked(plug_in, tmp_path):
    def twenty_on_a_node(pr):
        x = np.zeros((pr.n_jobs, pr.n_nodes), np.int64)
        x[0, 0] = 20  # the node has 4 GPUs
        return x

    name = plug_in("twenty", _claiming(twenty_on_a_node, Termination.OPTIMAL, 1e9))
    res = goodopt.solve(_problem(), name)
    assert res.status == Termination.INFEASIBLE and not res.feasible and np.isnan(res.bound)
    out = tmp_path / "c.csv"
    assert main(["compare", "small-2node", "--methods", f"{name},milp,greedy", "--out", str(out), "--quiet"]) == 0
    table = pd.read_csv(out).set_index("method")
    assert np.isnan(table.loc[name, "relative_fitness"]) and np.isnan(table.loc[name, "gap_to_bound"])
    assert table.loc["milp", "relative_fitness"] == 1.0  # the best feasible answer is the reference
    assert 0 <= table.loc["milp", "gap_to_bound"] < 1e-6 and table.loc["greedy", "gap_to_bound"] >= 0


@pytest.mark.parametrize("alloc, why", [
    (lambda pr: _one_gpu_each(pr) * 0.5, "whole numbers"),
    (lambda pr: -_one_gpu_each(pr), "whole numbers"),
    (lambda pr: np.full((pr.n_jobs, pr.n_nodes), np.nan), "whole numbers"),
    (lambda pr: np.zeros((pr.n_jobs + 1, pr.n_nodes)), "shape"),
    (lambda pr: np.zeros(pr.n_jobs), "shape"),
    (lambda pr: "all of them", "not an array of numbers"),
    (lambda pr: [[1, 2], [3]], "not an array of numbers"),
])
def test_an_allocation_that_is_not_whole_gpu_counts_is_refused_not_truncated(plug_in, alloc, why):
    res = goodopt.solve(_problem(), plug_in("bad-shape", _claiming(alloc, Termination.COMPLETED)))
    assert res.status == Termination.ERROR and not res.has_solution and why in res.message
    assert np.isnan(res.fitness) and np.isnan(res.bound)


# ------------------------------------------------------------------ a plug-in that fails fails its task
def _raising(pr, ev, opts, t0):
    raise ZeroDivisionError("the plug-in's own bug")


def test_a_plug_in_that_raises_fails_with_its_name(plug_in):
    name = plug_in("raiser", _raising)
    with pytest.raises(SolverError, match="plug-in method 'raiser' raised ZeroDivisionError") as err:
        goodopt.solve(_problem(), name)
    assert isinstance(err.value.__cause__, ZeroDivisionError)  # its own traceback is kept


def test_a_plug_in_returning_no_outcome_fails_with_its_name(plug_in):
    with pytest.raises(SolverError, match="returned dict, not a MethodOutcome"):
        goodopt.solve(_problem(), plug_in("dicty", lambda pr, ev, opts, t0: {"x": None}))


def test_compare_with_a_raising_plug_in_fails_its_task_and_keeps_the_others(plug_in, tmp_path, capsys):
    name = plug_in("raiser", _raising)
    rc = main(["compare", "small-2node", "--methods", f"greedy,{name}", "--out", str(tmp_path / "c.csv"),
               "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and "raiser" in err and "ZeroDivisionError" in err and "Traceback" not in err


# ------------------------------------------------------------------ names are labels, solvers are known
@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "", " padded ", "tab\there", "nul\0", 7])
def test_method_and_policy_names_are_labels(name):
    from goodopt.sim.policies import Policy
    from goodopt.sim.policies.registry import register_policy

    with pytest.raises(ValidationError, match="method"):
        register_method(name, Method(ClaimOptions, _raising))

    class Quiet(Policy):
        def allocate(self, state):
            return np.zeros((state.n_jobs, state.cluster.n_nodes), np.int64)

    with pytest.raises(ValidationError, match="policy"):
        register_policy(name, Quiet)


@pytest.mark.parametrize("solver", ["asl:/bin/touch", "/usr/bin/cbc", "HiGHS", "gurobi_persistent_x"])
def test_only_documented_solver_names_are_accepted(solver, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match="options.solver"):
        goodopt.solve(_problem(), "milp", {"solver": solver})
    assert main(["solve", "small-2node", "--method", "milp-pwl", "--option", f"solver={solver}"]) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_spec_naming_a_program_as_its_solver_is_refused(tmp_path, capsys):
    marker = tmp_path / "ran"
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nkind: solve\nscenarios: [small-2node]\n"
                    f"methods: [{{method: milp, options: {{solver: 'asl:{prog}'}}}}]\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    assert not marker.exists() and "options.solver" in capsys.readouterr().err


def test_a_misspelt_solver_gets_a_suggestion():
    with pytest.raises(ValidationError, match="did you mean 'highs'"):
        goodopt.solve(_problem(), "milp", {"solver": "hihgs"})


def test_a_plug_in_policy_declares_its_options_as_a_class():
    # A plug-in policy's options are a frozen SimPolicyOptions subclass like the built-ins': a plain dataclass
    # or a dict in their place is refused when it is registered; a declared one is built, checked and listed.
    from dataclasses import dataclass

    from goodopt.sim.policies import POLICIES, Policy, SimPolicyOptions, make_policy, policy_options
    from goodopt.sim.policies.registry import register_policy

    @dataclass(frozen=True)
    class Loose:
        tickets: int = 1

    class Wrong(Policy):
        Options = Loose  # type: ignore[assignment]

    with pytest.raises(ValidationError, match="Options must be a frozen SimPolicyOptions subclass"):
        register_policy("wrong-options", Wrong)

    @dataclass(frozen=True, kw_only=True)
    class TicketOptions(SimPolicyOptions):
        tickets: int = 1

    class Lottery(Policy):
        name = "lottery-test"
        Options = TicketOptions

    register_policy("lottery-test", Lottery)
    try:
        assert policy_options("lottery-test") == {"tickets": 1}
        assert make_policy("lottery-test", tickets=3).opts.tickets == 3
        with pytest.raises(ValidationError, match="policy_options.tickets: must be a whole number"):
            make_policy("lottery-test", tickets="many")
    finally:
        del POLICIES["lottery-test"]
