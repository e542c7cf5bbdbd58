"""What a method reports beyond a result's fields: one frozen record per kind of method, read typed or as a
mapping, refused when a runner reports a key its record does not declare."""

import dataclasses
import json

import pytest
from goodopt.solvers import solve
from goodopt.solvers.details import (
    DETAILS,
    GeneticDetails,
    MilpDetails,
    PluginDetails,
    details_of,
)
from goodopt.solvers.result import SolveResult

import goodopt
from goodopt.errors import SolverError


def test_every_method_answers_with_its_own_record_read_typed_or_as_a_mapping():
    pr = goodopt.load_scenario("small-2node").problem()
    for method in ("milp", "milp-pwl", "ga", "nsga2", "greedy", "equal-share", "brute-force"):
        res = solve(pr, method, {"seed": 0, "n_gen": 3, "pop_size": 6} if method in ("ga", "nsga2") else {})
        assert type(res.extra) is DETAILS[method], method
        with pytest.raises(dataclasses.FrozenInstanceError):
            res.extra.x = 1
        assert dict(res.extra) == res.extra.as_dict() == {k: getattr(res.extra, k) for k in res.extra}
        assert all(v is not None for v in res.extra.values())
        json.dumps(res.to_dict())  # results files keep the mapping
    exact = solve(pr, "milp").details(MilpDetails)
    assert exact.stages and exact.stages == exact["stages"] and "bound" in exact.proof
    with pytest.raises(SolverError, match="reports MilpDetails, not GeneticDetails"):
        solve(pr, "milp").details(GeneticDetails)
    ga = solve(pr, "ga", {"seed": 0, "n_gen": 3, "pop_size": 6}).details(GeneticDetails)
    assert ga.final_population.shape[0] == 6 and ga.engine in ("numpy", "configs", "pymoo")
    assert solve(pr, "ga", {"seed": 0, "n_gen": 3, "pop_size": 6, "engine": "pymoo"}).extra.engine == "pymoo"


def test_a_key_the_record_does_not_declare_is_a_defect_of_the_method():
    with pytest.raises(SolverError, match=r"MilpDetails: the method reported \['stagess'\]"):
        details_of("milp", {"stages": [], "stagess": []})
    # a plug-in's method keeps whatever mapping it reports
    mine = details_of("my-method", {"rounds": 3, "note": None})
    assert isinstance(mine, PluginDetails) and dict(mine) == {"rounds": 3} and mine["rounds"] == 3
    with pytest.raises(KeyError):
        mine["note"]
    assert SolveResult(method="mine", x=None, fitness=0.0, status="optimal", has_solution=False).extra.as_dict() == {}
