"""Smoke test of the figure pipeline: tables with the expected columns, then plots."""

import json

import pandas as pd

from paper_figures import experiments, plot_model


def test_model_figures(tmp_path):
    tables = tmp_path / "tables"
    experiments.run_model_experiments(tables, traces=str(tmp_path / "no-traces"))
    expected = {
        "throughput": {"application", "gpu_type", "n_gpus", "n_nodes", "local_bsz", "throughput"},
        "efficiency": {"application", "training_fraction", "batch_size", "efficiency"},
        "goodput": {"application", "n_gpus", "best_batch_size", "speedup_vs_1gpu"},
        "speedup_types": {"application", "gpu_type", "n_gpus", "speedup_vs_1gpu"},
    }
    for name, cols in expected.items():
        df = pd.read_csv(tables / f"{name}.csv")
        assert cols <= set(df.columns) and len(df) > 0
        meta = json.loads((tables / f"{name}.json").read_text())
        assert meta["rows"] == len(df)
    for name, (plot, _) in plot_model.FIGURES.items():
        files = plot(tables, tmp_path)
        assert all(f.stat().st_size > 1000 for f in files), name
    # same inputs give byte-identical PDFs
    first = (tmp_path / "model_goodput.pdf").read_bytes()
    plot_model.plot_goodput(tables, tmp_path)
    assert (tmp_path / "model_goodput.pdf").read_bytes() == first
