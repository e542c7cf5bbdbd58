"""``goodopt reproduce``: bands, verdicts and the comparisons, on made-up tables; the quick run on the traces."""

import math

import pandas as pd
import pytest

from goodopt.reproduce import _row
from goodopt.reproduce.experiments import EXPERIMENTS, Band, Comparison


def test_bands_hold_inside_and_fail_outside():
    assert Band("relative", 0.05).holds(100.0, 104.9) and not Band("relative", 0.05).holds(100.0, 94.0)
    assert Band("points", 3.0).holds(50.0, 47.5) and not Band("points", 3.0).holds(50.0, 53.5)
    assert not Band("relative", 0.05).holds(100.0, math.nan)
    assert str(Band("relative", 0.15)) == "±15%" and str(Band("points", 3.0)) == "±3 points"


def test_verdicts_are_judged_only_in_full_mode():
    c = Comparison("x", "avg JCT (s)", "load=1", "pollux", 100.0, 120.0, Band("relative", 0.05), "src")
    assert _row(c, quick=False)["verdict"] == "FAIL" and _row(c, quick=True)["verdict"] == "indicative"
    assert _row(Comparison("x", "m", "s", "p", 1.0, 1.0, None, "src"), quick=False)["verdict"] == ""


def test_pollux_fig8_compares_means_over_workloads_and_improvements(tmp_path):
    (tmp_path / "pollux").mkdir()
    pd.DataFrame([("jobload", "load=1.0", p, 8, v) for p, v in (("pollux", 2000.0), ("optimus", 4000.0),
                                                                ("tiresias", 3000.0))],
                 columns=["experiment", "setting", "policy", "n_workloads", "mean_avg_jct_s"]).to_csv(
        tmp_path / "pollux" / "published-results.csv", index=False)
    table = pd.DataFrame({"load": [1.0] * 6, "policy": ["pollux", "optimus", "tiresias"] * 2,
                          "avg_jct": [2000.0, 4000.0, 3100.0, 2200.0, 4000.0, 2900.0]})
    rows = {(c.metric, c.policy): c for c in EXPERIMENTS["pollux-fig8"].compare({"pollux-fig8": table}, tmp_path)}
    pollux = rows[("avg JCT (s)", "pollux")]
    assert pollux.reproduced == 2100.0 and pollux.published == 2000.0 and pollux.band.holds(2000.0, 2100.0)
    vs_optimus = rows[("pollux's improvement over optimus (%)", "pollux")]
    assert vs_optimus.published == pytest.approx(50.0) and vs_optimus.reproduced == pytest.approx(47.5)
    assert rows[("avg JCT (s)", "optimus")].band is None  # reported, not judged


@pytest.mark.slow
def test_the_quick_reproduction_writes_a_complete_report(traces, tmp_path):
    from goodopt.cli import main

    assert main(["reproduce", "--quick", "--out", str(tmp_path / "r"), "--traces", str(traces), "--workers", "2",
                 "--quiet"]) == 0
    results = pd.read_csv(tmp_path / "r" / "results.csv")
    assert set(results.experiment) == set(EXPERIMENTS)
    assert results.reproduced.notna().all() and results.published.notna().all()
    assert set(results.verdict.dropna()) <= {"indicative"}
    report = (tmp_path / "r" / "report.md").read_text()
    assert "quick mode" in report and "Sia SOSP'23, Table 3" in report
    assert all((tmp_path / "r" / f"{name}.png").is_file() for name in EXPERIMENTS)
