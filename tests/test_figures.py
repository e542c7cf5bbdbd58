"""Smoke run of every figure at tiny scale: tables with the expected columns, every PNG/PDF, the index,
plots that read only the tables and byte-stable PDFs. The tiny run itself (a minute and more of two cores) is
the slow tier's; the checks of specs, labels and Ctrl-C stay in the default run."""

import json
import shutil

import pandas as pd
import pytest

from paper_figures import specs
from paper_figures.__main__ import main
from paper_figures.figures import FIGURES

EXPECTED = {
    "throughput": {"application", "gpu_type", "n_gpus", "n_nodes", "local_bsz", "throughput"},
    "efficiency": {"application", "training_fraction", "batch_size", "efficiency"},
    "goodput": {"application", "n_gpus", "best_batch_size", "speedup_vs_1gpu"},
    "speedup_types": {"application", "gpu_type", "n_gpus", "speedup_vs_1gpu"},
    "fairness": {"scenario", "p", "label", "fitness", "status"},
    "fairness-jobs": {"p", "job", "application", "n_gpus", "speedup"},
    "exact_vs_heuristic": {"label", "method", "n_gpus", "fitness", "best_bound", "seconds", "pwl_breakpoints",
                           "pwl_error_bound"},
    "runtime_scaling": {"label", "method", "n_gpus", "fitness", "best_bound", "seconds"},
    "sim_policies": {"workload", "label", "load", "avg_jct", "makespan"},
    "sim_policies-jobs": {"workload", "label", "load", "job", "jct_s"},
    "sim_interval": {"label", "interval_s", "avg_jct"},
    "sim_interference": {"label", "interference_slowdown", "avg_jct"},
    "heterogeneity": {"workload", "label", "avg_jct", "makespan", "avg_ftf_rho"},
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    assert main(["--scale", "tiny", "--out", str(out), "--workers", "2", "--quiet"]) == 0
    return out


@pytest.mark.slow  # the tiny figures run
def test_every_figure_and_table_exists(tiny):
    tables = tiny / "tables"
    for name, cols in EXPECTED.items():
        df = pd.read_csv(tables / f"{name}.csv")
        assert cols <= set(df.columns), name
        assert len(df) > 0, name
        meta = json.loads((tables / f"{name}.meta.json").read_text())
        assert meta["n_rows"] == len(df) and meta["columns"] == list(df.columns)
    for fig in FIGURES.values():
        for plot in fig.plots:
            for ext in ("png", "pdf"):
                assert (tiny / f"{plot.name}.{ext}").stat().st_size > 5000, plot.name
    index = (tiny / "README.md").read_text()
    for fid, fig in FIGURES.items():
        assert f"make {fid}" in index
        assert all(f"{p.name}.png" in index and "not made yet" not in index for p in fig.plots)
    spec = (tables / "fairness.spec.yaml").read_text()
    assert "kind: solve" in spec and "milp" in spec


@pytest.mark.slow  # the tiny figures run
def test_tiny_tables_hold_the_grid(tiny):
    t = tiny / "tables"
    fair = pd.read_csv(t / "fairness.csv")
    assert len(fair) == 3 and (fair.status == "optimal").all()
    sim = pd.read_csv(t / "sim_interference.csv")
    # 2 policies x 3 slowdowns
    assert len(sim) == 6 and set(sim.interference_slowdown) == {0.0, 0.25, 0.5}
    het = pd.read_csv(t / "heterogeneity.csv")
    assert set(het.label) == {"greedy", "gavel max-min"} and (het.avg_jct > 0).all()
    scaled = pd.read_csv(t / "autoscaling.csv").set_index("autoscale")
    assert set(scaled.index) == {"none", "pollux", "throughput", "exact"}
    assert (scaled.used_gpu_hours <= scaled.gpu_hours + 1e-9).all()
    assert (scaled.drop("none").avg_gpus < scaled.loc["none", "avg_gpus"]).all()  # elastic: fewer GPUs billed
    single = pd.read_csv(t / "autoscaling_single.csv")
    assert list(single.label) == ["fixed 1 node", "fixed 2 nodes", "pollux auto-scaling"]
    timeline = pd.read_csv(t / "autoscaling_timeline.csv")
    assert timeline.nodes_billed.between(1, 2).all() and (timeline.nodes_up <= timeline.nodes_billed).all()


@pytest.mark.slow  # the tiny figures run
def test_every_task_of_every_figure_runs_first_in_one_pool(tiny):
    """The figures' experiments find every task they ask for in the cache the first phase filled: no sweep
    computes a task of its own (a figure whose tasks the first phase missed would idle a worker)."""
    sweeps = [m for m in (tiny / "tables").glob("*.meta.json") if "computed" in json.loads(m.read_text())]
    assert len(sweeps) >= 12
    for meta in sweeps:
        assert json.loads(meta.read_text())["computed"] == 0, meta.name
    run = json.loads((tiny / "tables" / "run-tiny.json").read_text())
    assert 0 < run["tasks_s"] < run["wall_s"]


@pytest.mark.slow  # the tiny figures run
def test_plots_read_only_tables_and_pdfs_are_byte_stable(tiny, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny / "tables", copy / "tables")  # no cache, no workloads besides the tables folder
    assert main(["--scale", "tiny", "--out", str(copy), "--plot-only", "--quiet"]) == 0
    for fig in FIGURES.values():
        for plot in fig.plots:
            assert (copy / f"{plot.name}.pdf").read_bytes() == (tiny / f"{plot.name}.pdf").read_bytes(), plot.name


@pytest.mark.slow  # the tiny figures run
def test_rerun_is_served_from_the_cache(tiny):
    assert main(["--scale", "tiny", "--out", str(tiny), "--only", "fig3", "fig7", "--quiet"]) == 0
    for name in ("fairness", "runtime_scaling"):
        meta = json.loads((tiny / "tables" / f"{name}.meta.json").read_text())
        assert meta["computed"] == 0 and meta["from_cache"] == meta["n_rows"]


def test_full_scale_without_traces_says_what_to_set(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GOODOPT_TRACES", str(tmp_path / "nowhere"))
    assert main(["--scale", "full", "--out", str(tmp_path), "--only", "fig5", "--quiet"]) == 2
    out = capsys.readouterr().out
    assert "GOODOPT_TRACES" in out and "Traceback" not in out


def test_a_partial_run_labels_only_its_own_figures(tmp_path):
    from paper_figures.__main__ import read_entries, record_figure, write_index

    out = tmp_path / "figs"
    assert main(["--scale", "tiny", "--out", str(out), "--only", "fig1", "--quiet"]) == 0
    index = (out / "README.md").read_text()
    fig1, rest = index.split("## fig2", 1)
    assert "at scale `tiny`" in fig1 and "at scale" not in rest and rest.count("*Not made yet.*") == len(FIGURES) - 1
    # a later default-scale run of fig3 in the same folder adds its own entry and relabels nothing else
    record_figure(out, "fig3", scale="default", traces=False, seconds=1.0, plot_only=False)
    write_index(out)
    entries = read_entries(out)
    assert entries["fig1"]["scale"] == "tiny" and entries["fig3"]["scale"] == "default"
    index = (out / "README.md").read_text()
    assert index.split("## fig2")[0].count("at scale `tiny`") == 1
    assert "at scale `default`" in index.split("## fig3")[1].split("## fig4")[0]


def test_smoke_scales_have_their_own_default_folders():
    from paper_figures.__main__ import OUT, default_out

    assert default_out("default") == OUT
    assert len({default_out(s) for s in specs.SCALES}) == len(specs.SCALES)


def test_specs_are_valid_at_every_scale():
    from goodopt.runs import spec_from_dict

    for scale in specs.SCALES:
        for spec in (specs.fairness(scale), specs.exact_vs_heuristic(scale), specs.runtime_scaling(scale)):
            spec_from_dict(spec)


def test_ctrl_c_during_the_figures_is_one_line_and_status_130(tmp_path, monkeypatch, capsys):
    from dataclasses import replace

    import paper_figures.figures as figures

    def stopped(ctx):
        raise KeyboardInterrupt

    monkeypatch.setitem(figures.FIGURES, "fig2", replace(figures.FIGURES["fig2"], experiment=stopped))
    assert main(["--scale", "tiny", "--out", str(tmp_path), "--only", "fig1", "fig2", "--quiet"]) == 130
    out = capsys.readouterr().out
    assert "interrupted" in out and "Traceback" not in out
    assert set(json.loads((tmp_path / "index.json").read_text())) == {"fig1"}  # fig1 finished and is recorded


@pytest.mark.slow  # two figure runs, 10 s
def test_without_a_terminal_the_figures_print_one_progress_line_per_30_seconds_and_every_one_at_v(tmp_path):
    """Written to a file (nohup, CI), figure 4's solves at tiny scale (a few seconds, a score of stage
    milestones) print one progress line; with -v every milestone."""
    import subprocess
    import sys

    def lines(*extra):
        p = subprocess.run([sys.executable, "-m", "goodopt.paper_figures", "--only", "fig4", "--scale", "tiny",
                            "--workers", "1", "--no-cache", "--out", str(tmp_path / f"out{len(extra)}"), *extra],
                           capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert p.returncode == 0, p.stderr
        return [line for line in p.stderr.splitlines() if "goodopt.progress" in line]

    plain, verbose = lines(), lines("-v")
    assert len(plain) == 1
    assert len(verbose) > 5 and plain[0] == verbose[0]
