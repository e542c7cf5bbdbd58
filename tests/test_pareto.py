"""The Pareto front of efficiency, fairness and cost: the exact front against enumeration on tiny instances (two GPU
types), certification, seeded heuristic fronts that never beat a certified point, and the indicators."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

from goodopt.errors import ValidationError
from goodopt.families import FAMILIES
from goodopt.pareto.criteria import parse_criteria
from goodopt.pareto.exact import ExactFrontOptions, exact_front
from goodopt.pareto.front import Front, enumerated_front
from goodopt.pareto.heuristic import HeuristicFrontOptions, heuristic_front
from goodopt.pareto.indicators import indicators

#: Prices for the shipped types without a published one (a test's, not a market's).
PRICES = {"rtx2080ti": 1.0, "rtx6000": 1.5}
EVERY = ExactFrontOptions(max_points=None, cost_levels=None)


def _sorted(values: np.ndarray) -> np.ndarray:
    return values[np.lexsort(values.T[::-1])]


def _same_vectors(a: Front, b: Front) -> bool:
    return a.values.shape == b.values.shape and np.allclose(_sorted(a.values), _sorted(b.values), rtol=1e-6,
                                                            atol=1e-9)


def _covers(front: Front, truth: Front, rel: tuple[float, ...]) -> bool:
    """Every point of ``truth`` is weakly dominated by a point of ``front`` within ``rel`` (relative, per
    criterion), and no point of ``front`` is dominated by one of ``truth`` beyond it."""
    sign = np.where(truth.maximise, 1.0, -1.0)
    f, t = front.values * sign, truth.values * sign
    slack = np.asarray(rel) * np.maximum(np.abs(t), 1e-9)
    covered = np.all(f[None, :, :] >= t[:, None, :] - slack[:, None, :], axis=2).any(axis=1)
    beaten = np.all(t[None, :, :] > f[:, None, :] + np.asarray(rel) * np.maximum(np.abs(f[:, None, :]), 1e-9),
                    axis=2).any(axis=1)
    return bool(covered.all() and not beaten.any())


@pytest.mark.parametrize("objectives", ["efficiency,fairness", "efficiency,cost", "efficiency,fairness,cost"])
@pytest.mark.parametrize("family", ["hetero-tiny", "tiny"])
def test_the_exact_front_is_the_enumerated_one(family, objectives):
    """Where every criterion beside efficiency takes finitely many values (the worst job's t, the cost of two GPU
    types' counts), the exact front holds every non-dominated vector of the instance's feasible allocations, each
    point certified: the same set as scoring every allocation."""
    for seed in range(5):
        pr = FAMILIES[family].scenario(seed).problem()
        criteria = parse_criteria(objectives, pr, PRICES)
        exact, truth = exact_front(pr, criteria, EVERY), enumerated_front(pr, criteria)
        assert _same_vectors(exact, truth), (seed, exact.values, truth.values)
        assert all(p.certified for p in exact.points), [p.status for p in exact.points]
        ev = pr.evaluator()
        assert all(ev.violation(p.alloc) == 0 for p in exact.points)


@pytest.mark.parametrize("power", [-50.0, -1.0, 0.0, 0.5])
def test_a_power_mean_fairness_front_covers_the_enumerated_one_to_its_resolution(power):
    """A power mean takes a continuum of values: its levels are bisected to ``resolution`` (relative), so every
    non-dominated vector is matched within that in fairness (and the gap in efficiency), and no exact point is
    beaten by an enumerated one beyond it."""
    for seed in range(3):
        pr = FAMILIES["hetero-tiny"].scenario(seed).problem()
        criteria = parse_criteria(f"efficiency,fairness:{power:g}", pr)
        opts = ExactFrontOptions(max_points=None, resolution=1e-4)
        exact, truth = exact_front(pr, criteria, opts), enumerated_front(pr, criteria)
        assert all(p.certified for p in exact.points)
        assert _covers(exact, truth, (1e-6, 2e-4)), (seed, exact.values, truth.values)


def test_a_point_whose_solve_hit_its_limit_is_listed_as_such():
    """At a time limit no solve can meet, no point is certified, and each says why its solve stopped."""
    pr = FAMILIES["sia-64"].scenario(0).problem()
    criteria = parse_criteria("efficiency,fairness", pr)
    front = exact_front(pr, criteria, ExactFrontOptions(time_limit_s=1e-6, max_points=4))
    assert not any(p.certified for p in front.points)
    assert all(p.status in ("time_limit", "gap not closed") for p in front.points), [p.status for p in front.points]


def test_a_node_budget_gives_the_same_front_twice_and_certifies_only_solves_that_closed():
    """A node budget, unlike a time limit, does not depend on the machine: two runs give the same front, point
    for point and status for status; a point is certified exactly when its solve closed its gap (a solve the
    budget stops is listed with its status, as at a time limit above)."""
    pr = FAMILIES["hetero-16"].scenario(0).problem()
    criteria = parse_criteria("efficiency,fairness", pr)
    opts = ExactFrontOptions(node_limit=1, max_points=4)
    first, second = exact_front(pr, criteria, opts), exact_front(pr, criteria, opts)
    np.testing.assert_array_equal(first.values, second.values)
    assert [p.status for p in first.points] == [p.status for p in second.points]
    assert all(p.certified == (p.status == "optimal") for p in first.points)
    with pytest.raises(ValidationError, match="node_limit"):
        ExactFrontOptions(node_limit=0)


def test_a_capped_front_resolves_its_knee_first_and_every_point_is_certified():
    """With a point limit the levels go where neighbouring points lie farthest apart: the capped front's points are
    certified points of the complete front, and its hypervolume is most of the complete front's."""
    pr = FAMILIES["hetero-16"].scenario(0).problem()
    criteria = parse_criteria("efficiency,fairness", pr)
    whole = exact_front(pr, criteria, ExactFrontOptions(max_points=None))
    capped = exact_front(pr, criteria, ExactFrontOptions(max_points=4))
    assert 2 <= len(capped.points) <= 4 < len(whole.points)
    assert all(p.certified for p in capped.points)
    assert _covers(whole, capped, (1e-6, 1e-6))  # each capped point is one of the whole front's
    assert indicators(capped, whole).hv_ratio > 0.9


@pytest.mark.parametrize("algorithm", ["nsga2", "nsga3", "moead"])
def test_a_seeded_heuristic_front_is_reproducible_and_never_beats_a_certified_point(algorithm):
    """The same seed gives the same front; its points are feasible and none dominates a point of the exact front
    beyond the gap (the exact points are certified non-dominated)."""
    pr = FAMILIES["hetero-16"].scenario(1).problem()
    criteria = parse_criteria("efficiency,fairness", pr)
    opts = HeuristicFrontOptions(pop_size=30, n_gen=15, seed=3)
    a, b = heuristic_front(pr, criteria, algorithm, opts), heuristic_front(pr, criteria, algorithm, opts)
    assert np.array_equal(a.values, b.values) and len(a.points) > 0
    exact = exact_front(pr, criteria, EVERY)
    ev = pr.evaluator()
    assert all(ev.violation(p.alloc) == 0 for p in a.points)
    e, h = exact.values, a.values
    beaten = np.all(h[:, None, :] > e[None, :, :] * (1 + 1e-6), axis=2)
    assert not beaten.any()
    ind = indicators(a, exact)
    assert ind.hv_ratio <= 1 + 1e-9 and ind.igd_plus >= 0 and ind.eps_additive >= -1e-9


def test_a_front_against_itself_has_perfect_indicators():
    pr = FAMILIES["hetero-tiny"].scenario(2).problem()
    front = exact_front(pr, parse_criteria("efficiency,fairness,cost", pr), EVERY)
    ind = indicators(front, front)
    assert ind.hv_ratio == pytest.approx(1.0) and ind.igd_plus == pytest.approx(0.0, abs=1e-12)
    assert ind.eps_additive == pytest.approx(0.0, abs=1e-12) and ind.attained == 1.0


@pytest.mark.parametrize("spec, field", [("efficiency,speed", "objectives"), ("fairness,cost", "objectives"),
                                         ("efficiency,fairness:2", "objectives"),
                                         ("efficiency,fairness,fairness", "objectives"), ("efficiency,cost", "prices")])
def test_bad_criteria_name_the_field_and_survive_pickling(spec, field):
    pr = FAMILIES["five-types-512"].scenario(0).problem() if field == "prices" else \
        FAMILIES["hetero-tiny"].scenario(0).problem()
    with pytest.raises(ValidationError) as err:
        parse_criteria(spec, pr)
    assert err.value.field == field
    again = pickle.loads(pickle.dumps(err.value))
    assert isinstance(again, ValueError) and str(again) == str(err.value)


def test_the_command_writes_points_indicators_and_a_figure_and_keeps_an_earlier_run(tmp_path):
    cmd = [sys.executable, "-m", "goodopt.cli", "pareto", "family:hetero-tiny:1", "--generations", "5", "--pop-size",
           "12", "--out", "front.csv", "--figure", "front.png"]
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    import pandas as pd

    points = pd.read_csv(tmp_path / "front.csv")
    assert set(points["method"]) == {"exact", "nsga2", "nsga3"}
    assert points.loc[points["method"] == "exact", "certified"].all()
    assert len(pd.read_csv(tmp_path / "front.indicators.csv")) == 2 and (tmp_path / "front.png").stat().st_size
    surfaces = pd.read_csv(tmp_path / "front.attainment.csv")  # one seed: each surface is its front
    assert set(surfaces["level"]) == {"best", "median", "worst"} and (surfaces["seeds"] == 1).all()
    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode != 0 and "--force" in again.stderr


# ------------------------------------------------------------------ attainment across seeds
def _fronts_of(values_per_seed, criteria):
    from goodopt.pareto.front import FrontPoint

    return [Front(criteria=criteria, method="nsga2", seed=s, points=tuple(
        FrontPoint(tuple(map(float, v)), np.zeros((0, 0), np.int64), "heuristic") for v in vals))
        for s, vals in enumerate(values_per_seed)]


def _surface_by_counting(values_per_seed, needed: int, maximise) -> np.ndarray:
    """The attainment surface by definition: of every point whose coordinates appear in the fronts, those at
    least ``needed`` seeds attain (a point of theirs at least as good in every criterion), then the best of
    those (no other one at least as good)."""
    import itertools

    sign = np.where(maximise, 1.0, -1.0)
    fronts = [np.asarray(v, float).reshape(-1, len(sign)) * sign for v in values_per_seed]
    coords = [np.unique(np.concatenate([f[:, k] for f in fronts])) for k in range(len(sign))]
    grid = np.array(list(itertools.product(*coords))) if all(len(c) for c in coords) else np.zeros((0, len(sign)))
    counts = sum(np.all(f[None, :, :] >= grid[:, None, :], axis=2).any(axis=1) for f in fronts if len(f))
    kept = grid[np.asarray(counts) >= needed] if len(grid) else grid
    best = [z for z in kept if not np.any(np.all(kept >= z, axis=1) & np.any(kept > z, axis=1))]
    return np.array(best).reshape(-1, len(sign)) * sign


@pytest.mark.parametrize("n_criteria", [2, 3])
def test_attainment_surfaces_are_the_shares_of_seeds_that_reach_each_point(n_criteria):
    """Over random fronts (few distinct values, so ties and repeated points occur; some seeds empty), each
    surface is what counting gives: best = reached by one seed, median = by half, worst = by all."""
    from goodopt.pareto.attainment import attainment_surfaces
    from goodopt.pareto.front import nondominated

    pr = FAMILIES["hetero-tiny"].scenario(0).problem()
    criteria = parse_criteria("efficiency,fairness,cost" if n_criteria == 3 else "efficiency,fairness", pr, PRICES)
    rng = np.random.default_rng(7)
    for _ in range(25):
        n_seeds = int(rng.integers(1, 5))
        per_seed = []
        for _ in range(n_seeds):
            v = rng.integers(0, 4, size=(int(rng.integers(0, 5)), n_criteria)).astype(float)
            per_seed.append(v[nondominated(v, [c.maximise for c in criteria])] if len(v) else v)
        surfaces = {s.level: s for s in attainment_surfaces(_fronts_of(per_seed, criteria))}
        for level, needed in (("best", 1), ("median", int(np.ceil(n_seeds / 2))), ("worst", n_seeds)):
            expected = _surface_by_counting(per_seed, needed, [c.maximise for c in criteria])
            assert _sorted(surfaces[level].values).tolist() == _sorted(expected).tolist(), (level, per_seed)


def test_a_study_judges_each_heuristics_surfaces_and_the_best_run_is_no_worse_than_the_worst():
    from goodopt.pareto.study import pareto_study

    pr = FAMILIES["hetero-tiny"].scenario(1).problem()
    study = pareto_study(pr, "efficiency,fairness", ("exact", "nsga2"), seeds=(0, 1, 2),
                         heuristic=HeuristicFrontOptions(pop_size=12, n_gen=5))
    rows = {r["level"]: r for r in study.attainment_rows}
    assert set(rows) == {"best", "median", "worst"} and all(r["seeds"] == 3 for r in rows.values())
    assert rows["best"]["hv_ratio"] >= rows["median"]["hv_ratio"] >= rows["worst"]["hv_ratio"] - 1e-12
    best = next(s for s in study.surfaces if s.level == "best")
    union = np.concatenate([f.values for f in study.fronts if f.method == "nsga2"])
    expected = _sorted(union[_nondominated2(union)])
    assert best.values.shape == expected.shape and np.allclose(_sorted(best.values), expected, rtol=1e-11, atol=0)


def _nondominated2(values):
    from goodopt.pareto.front import nondominated

    return nondominated(values, [True, True])
