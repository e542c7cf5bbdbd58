"""The console script."""

import json

import pytest
import yaml

import goodopt
from goodopt.cli import main


def test_info(capsys):
    assert main(["info", "small-2node"]) == 0
    out = capsys.readouterr().out
    assert "small-2node" in out and "fitness of the current allocation" in out


def test_evaluate_json(tmp_path, capsys):
    sc = goodopt.load_scenario("small-2node")
    pr = sc.problem()
    alloc = {pr.job_names[0]: {"t4-0": 4}, pr.job_names[1]: {"t4-1": 2}, pr.job_names[2]: {"t4-1": 2}}
    f = tmp_path / "a.yaml"
    f.write_text(yaml.safe_dump(alloc))
    assert main(["evaluate", "small-2node", "--allocation", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"fitness", "speedups", "feasible", "violations"}
    assert out["feasible"] is True and out["violations"] == []
    ev = pr.evaluator()
    assert out["fitness"] == pytest.approx(ev.fitness(pr.allocation_from_mapping(alloc)))


def test_evaluate_infeasible_reports_violations(tmp_path, capsys):
    pr = goodopt.load_scenario("small-2node").problem()
    f = tmp_path / "a.json"
    f.write_text(json.dumps({pr.job_names[0]: {"t4-0": 4, "t4-1": 1}, pr.job_names[1]: {"t4-0": 1, "t4-1": 1}}))
    assert main(["evaluate", "small-2node", "--allocation", str(f), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["feasible"] is False
    assert any("interference" in v for v in out["violations"])
    assert any("capacity" in v for v in out["violations"])


def test_bad_input_exit_code(tmp_path, capsys):
    f = tmp_path / "a.yaml"
    f.write_text("nobody: {t4-0: 1}\n")
    assert main(["evaluate", "small-2node", "--allocation", str(f)]) == 2
    assert "allocation.nobody" in capsys.readouterr().err
