"""Models and instances for other solvers: the exact model written as MPS / LP, and the families as files."""

import csv

import highspy
import pytest
from goodopt.solvers import solve

import goodopt
from goodopt.cli import main
from goodopt.errors import ValidationError
from goodopt.families import export_families


def _highs_optimum(path) -> float:
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


@pytest.mark.parametrize("scenario", ["family:tiny:3", "family:hetero-tiny:1", "family:sia-64:0"])
@pytest.mark.parametrize("suffix", ["mps", "lp"])
def test_highs_reading_the_written_model_finds_the_same_optimum(scenario, suffix, tmp_path):
    path = tmp_path / f"model.{suffix}"
    res = solve(goodopt.load_scenario(scenario), "milp", {"write_model": str(path)})
    written = res.extra["written_model"]
    assert res.status == "optimal" and written["path"] == str(path)
    assert _highs_optimum(path) == pytest.approx(written["objective"], rel=1e-7, abs=1e-9)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left behind


def test_the_placement_level_model_is_written_too(tmp_path):
    path = tmp_path / "placement.lp"
    res = solve(goodopt.load_scenario("family:tiny:2"), "milp", {"write_model": str(path), "formulation": "placement"})
    assert res.extra["written_model"]["stage"].startswith("placement")
    assert _highs_optimum(path) == pytest.approx(res.extra["written_model"]["objective"], rel=1e-7, abs=1e-9)


def test_write_model_is_refused_where_it_cannot_be_honoured(tmp_path, capsys, monkeypatch):
    with pytest.raises(ValidationError, match="options.write_model"):
        solve(goodopt.load_scenario("family:tiny:1"), "milp", {"write_model": "model.txt"})
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "family:tiny:1", "--method", "greedy", "--write-model", "m.mps"]) == 2
    assert "--write-model" in capsys.readouterr().err
    assert main(["solve", "family:tiny:1", "--write-model", "m.mps", "--json"]) == 0
    assert (tmp_path / "m.mps").is_file()


def test_exported_families_load_back_as_the_same_instances(tmp_path):
    out = export_families(tmp_path / "inst", seeds=2, names=["tiny", "hetero-16"])
    rows = list(csv.DictReader(open(out / "index.csv")))
    assert [(r["family"], r["seed"]) for r in rows] == [("tiny", "0"), ("tiny", "1"), ("hetero-16", "0"),
                                                       ("hetero-16", "1")]
    for r in rows:
        again = goodopt.load_scenario(str(out / r["file"]))
        original = goodopt.load_scenario(f"family:{r['family']}:{r['seed']}")
        assert again.problem().n_jobs == original.problem().n_jobs == int(r["n_jobs"])
        assert solve(again, "greedy").fitness == pytest.approx(solve(original, "greedy").fitness, rel=1e-12)


def test_families_export_refuses_a_foreign_folder(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["families", "--export", str(tmp_path / "mine"), "--names", "tiny"]) == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
