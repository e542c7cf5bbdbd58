"""Performance profiles and shifted geometric means, worked by hand on small tables."""

import math

import numpy as np
import pandas as pd
import pytest

from goodopt.errors import ValidationError
from goodopt.runs.performance import method_summary, performance_profile, performance_ratios, shifted_geometric_mean


def _table(rows):
    return pd.DataFrame(rows, columns=["scenario", "method", "seed", "seconds", "fitness", "feasible"])


# Two instances. On "a" the exact method is slower than the heuristic but the heuristic's answer is worse,
# so only the exact method solves "a"; on "b" both find the best answer and the heuristic is 4x faster.
TABLE = _table([
    ("a", "exact", None, 2.0, 1.00, True), ("a", "heur", None, 0.5, 0.80, True),
    ("b", "exact", None, 4.0, 2.00, True), ("b", "heur", None, 1.0, 2.00, True),
])


def test_time_ratios_count_only_solves_that_reach_the_best_answer():
    r = performance_ratios(TABLE, "seconds")
    assert r.loc["a", "exact"] == 1.0 and r.loc["a", "heur"] == math.inf
    assert r.loc["b", "heur"] == 1.0 and r.loc["b", "exact"] == 4.0


def test_the_time_profile_steps_at_each_ratio():
    prof = performance_profile(TABLE, "seconds", taus=[1.0, 3.9, 4.0, 100.0])
    assert prof["exact"].tolist() == [0.5, 0.5, 1.0, 1.0]
    assert prof["heur"].tolist() == [0.5, 0.5, 0.5, 0.5]  # never solves "a"


def test_the_fitness_profile_is_best_over_own():
    prof = performance_profile(TABLE, "fitness", taus=[1.0, 1.2, 1.25])
    assert prof["exact"].tolist() == [1.0, 1.0, 1.0]
    assert prof["heur"].tolist() == [0.5, 0.5, 1.0]  # 1.0 / 0.8 = 1.25 on "a"


def test_an_infeasible_or_missing_answer_never_counts():
    t = pd.concat([TABLE, _table([("c", "exact", None, 1.0, 3.0, True), ("c", "heur", None, 0.1, 5.0, False)])])
    r = performance_ratios(t, "fitness")
    assert r.loc["c", "heur"] == math.inf and r.loc["c", "exact"] == 1.0


def test_seeds_are_summarised_by_their_median():
    t = _table([("a", "ga", 0, 1.0, 0.9, True), ("a", "ga", 1, 3.0, 1.0, True), ("a", "ga", 2, 5.0, 1.0, True),
                ("a", "milp", None, 2.0, 1.0, True)])
    summ = method_summary(t).set_index("method")
    assert summ.loc["ga", "solved"] == 1  # the median seed (3 s, fitness 1.0) solved it
    assert performance_ratios(t, "seconds").loc["a", "ga"] == pytest.approx(1.5)


def test_shifted_geometric_mean_by_hand():
    assert shifted_geometric_mean([0.0, 3.0], shift=1.0) == pytest.approx(1.0)  # sqrt(1 * 4) - 1
    assert shifted_geometric_mean([5.0, 5.0, 5.0], shift=10.0) == pytest.approx(5.0)
    assert math.isnan(shifted_geometric_mean([]))
    with pytest.raises(ValidationError, match="shift"):
        shifted_geometric_mean([1.0], shift=0.0)
    with pytest.raises(ValidationError, match="values"):
        shifted_geometric_mean([-1.0])


def test_a_table_without_the_needed_columns_is_refused():
    with pytest.raises(ValidationError, match="table"):
        performance_profile(pd.DataFrame({"scenario": ["a"]}))
    with pytest.raises(ValidationError, match="measure"):
        performance_ratios(TABLE, "memory")


def test_compare_draws_profiles_and_convergence(tmp_path, monkeypatch):
    """goodopt compare --profile/--convergence: the figures are written with the table, the traces recorded."""
    from goodopt.cli import main
    from goodopt.runs.compare import compare

    table = compare(["family:tiny:1"], ["milp", "greedy"], progress=False, traces=True)
    milp = table[table["method"] == "milp"].iloc[0]
    last = milp["trace"][-1]
    assert last[1] == pytest.approx(milp["fitness"], rel=1e-6) and np.isfinite(last[2])
    monkeypatch.chdir(tmp_path)
    rc = main(["compare", "family:tiny:1", "family:tiny:2", "--methods", "milp,greedy", "--quiet",
               "--profile", "p.svg", "--convergence", "c.pdf", "--out", "t.csv"])
    assert rc == 0
    assert (tmp_path / "p.svg").read_text().startswith("<?xml")
    assert (tmp_path / "c.pdf").read_bytes().startswith(b"%PDF")
    assert "trace" not in pd.read_csv(tmp_path / "t.csv").columns


