"""The bench beside the Pollux artifact's simulator, run against stand-ins for the artifact: a script that prints
what the artifact prints after each round, one that fails, and one that never ends."""

import pickle
import sys
import textwrap

import pytest

from goodopt.bench import beside_pollux as bp
from goodopt.bench.__main__ import main as bench_main
from goodopt.errors import SimulationError, ValidationError

# what the artifact prints after each round (simulator.py's loop), two rounds
TWO_ROUNDS = """---------------- SIMULATOR TIME: 60 ----------------
Active jobs:
    ncf-0:\t[epoch 0]\t[restarts 0]\t[batch size 32768]\t[placement (1,)]
GPU utilization: 1
Completed jobs:
{}
Average JCT: 0
---------------- SIMULATOR TIME: 120 ----------------
Active jobs:
GPU utilization: 0
Completed jobs:
{'ncf-0': 100, 'ncf-1': 41}
Average JCT: 70.5
"""


def fake_artifact(folder, body):
    """A folder with a simulator.py that runs ``body`` (Python) with the workload path as ``wl``."""
    folder.mkdir(exist_ok=True)
    (folder / "simulator.py").write_text("import sys\nargs = sys.argv[1:]\nwl = args[-1]\n" + textwrap.dedent(body))
    return folder


def test_the_last_round_of_the_artifacts_log_gives_its_time_jct_and_rounds():
    assert bp.read_artifact_output(TWO_ROUNDS) == (120.0, 70.5, 2)


def test_a_log_without_rounds_is_an_error_that_quotes_its_end():
    with pytest.raises(SimulationError, match="printed no 'SIMULATOR TIME'.*Traceback"):
        bp.read_artifact_output("Traceback (most recent call last): ...")


def test_the_artifact_folder_and_interpreter_are_checked_naming_the_option(tmp_path):
    with pytest.raises(ValidationError, match="--pollux-artifact.*no simulator.py.*osdi21-artifact") as err:
        bp.check_artifact(tmp_path, sys.executable)
    assert pickle.loads(pickle.dumps(err.value)).field == "--pollux-artifact"
    fake_artifact(tmp_path, "")
    with pytest.raises(ValidationError, match="--pollux-python.*no interpreter"):
        bp.check_artifact(tmp_path, None)
    with pytest.raises(ValidationError, match="--pollux-python.*not a file"):
        bp.check_artifact(tmp_path, tmp_path / "no-python")
    assert bp.check_artifact(tmp_path, sys.executable) == (tmp_path.resolve(), type(tmp_path)(sys.executable))


def test_the_artifact_runs_as_a_child_with_the_pollux_policy_and_its_cpu_is_counted(tmp_path):
    # the stand-in spends about 0.3 s of CPU, checks its arguments and prints two rounds
    art = fake_artifact(tmp_path / "art", f"""
        import time
        assert args[:2] == ["--policy", "pollux"], args
        assert open(wl).read().startswith("name,time"), wl
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        print({TWO_ROUNDS!r})
        """)
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\nncf-0,0,ncf,1,32768\n")
    run = bp.run_artifact(art, type(tmp_path)(sys.executable), wl)
    assert (run.simulated_s, run.avg_jct_s, run.n_rounds) == (120.0, 70.5, 2)
    assert 0.25 <= run.cpu_s <= run.wall_s + 1.0


def test_an_artifact_that_fails_or_does_not_finish_is_reported(tmp_path):
    failing = fake_artifact(tmp_path / "fails", "sys.stderr.write('ImportError: pymoo'); sys.exit(3)")
    with pytest.raises(SimulationError, match="exited with status 3: ImportError: pymoo"):
        bp.run_artifact(failing, type(tmp_path)(sys.executable), tmp_path / "w.csv")
    endless = fake_artifact(tmp_path / "endless", "import time\ntime.sleep(30)")
    with pytest.raises(SimulationError, match="did not finish within 0.5 s"):
        bp.run_artifact(endless, type(tmp_path)(sys.executable), tmp_path / "w.csv", time_limit_s=0.5)


def test_the_bench_part_is_skipped_without_the_artifact(tmp_path, capsys):
    assert bench_main(["--out", str(tmp_path), "--only", "beside-pollux"]) == 0
    assert "beside-pollux: skipped (give --pollux-artifact DIR" in capsys.readouterr().out
    assert not (tmp_path / "beside_pollux.csv").exists()


def test_both_simulators_on_one_workload_side_by_side(tmp_path, traces):
    # four ncf jobs of the published load-1.0 workload 3 (one GPU each, minutes): goodopt's side is real, the
    # artifact's a stand-in that reports twice goodopt's CPU-free numbers
    rows = (traces / bp.WORKLOAD).read_text().splitlines()
    wl = tmp_path / "four.csv"
    wl.write_text("\n".join([rows[0]] + [r for r in rows[1:] if ",ncf," in r][:4]) + "\n")
    art = fake_artifact(tmp_path / "art", f"print({TWO_ROUNDS!r})")
    table = bp.beside_table(art, sys.executable, traces=traces, workload=wl)
    ours, theirs = table
    assert [r["simulator"] for r in table] == ["goodopt", "pollux artifact"]
    assert ours["workload"] == theirs["workload"] == str(wl)
    assert ours["avg_jct_s"] > 0 and ours["n_rounds"] >= 1 and ours["cpu_s"] > 0
    last_arrival = max(int(r.split(",")[1]) for r in wl.read_text().splitlines()[1:])
    assert ours["simulated_s"] > last_arrival and ours["simulated_s"] % 60 == 0  # the end of a 60-s round
    assert theirs["simulated_h"] == pytest.approx(120 / 3600)
    assert ours["ratio_to_goodopt"] == 1.0
    assert theirs["ratio_to_goodopt"] == pytest.approx(theirs["cpu_s_per_sim_h"] / ours["cpu_s_per_sim_h"])
