"""The native HiGHS options goodopt sets on its configuration-level models, and that a user's
``highs_options`` win over them."""

from goodopt.solvers import Termination

import goodopt
from goodopt.families import FAMILIES


def record_highs_options(monkeypatch, module):
    """Make ``module.ArrayModel`` record the native HiGHS options each model is built with; returns the list they
    are appended to."""
    seen = []

    class Recording(module.ArrayModel):
        def __init__(self, *args, highs_options=None, **kw):
            seen.append(dict(highs_options or {}))
            super().__init__(*args, highs_options=highs_options, **kw)

    monkeypatch.setattr(module, "ArrayModel", Recording)
    return seen


def test_the_plain_dive_runs_without_feasibility_jump_unless_the_user_sets_it(monkeypatch):
    """The dive over every configuration whose bound reaches the best candidate starts from that candidate; HiGHS's
    search for a first feasible point is off there (FEASIBILITY_JUMP in solvers/milp/dive.py), unless
    ``highs_options`` names it; the answer is the same either way (sia-64 seed 0, both objectives)."""
    import dataclasses

    import goodopt.solvers.milp.dive as dive

    from goodopt.objective import Objective

    seen = record_highs_options(monkeypatch, dive)
    for objective in (None, Objective.sia()):
        sc = FAMILIES["sia-64"].scenario(0)
        pr = (dataclasses.replace(sc, objective=objective) if objective else sc).problem()
        seen.clear()
        ours = goodopt.solve(pr, "milp")
        assert seen and seen[-1][dive.FEASIBILITY_JUMP] is False
        seen.clear()
        theirs = goodopt.solve(pr, "milp", {"highs_options": {dive.FEASIBILITY_JUMP: True}})
        assert seen and seen[-1][dive.FEASIBILITY_JUMP] is True
        assert ours.status == theirs.status == Termination.OPTIMAL
        assert abs(ours.fitness - theirs.fitness) <= 1e-6 * ours.fitness


def test_the_plain_dive_runs_presolve_only_from_its_size_floor(monkeypatch):
    """The dive over every configuration whose bound reaches the best candidate runs HiGHS's presolve when its core
    holds PRESOLVE_MIN_OPEN configurations or more, and keeps the configuration models' options below (presolve
    off, or the user's choice); each way gives the same optimum (sia-64 seeds 0-2, both objectives)."""
    import dataclasses

    import goodopt.solvers.milp.dive as dive

    from goodopt.objective import Objective

    seen = []

    class Recording(dive.ArrayModel):
        def __init__(self, problem, configs, *args, highs_options=None, **kw):
            seen.append((configs.n_configs, dict(highs_options or {}).get("presolve")))
            super().__init__(problem, configs, *args, highs_options=highs_options, **kw)

    monkeypatch.setattr(dive, "ArrayModel", Recording)
    floor0 = dive.PRESOLVE_MIN_OPEN
    for seed in range(3):
        for objective in (None, Objective.sia()):
            sc = FAMILIES["sia-64"].scenario(seed)
            pr = (dataclasses.replace(sc, objective=objective) if objective else sc).problem()
            seen.clear()
            ours = goodopt.solve(pr, "milp")
            assert seen and all(p == ("on" if n >= dive.PRESOLVE_MIN_OPEN else "off") for n, p in seen), seen
            answers = [ours]
            for floor, user, want in ((0, {}, "on"), (10**9, {}, "off"), (10**9, {"presolve": "on"}, "on")):
                monkeypatch.setattr(dive, "PRESOLVE_MIN_OPEN", floor)
                seen.clear()
                answers.append(goodopt.solve(pr, "milp", {"highs_options": user}))
                assert seen and all(p == want for _, p in seen), (floor, user, seen)
            monkeypatch.setattr(dive, "PRESOLVE_MIN_OPEN", floor0)
            assert all(a.status == Termination.OPTIMAL for a in answers)
            assert max(a.fitness for a in answers) - min(a.fitness for a in answers) <= 1e-6 * ours.fitness


def test_configuration_milps_trust_pseudo_costs_sooner_unless_the_user_says_otherwise(monkeypatch):
    """The staged method's configuration-level MILPs run HiGHS with less strong branching (PSCOST_RELIABLE in
    solvers/milp/run.py), the reference model with HiGHS's own; a user's ``highs_options`` value wins, another
    solver gets only its own options, and the answer is the same with HiGHS's default (five-types-512 seed 0,
    whose dive branches: 3 nodes; sia-64 seed 0)."""
    import goodopt.solvers.milp.dive as dive
    from goodopt.solvers.milp.run import PSCOST_RELIABLE, config_highs_options
    from goodopt.solvers.options import MilpOptions

    name, value = PSCOST_RELIABLE
    assert config_highs_options(MilpOptions())[name] == value
    assert config_highs_options(MilpOptions(highs_options={name: 8}))[name] == 8
    assert name not in config_highs_options(MilpOptions(solver="scip", highs_options={}))
    assert name not in config_highs_options(MilpOptions(), staged=False)  # the reference model: HiGHS's own
    seen = record_highs_options(monkeypatch, dive)
    for family, seed in (("five-types-512", 0), ("sia-64", 0)):
        pr = FAMILIES[family].scenario(seed).problem()
        seen.clear()
        ours = goodopt.solve(pr, "milp")
        assert seen and all(o[name] == value for o in seen)
        default = goodopt.solve(pr, "milp", {"highs_options": {name: 8}})
        assert ours.status == default.status == Termination.OPTIMAL
        assert abs(ours.fitness - default.fitness) <= 1e-6 * ours.fitness
        assert ours.bound >= default.fitness * (1 - 1e-9) and default.bound >= ours.fitness * (1 - 1e-9)


def test_the_reference_model_keeps_highs_own_branching(monkeypatch):
    """``formulation: reference`` (the ground for comparing solvers) hands HiGHS the model with presolve off and
    HiGHS's own pseudo-cost reliability, not the staged method's (sia-64 seed 0: the configuration level under
    every type's pattern rows)."""
    import goodopt.solvers.milp.models as models
    from goodopt.solvers.milp.run import PSCOST_RELIABLE

    seen = record_highs_options(monkeypatch, models)
    res = goodopt.solve(FAMILIES["sia-64"].scenario(0).problem(), "milp", {"formulation": "reference"})
    assert res.status == Termination.OPTIMAL
    assert seen and all(o.get("presolve") == "off" and PSCOST_RELIABLE[0] not in o for o in seen)
