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
    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode != 0 and "--force" in again.stderr
