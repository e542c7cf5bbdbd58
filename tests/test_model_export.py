"""Models and instances for other solvers: the exact model written as MPS / LP, and the families as files."""

import csv
import json

import highspy
import pytest
from goodopt.solvers import solve
from goodopt.solvers.milp.export import fitness_of

import goodopt
from goodopt.cli import main
from goodopt.errors import ValidationError
from goodopt.families import export_families
from goodopt.runs import compare


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
    # the model and its map, and no temporary left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["model.map.json", path.name])


def test_the_placement_level_model_is_written_too(tmp_path):
    path = tmp_path / "placement.lp"
    res = solve(goodopt.load_scenario("family:tiny:2"), "milp", {"write_model": str(path), "formulation": "placement",
                                                                 "write_model_kind": "last-solved"})
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


# ------------------------------------------------------------------ the model file: never debris, never silent
_KILLED_WRITE = """
import os, sys
import highspy
from goodopt.solvers import solve
from goodopt.solvers.milp.export import fitness_of
import goodopt
real = highspy.Highs.writeModel
def dying(self, name):
    real(self, name)
    os._exit(9)  # killed while the model is written, before it is put in place
highspy.Highs.writeModel = dying
solve(goodopt.load_scenario("family:tiny:3"), "milp", {"write_model": sys.argv[1]})
"""


def test_a_kill_while_the_model_is_written_leaves_nothing_outside_the_folder(tmp_path):
    import os
    import subprocess
    import sys

    out, tmpdir = tmp_path / "out", tmp_path / "tmpdir"
    out.mkdir(), tmpdir.mkdir()
    rc = subprocess.run([sys.executable, "-c", _KILLED_WRITE, str(out / "m.mps")],
                        env={**os.environ, "TMPDIR": str(tmpdir)}).returncode
    assert rc == 9 and list(tmpdir.iterdir()) == [] and not (out / "m.mps").exists()
    res = solve(goodopt.load_scenario("family:tiny:3"), "milp", {"write_model": str(out / "m.mps")})
    assert res.extra["written_model"] and sorted(p.name for p in out.iterdir()) == ["m.map.json", "m.mps"]  # no debris


def test_a_model_name_with_any_byte_is_written(tmp_path):
    import os

    name = os.fsdecode(b"mod\xe9l.mps")  # not UTF-8: the name a Latin-1 shell passes
    assert main(["solve", "family:tiny:3", "--write-model", str(tmp_path / name), "--quiet"]) == 0
    os.rename(tmp_path / name, tmp_path / "plain.mps")  # highspy itself reads only text names
    mapping = json.loads((tmp_path / os.fsdecode(b"mod\xe9l.map.json")).read_bytes())
    fitness = solve(goodopt.load_scenario("family:tiny:3"), "milp").fitness
    assert fitness_of(mapping["objective"], _highs_optimum(tmp_path / "plain.mps")) == pytest.approx(fitness, rel=1e-9)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([os.fsdecode(b"mod\xe9l.map.json"), "plain.mps"])


def test_write_model_when_no_model_is_solved_says_so(tmp_path, capsys):
    import pathlib

    import yaml

    data = yaml.safe_load((pathlib.Path(__file__).parents[1] / "scenarios" / "small-2node.yaml").read_text())
    for job in data["jobs"]:
        job["age_s"] = 0.0  # every job pinned to what it holds, nothing: no choice, so no model to solve
        job.pop("allocation", None)
    (tmp_path / "pinned.yaml").write_text(yaml.safe_dump(data))
    assert main(["solve", str(tmp_path / "pinned.yaml"), "--write-model", str(tmp_path / "m.mps"),
                 "--model-kind", "last-solved", "--json"]) == 0
    assert "nothing was written to" in capsys.readouterr().err and not (tmp_path / "m.mps").exists()
    # the whole model is the problem's, solved or not
    assert main(["solve", str(tmp_path / "pinned.yaml"), "--write-model", str(tmp_path / "m.mps"), "--json"]) == 0
    assert "wrote the whole model" in capsys.readouterr().err and (tmp_path / "m.map.json").is_file()
    (tmp_path / "m.mps").unlink()
    assert main(["solve", "family:tiny:3", "--write-model", str(tmp_path / "m.mps"), "--json"]) == 0
    assert "wrote the" in capsys.readouterr().err and (tmp_path / "m.mps").is_file()


@pytest.mark.parametrize("where", ["spec", "compare", "policy", "solve-option"])
def test_write_model_as_a_method_option_of_many_tasks_is_refused(where, tmp_path, capsys, monkeypatch):
    import yaml

    monkeypatch.chdir(tmp_path)
    if where == "spec":
        (tmp_path / "s.yaml").write_text(yaml.safe_dump({
            "name": "s", "kind": "solve", "scenarios": ["small-2node"],
            "methods": [{"method": "milp", "options": {"write_model": "../m.mps"}}]}))
        argv = ["sweep", "s.yaml", "--quiet"]
    elif where == "compare":
        with pytest.raises(ValidationError, match="write_model"):
            compare(["small-2node"], ["milp"], options={"milp": {"write_model": "m.mps"}}, progress=False)
        argv = ["solve", "small-2node", "--option", "write_model=m.mps"]
    elif where == "policy":
        argv = ["simulate", "generated:0.1:0:0.3", "--policy", "milp", "--option", "write_model=m.mps",
                "--truth", "model", "--nodes", "2", "--out", "sim", "--quiet"]
    else:
        argv = ["solve", "small-2node", "--option", "write_model=m.mps"]
    assert main(argv) == 2
    assert "write_model" in capsys.readouterr().err and list(tmp_path.glob("*.mps")) == []
    assert not (tmp_path.parent / "m.mps").exists()


@pytest.mark.parametrize("link", ["dangling", "live"])
@pytest.mark.parametrize("command", ["families", "simulate"])
def test_an_output_folder_that_is_a_symlink_is_refused_cleanly(link, command, tmp_path, capsys):
    target = tmp_path / "target"
    if link == "live":
        target.mkdir()
        (target / "keep.txt").write_text("keep")
    (tmp_path / "out").symlink_to(target)
    argv = (["families", "--export", str(tmp_path / "out"), "--names", "tiny"] if command == "families" else
            ["simulate", "generated:0.1:0:0.3", "--policy", "fifo", "--truth", "model", "--nodes", "2", "--out",
             str(tmp_path / "out"), "--quiet"])
    assert main(argv) == 2 and "symbolic link" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["out", "target"] if link == "live" else ["out"])
    if link == "live":
        assert [p.name for p in target.iterdir()] == ["keep.txt"]
