"""What a benchmark reports: the statistics of the named libraries on published worked examples, the primal
integral and time to target worked by hand, permutations that never move a certified optimum, and
compare --library / --import / --permutations end to end."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from goodopt.solvers import solve
from goodopt.solvers.result import CERTIFIED_GAP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goodopt
from goodopt.cli import main
from goodopt.library import shipped
from goodopt.runs.benchmark import variability, variability_summary
from goodopt.runs.measures import closed_trace, primal_dual_integral, primal_gap, primal_integral, time_to_target
from goodopt.runs.statistics import friedman, latex_table, wilcoxon_holm

from .test_fullrange import problems

# Demšar (JMLR 7, 2006), Table 2: AUC of C4.5 and C4.5 with m tuned on 14 data sets
DEMSAR_C45 = [0.763, 0.599, 0.954, 0.628, 0.882, 0.936, 0.661, 0.583, 0.775, 1.000, 0.940, 0.619, 0.972, 0.957]
DEMSAR_C45_M = [0.768, 0.591, 0.971, 0.661, 0.888, 0.931, 0.668, 0.583, 0.838, 1.000, 0.962, 0.666, 0.981, 0.978]
# Sprent and Smeeton, Applied Nonparametric Statistical Methods, 6.3.2 (scipy's friedmanchisquare example):
# pulse rates of seven students before, right after and 5 minutes after exercise
PULSE = {"before": [72, 96, 88, 92, 74, 76, 82], "after": [120, 120, 132, 120, 101, 96, 112],
         "five_min": [76, 95, 104, 96, 84, 72, 76]}


def test_friedman_on_sprent_and_smeeton_pulse_rates():
    res = friedman(pd.DataFrame(PULSE), "seconds")
    assert res.statistic == pytest.approx(10.571428571428571, rel=1e-12)
    assert res.pvalue == pytest.approx(0.005063414171757498, rel=1e-9)
    # lower first: "before" is below "five_min" for 4 of the 7 students, "after" is highest for all
    assert res.average_ranks.to_dict() == pytest.approx({"before": 10 / 7, "after": 3.0, "five_min": 11 / 7})
    assert res.nemenyi.shape == (3, 3) and list(res.nemenyi.index) == list(PULSE)


def test_demsar_critical_difference_for_four_methods_on_fourteen_data_sets():
    rng = np.random.default_rng(0)
    res = friedman(pd.DataFrame(rng.random((14, 4)), columns=list("abcd")), "seconds")
    assert round(res.critical_difference, 2) == 1.25  # Demšar section 3.2.2: q_0.05 = 2.569, CD = 1.25


def test_wilcoxon_on_demsar_c45_example():
    s = pd.DataFrame({"c45": DEMSAR_C45, "c45m": DEMSAR_C45_M})
    out = wilcoxon_holm(s, "fitness")
    row = out.iloc[0]
    assert row["statistic"] == 12.0  # R- = 12 against R+ = 93, zero differences split between them
    assert row["pvalue"] < 0.05 and row["significant"] and row["better"] == "c45m"


def test_holm_adjusts_every_pair():
    rng = np.random.default_rng(3)
    base = rng.random(20)
    s = pd.DataFrame({"a": base, "b": base + 0.5, "c": base + rng.normal(0, 0.01, 20)})
    out = wilcoxon_holm(s, "seconds")
    assert len(out) == 3 and (out["p_holm"] >= out["pvalue"]).all()
    ab = out[(out["a"] == "a") & (out["b"] == "b")].iloc[0]
    assert ab["significant"] and ab["better"] == "a"  # lower seconds are better


def test_latex_tables_have_booktabs_rules():
    tex = latex_table(pd.DataFrame({"method": ["milp"], "seconds": [1.23456]}), caption="c", label="t")
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and "1.235" in tex


# ------------------------------------------------------------------ measures, worked by hand
def test_primal_integral_and_time_to_target_by_hand():
    # nothing until 1 s, then 0.5 with bound 2, then the optimum 1.0 (bound 1.0) at 3 s; horizon 4 s
    pts = closed_trace([(1.0, 0.5, 2.0)], 3.0, 1.0, 1.0)
    assert primal_integral(pts, 1.0, 4.0) == pytest.approx(1.0 + 2 * 0.5 + 0.0)
    assert primal_dual_integral(pts, 4.0) == pytest.approx(1.0 + 2 * 0.75 + 0.0)
    assert time_to_target(pts, 1.0, 0.0) == 3.0 and time_to_target(pts, 1.0, 0.5) == 1.0
    assert time_to_target(closed_trace([], 2.0, math.nan, math.nan), 1.0, 0.1) == math.inf
    assert primal_gap(math.nan, 1.0) == 1.0 and primal_gap(-1.0, 1.0) == 1.0 and primal_gap(0.0, 0.0) == 0.0


# ------------------------------------------------------------------ permutations
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pr=problems(), seed=st.integers(0, 2**31 - 1))
def test_permuting_jobs_and_nodes_never_changes_a_certified_optimum(pr, seed):
    rng = np.random.default_rng(seed)
    jobs, nodes = rng.permutation(pr.n_jobs), rng.permutation(pr.n_nodes)
    q = pr.permuted(jobs, nodes)
    a, b = solve(pr, "milp"), solve(q, "milp")
    assert a.status == b.status == "optimal", (a.message, b.message)
    # each certified to goodopt's tolerance: the two optima agree within it (and are the same answer, mapped)
    assert b.fitness == pytest.approx(a.fitness, rel=CERTIFIED_GAP, abs=1e-300), (pr.p, pr.eps)
    # the answer of one maps to an answer of the other with the same fitness
    assert q.evaluator().fitness(a.x[jobs][:, nodes]) == pytest.approx(a.fitness, rel=1e-12)


def test_variability_reports_the_spread_and_a_fixed_optimum():
    inst = shipped() / "instances" / "hetero-16-0-own.yaml"
    var = variability([inst], ["milp", "greedy"], 2)
    assert len(var) == 6 and sorted(set(var["permutation"])) == [0, 1, 2]
    summ = variability_summary(var).set_index("method")
    assert summ.loc["milp", "optimal_runs"] == 3 and not summ.loc["milp", "optimum_moved"]
    assert summ.loc["milp", "seconds_min"] <= summ.loc["milp", "seconds_median"] <= summ.loc["milp", "seconds_max"]


# ------------------------------------------------------------------ compare on the library, with imported runs
def test_compare_on_the_library_with_an_imported_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    pr = goodopt.load_scenario(str(shipped() / "instances" / "hetero-16-0-own.yaml")).problem()
    good = solve(pr, "greedy")  # a colleague's heuristic, run elsewhere: its answer file is all goodopt sees
    (tmp_path / "greedy.json").write_text(json.dumps({"allocation": good.to_dict(pr)["allocation"]}))
    (tmp_path / "runs.csv").write_text("instance,solver,seconds,status,answer\n"
                                       "hetero-16-0-own,mine,0.5,optimal,greedy.json\n"
                                       "tiny-0-own,mine,0.1,optimal,"
                                       f"{shipped() / 'answers' / 'tiny-0-own.json'}\n")
    argv = ["compare", "hetero-16-0-own", "tiny-0-own", "--library", "shipped", "--methods", "milp,greedy,ga",
            "--import", "runs.csv", "--stats", "primal_integral", "--latex", "t.tex", "--quiet"]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "compare.csv")
    mine = table[table["method"] == "mine"].set_index("scenario")
    assert mine.loc["hetero-16-0-own", "fitness"] == pytest.approx(good.fitness, rel=1e-12)  # re-scored
    # its claim of an optimum is judged: greedy's answer falls short of the certified value; the stored
    # certified answer reaches it
    assert mine.loc["hetero-16-0-own", "status"] == "numerical" and mine.loc["tiny-0-own", "status"] == "optimal"
    assert (mine["claimed_status"] == "optimal").all()
    assert bool(mine.loc["tiny-0-own", "feasible"]) and mine.loc["tiny-0-own", "primal_gap"] == pytest.approx(0.0)
    assert table["reference"].notna().all() and "Friedman test on primal_integral" in capsys.readouterr().out
    assert "\\toprule" in (tmp_path / "t.tex").read_text()


def test_the_backend_table_solves_each_seed_on_each_backend_and_checks_they_agree():
    # sia-backends: one row per (seed, backend), each certified, the seed's backends agreeing on the fitness, and
    # a summary row per backend whose worst seed is the slowest of its rows.
    from goodopt.bench.sia_backends import backend_rows, backend_summary

    rows = backend_rows(seeds=(0, 8), backends=("highs", "scip"))
    assert [(r["seed"], r["solver"]) for r in rows] == [(0, "highs"), (0, "scip"), (8, "highs"), (8, "scip")]
    assert all(r["status"] == "optimal" and r["same_fitness"] for r in rows)
    assert rows[0]["fitness"] == pytest.approx(rows[1]["fitness"], rel=1e-9)
    assert all(r["ratio_to_sia_ilp"] == pytest.approx(r["cpu_s"] / r["sia_ilp_highs_cpu_s"]) for r in rows)
    summary = {s["solver"]: s for s in backend_summary(rows)}
    for name in ("highs", "scip"):
        mine = [r for r in rows if r["solver"] == name]
        assert summary[name]["cpu_s_worst"] == max(r["cpu_s"] for r in mine)
        assert summary[name]["certified"] and summary[name]["same_fitness"] and summary[name]["seeds"] == 2


def test_the_dive_core_written_by_a_solve_is_the_model_every_backend_solves_to_the_dives_value():
    # core-backends: the certified solve of sia-64 seed 3 (Sia's objective) ends in its reduced-cost dive and
    # writes that model; read back, HiGHS and SCIP each solve it, from no start, to the dive's own objective.
    # tiny's solve ends without a dive: no rows for it.
    from goodopt.bench.core_backends import core_rows, core_summary

    assert core_rows("tiny", seeds=(0,), backends=("highs",)) == []
    rows = core_rows("sia-64", seeds=(3,), backends=("highs", "scip"))
    assert [(r["seed"], r["solver"]) for r in rows] == [(3, "highs"), (3, "scip")]
    for r in rows:
        assert r["status"] == "optimal" and r["agrees_with_dive"] and r["certified_solve_status"] == "optimal"
        assert r["objective"] == pytest.approx(r["dive_objective"], abs=1e-6) and r["bound"] >= r["objective"] - 1e-6
        assert r["columns"] > 0 and r["rows"] > 0
    summary = {s["solver"]: s for s in core_summary(rows)}
    assert summary["scip"]["cores"] == 1 and summary["scip"]["closed"] == 1 and summary["scip"]["all_agree"]