def test_convergence_draws_a_method_without_a_course_as_its_answer():
    """greedy records no trace: the figure draws its answer, one point at its time; milp's bound apart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from goodopt.runs.compare import compare
    from goodopt.runs.plots import _draw_course

    table = compare(["family:tiny:1"], ["greedy", "milp"], progress=False, traces=True)
    for _, row in table.iterrows():
        fig, ax = plt.subplots()
        _draw_course(ax, row, "C0")
        lines = ax.get_lines()
        xs, ys = lines[0].get_data()
        assert ys[-1] == pytest.approx(row["fitness"]) and xs[-1] == pytest.approx(max(row["seconds"], 1e-4))
        assert len(lines) == (2 if row["method"] == "milp" else 1)  # greedy proves no bound
        if row["method"] == "greedy":
            assert len(xs) == 1
        plt.close(fig)


def test_compare_refuses_a_figure_path_without_a_figure_suffix(tmp_path, monkeypatch, capsys):
    from goodopt.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["compare", "family:tiny:1", "--methods", "greedy", "--profile", "p.csv"]) == 2
    assert "--profile" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_exact_bench_table_compares_with_an_earlier_run_by_family_and_objective(tmp_path):
    """``make bench --against DIR``: each row's CPU seconds over the earlier run's for the same family and
    objective; a table from before objectives and CPU seconds were recorded counts as the own objective's wall
    seconds; no table there is an error naming the path."""
    from goodopt.bench.solvers import against_previous
    pd.DataFrame({"family": ["sia-64", "cluster-2048"], "total_s": [0.5, 2.0]}).to_csv(tmp_path / "exact.csv",
                                                                                    index=False)
    rows = [{"family": "sia-64", "objective": "own", "cpu_s": 0.25},
            {"family": "sia-64", "objective": "sia", "cpu_s": 0.3},
            {"family": "cluster-2048", "objective": "own", "cpu_s": 3.0}]
    against_previous(rows, tmp_path)
    assert [r["ratio_to_previous"] for r in rows][::2] == [0.5, 1.5]
    assert math.isnan(rows[1]["ratio_to_previous"]) and math.isnan(rows[1]["previous_cpu_s"])
    assert all(math.isnan(r["work_ratio_to_previous"]) for r in rows)  # that table counted no LP iterations
    with pytest.raises(FileNotFoundError, match="exact.csv"):
        against_previous(rows, tmp_path / "nowhere")


def test_the_exact_bench_table_compares_solver_work_with_an_earlier_run(tmp_path):
    """Beside the seconds, the LP iterations of every stage, over the earlier run's: a measure the machine's
    load does not move."""
    from goodopt.bench.solvers import against_previous
    pd.DataFrame({"family": ["sia-64"], "objective": ["sia"], "cpu_s": [0.08], "lp_iterations": [400]}).to_csv(
        tmp_path / "exact.csv", index=False)
    rows = [{"family": "sia-64", "objective": "sia", "cpu_s": 0.06, "lp_iterations": 300},
            {"family": "sia-64", "objective": "own", "cpu_s": 0.04, "lp_iterations": 200}]
    against_previous(rows, tmp_path)
    assert rows[0]["work_ratio_to_previous"] == 0.75 and rows[0]["previous_lp_iterations"] == 400
    assert math.isnan(rows[1]["work_ratio_to_previous"])


def test_a_quick_exact_solve_is_timed_several_times_and_a_slow_one_once(monkeypatch):
    # sub-second rows report the least CPU time of EXACT_REPEATS solves of the same work; above the threshold
    # (here lowered to 0 s) one solve is timed
    import goodopt.bench.solvers as bench

    pr = bench.exact_problem("tiny", "own", 0)
    cpu, result, runs = bench.least_cpu(pr)
    assert runs == bench.EXACT_REPEATS and 0 < cpu < bench.REPEAT_BELOW_S and str(result.status) == "optimal"
    monkeypatch.setattr(bench, "REPEAT_BELOW_S", 0.0)
    assert bench.least_cpu(pr)[2] == 1


def test_a_row_over_several_seeds_is_its_slowest_seed_and_counts_every_seeds_work(monkeypatch):
    # a family whose Sia reference is the largest over three seeds is timed over the same three seeds: the row
    # shows the slowest (here seed 1, made slow by a stand-in clock), its LP iterations and nodes are summed
    # over all three solves, and its status names every status seen
    import goodopt.bench.solvers as bench

    solved = {s: bench.solve(bench.exact_problem("tiny", "own", s), "milp") for s in range(3)}
    seconds = {0: 0.02, 1: 0.09, 2: 0.05}
    by_problem = {}

    def fake_least_cpu(pr):
        seed = by_problem[id(pr)]
        return seconds[seed], solved[seed], 5

    real = bench.exact_problem

    def tagged(name, objective, seed):
        pr = real(name, objective, seed)
        by_problem[id(pr)] = seed
        return pr

    monkeypatch.setattr(bench, "least_cpu", fake_least_cpu)
    monkeypatch.setattr(bench, "exact_problem", tagged)
    row = bench._exact_row("tiny", "own", range(0, 3), with_pyomo=False)
    assert (row["seeds"], row["slowest_seed"], row["cpu_s"]) == ("0-2", 1, 0.09)
    assert row["fitness"] == solved[1].fitness and row["status"] == "optimal"
    assert row["lp_iterations"] == sum(st.get("lp_iterations") or 0 for r in solved.values()
                                       for st in r.extra["stages"])
    one = bench._exact_row("tiny", "own", range(2, 3), with_pyomo=False)
    assert (one["seeds"], one["slowest_seed"], one["cpu_s"]) == ("2", 2, 0.05)
    assert bench.EXACT_SEEDS["sia-64"] == 3  # as Sia's reference: the largest of seeds 0-2


def test_an_earlier_table_is_compared_only_row_for_row_over_as_many_seeds(tmp_path):
    # a row over seeds 0-2 is not compared with an earlier row of one seed, nor with one over other seeds; rows
    # of one seed match as before (older tables have no seeds column)
    from goodopt.bench.solvers import against_previous
    pd.DataFrame({"family": ["sia-64", "sia-64", "cluster-2048"], "objective": ["own", "sia", "own"],
                  "seeds": ["0-2", "0", "0"], "cpu_s": [0.2, 0.1, 2.0], "lp_iterations": [600, 200, 900]}).to_csv(
        tmp_path / "exact.csv", index=False)
    rows = [{"family": "sia-64", "objective": "own", "seeds": "0-2", "cpu_s": 0.1, "lp_iterations": 300},
            {"family": "sia-64", "objective": "sia", "seeds": "0-2", "cpu_s": 0.1, "lp_iterations": 300},
            {"family": "cluster-2048", "objective": "own", "seeds": "0", "cpu_s": 1.0, "lp_iterations": 900}]
    against_previous(rows, tmp_path)
    assert (rows[0]["ratio_to_previous"], rows[0]["work_ratio_to_previous"]) == (0.5, 0.5)
    assert math.isnan(rows[1]["ratio_to_previous"]) and math.isnan(rows[1]["work_ratio_to_previous"])
    assert (rows[2]["ratio_to_previous"], rows[2]["work_ratio_to_previous"]) == (0.5, 1.0)


def test_a_solve_counts_its_lp_iterations_and_counts_them_again_the_same():
    # the bench's work measure: every stage of the exact method records HiGHS's LP iterations, and a second
    # solve of the same problem does exactly the same work (seconds vary with the machine's load; this may not)
    from goodopt.solvers import solve

    from goodopt.families import FAMILIES

    pr = FAMILIES["sia-64"].scenario(0).problem()
    first, again = (solve(pr, "milp").extra["stages"] for _ in range(2))
    work = [st["lp_iterations"] for st in first]
    assert [st["model"] for st in first] == [st["model"] for st in again]
    assert work == [st["lp_iterations"] for st in again]
    assert first[0]["model"].endswith("LP relaxation") and work[0] > 0
    assert all(isinstance(w, int) and w >= 0 for w in work)


def test_the_simulator_speed_table_gives_cpu_per_simulated_hour_and_the_ratio_to_pollux(monkeypatch):
    """``make bench --only sim-speed`` on a small cluster: one row per policy, each simulated to its last job
    (or to the window), CPU per simulated hour their ratio, and Pollux's (the first) ratio exactly 1."""
    import goodopt.bench.sim_speed as ss
    from goodopt.generate import testbed_cluster

    scales = (("small", lambda: testbed_cluster(4, 4), 1.0, None, ("pollux", "greedy")),
              ("small-window", lambda: testbed_cluster(4, 4), 1.0, 2400.0, ("pollux", "greedy")))
    monkeypatch.setattr(ss, "SCALES", scales)
    rows = ss.run(seed=0)
    assert [(r["scale"], r["policy"]) for r in rows] == [(s, p) for s, *_, ps in scales for p in ps]
    for r in rows:
        assert r["simulated_h"] > 0 and r["cpu_s"] > 0
        assert r["cpu_s_per_sim_h"] == r["cpu_s"] / r["simulated_h"]
    whole, window = rows[:2], rows[2:]
    assert all(r["jobs_done"] == r["n_jobs"] for r in whole)
    assert all(r["simulated_h"] * 3600 >= 2400.0 and r["n_rounds"] > 0 and r["jobs_done"] < r["n_jobs"]
               for r in window)
    assert whole[0]["ratio_to_pollux"] == window[0]["ratio_to_pollux"] == 1.0
    assert whole[1]["ratio_to_pollux"] == whole[0]["cpu_s_per_sim_h"] / whole[1]["cpu_s_per_sim_h"]
