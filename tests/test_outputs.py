"""Outputs that never lose a user's file: goodopt removes only its own debris, writes a run's files together,
and writes nothing outside the folder the user named."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from goodopt.cli import main
from goodopt.outputs import HOST, STAGING_MARKER, output_set
from goodopt.runs.sweep import jobs_path
from goodopt.runs.tables import same_run

SIM = ["simulate", "generated:0.1:0:0.3", "--policy", "fifo", "--truth", "model", "--nodes", "2", "--quiet"]
GREEDY = {"name": "g", "kind": "solve", "families": {"names": ["tiny"], "seeds": [0, 1, 2]}, "methods": ["greedy"]}


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ------------------------------------------------------------------ only goodopt's own debris is removed
def test_simulate_leaves_hidden_neighbours_it_did_not_create(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dead = _dead_pid()
    lookalikes = [".res.2024-11-25", f".res.v-{dead}-final", ".res.backup-2024-01",
                  f".res.goodopt-partial-otherhost-{dead}-0123abcd",  # another machine's live staging folder
                  f".res.goodopt-partial-{HOST}-{dead}-0123abce"]  # goodopt's name, but no marker inside
    for name in lookalikes:
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.txt").write_text("keep me")
    ours = tmp_path / f".res.goodopt-partial-{HOST}-{dead}-0123abcf"
    ours.mkdir()
    (ours / STAGING_MARKER).touch()
    assert main([*SIM, "--out", "res"]) == 0
    for name in lookalikes:
        assert (tmp_path / name / "data.txt").read_text() == "keep me", name
    assert not ours.exists()  # goodopt's own staging folder of a dead run on this machine
    assert (tmp_path / "res" / "summary.json").is_file()


def test_removing_debris_is_said(tmp_path, caplog):
    dead = _dead_pid()
    debris = tmp_path / f".t.csv.goodopt-tmp-{HOST}-{dead}-0123abcd"
    debris.write_text("")
    with output_set() as out:
        out.path(tmp_path / "t.csv").write_text("a\n1\n")
    assert not debris.exists() and "left by an interrupted goodopt run" in caplog.text


# ------------------------------------------------------------------ a run's files go in together
_KILLED_COMMIT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from goodopt.outputs import output_set
    real, calls = os.replace, []
    def dying_replace(a, b):
        real(a, b)
        calls.append(b)
        if len(calls) == 1:
            os._exit(9)  # killed between the first and the second rename
    folder = Path(sys.argv[1])
    with output_set() as out:
        out.path(folder / "a.csv").write_text("new a")
        out.path(folder / "b.csv").write_text("new b")
        os.replace = dying_replace
""")


def test_a_kill_between_renames_is_finished_by_the_next_run(tmp_path):
    (tmp_path / "a.csv").write_text("old a")
    (tmp_path / "b.csv").write_text("old b")
    rc = subprocess.run([sys.executable, "-c", _KILLED_COMMIT, str(tmp_path)]).returncode
    assert rc == 9 and (tmp_path / "a.csv").read_text() == "new a"  # the kill left a mix on disk ...
    with output_set() as out:  # ... and the next run writing there completes the interrupted one first
        out.path(tmp_path / "c.csv").write_text("c")
    assert (tmp_path / "b.csv").read_text() == "new b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv", "c.csv"]  # no journal, no temporaries


def _plant_journal(folder: Path, pairs) -> Path:
    journal = folder / f".outputs.goodopt-commit-{HOST}-{_dead_pid()}-0123abcd"
    journal.write_text(json.dumps(pairs))
    return journal


def test_a_planted_journal_renames_nothing_outside_its_folder(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    home, results = tmp_path / "home", tmp_path / "results"
    home.mkdir(), results.mkdir()
    (home / "thesis.tex").write_text("my thesis")
    (home / "junk.txt").write_text("junk")
    journal = _plant_journal(results, [[str(home / "junk.txt"), str(home / "thesis.tex")]])
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(GREEDY))
    assert main(["sweep", str(spec), "--out", "results/out.csv", "--quiet"]) == 0
    assert (home / "thesis.tex").read_text() == "my thesis" and (home / "junk.txt").read_text() == "junk"
    assert journal.exists() and "not a journal goodopt wrote" in caplog.text  # foreign: left, and said
    assert (results / "out.csv").is_file()


@pytest.mark.parametrize("pairs", [
    [["a"]], {"a": "b"}, "text", [[1, 2]], [["a", "b", "c"]],
    "RELATIVE",  # relative paths
    "OTHER-NAME",  # a temporary that is not goodopt's name for the output
    "SUBDIR-ESCAPE",  # '..' out of the folder
])
def test_a_journal_of_another_shape_is_foreign_not_fatal(tmp_path, pairs, caplog):
    victim = tmp_path.parent / f"{tmp_path.name}-victim.txt"
    victim.write_text("keep")
    dead_tmp = f".victim.txt.goodopt-tmp-{HOST}-1-0123abcd"
    (tmp_path / dead_tmp).write_text("planted")
    named = {"RELATIVE": [[dead_tmp, "victim.txt"]],
             "OTHER-NAME": [[str(tmp_path / "junk.txt"), str(tmp_path / "t.csv")]],
             "SUBDIR-ESCAPE": [[str(tmp_path / dead_tmp), str(tmp_path / ".." / victim.name)]]}
    pairs = named.get(pairs, pairs) if isinstance(pairs, str) else pairs
    (tmp_path / "junk.txt").write_text("junk")
    journal = _plant_journal(tmp_path, pairs)
    for _ in range(2):  # every later write there works too
        with output_set() as out:
            out.path(tmp_path / "t.csv").write_text("new")
        assert (tmp_path / "t.csv").read_text() == "new"
    assert victim.read_text() == "keep" and (tmp_path / "junk.txt").read_text() == "junk"
    assert journal.exists() and "not a journal goodopt wrote" in caplog.text
    victim.unlink()


def test_a_journal_through_a_symlinked_folder_is_foreign(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.csv").write_text("keep")
    results = tmp_path / "results"
    results.mkdir()
    (results / "link").symlink_to(outside)
    dead = _dead_pid()
    tmp = results / "link" / f".data.csv.goodopt-tmp-{HOST}-{dead}-0123abcd"
    tmp.write_text("planted")
    journal = results / f".outputs.goodopt-commit-{HOST}-{dead}-0123abcd"
    journal.write_text(json.dumps([[str(tmp), str(results / "link" / "data.csv")]]))
    with output_set() as out:
        out.path(results / "t.csv").write_text("new")
    assert (outside / "data.csv").read_text() == "keep" and journal.exists()


def test_a_failed_run_changes_none_of_its_outputs(tmp_path):
    (tmp_path / "a.csv").write_text("old")
    with pytest.raises(RuntimeError), output_set() as out:
        out.path(tmp_path / "a.csv").write_text("new")
        out.path(tmp_path / "b.csv").write_text("new")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"] and (tmp_path / "a.csv").read_text() == "old"


def test_a_sweep_writes_one_run_id_in_every_metadata_file(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(GREEDY))
    assert main(["sweep", str(spec), "--workers", "1", "--quiet", "--no-cache"]) == 0
    out = tmp_path / "g.csv"  # the default output lies beside the spec file
    assert same_run(out, jobs_path(out))
    metas = [json.loads(p.read_text()) for p in tmp_path.glob("*.meta.json")]
    assert len(metas) == 2 and len({m["run_id"] for m in metas}) == 1
    (tmp_path / "g-jobs.meta.json").write_text(json.dumps({**metas[0], "run_id": "another"}))
    assert not same_run(out, jobs_path(out))


def test_a_sweep_brings_its_own_table_up_to_date_and_keeps_another_specs_unless_forced(tmp_path, capsys):
    spec, out = tmp_path / "s.yaml", tmp_path / "res.csv"
    spec.write_text(yaml.safe_dump(GREEDY))
    run = ["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--no-cache"]
    assert main(run) == 0 and main(run) == 0  # the same spec again: its table is brought up to date
    first = out.read_text()
    spec.write_text(yaml.safe_dump({**GREEDY, "families": {"names": ["tiny"], "seeds": [0, 1, 2, 3]}}))
    assert main(run) == 2
    assert "another sweep" in capsys.readouterr().err and out.read_text() == first
    assert main([*run, "--force"]) == 0 and out.read_text() != first
    foreign = tmp_path / "mine.csv"
    foreign.write_text("a,b\n1,2\n")  # a table goodopt did not describe
    assert main(["sweep", str(spec), "--out", str(foreign), "--workers", "1", "--quiet", "--no-cache"]) == 2
    assert foreign.read_text() == "a,b\n1,2\n"


@pytest.mark.slow  # processes killed or started at length: the slow tier
def test_killing_a_sweep_leaves_the_old_tables_or_the_new_ones(tmp_path):
    spec = tmp_path / "s.yaml"
    out = tmp_path / "res.csv"
    spec.write_text(yaml.safe_dump(GREEDY))
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--no-cache"]) == 0
    first = pd.read_csv(out)
    spec.write_text(yaml.safe_dump({**GREEDY, "families": {"names": ["tiny"], "seeds": [0, 1, 2, 3]}}))
    for delay in (0.3, 1.0, 2.0, 3.0, 5.0):
        p = subprocess.Popen([sys.executable, "-m", "goodopt.cli", "sweep", str(spec), "--out", str(out), "--workers",
                              "1", "--quiet", "--no-cache", "--force"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        assert same_run(out, jobs_path(out)), delay
        assert len(pd.read_csv(out)) in (len(first), len(first) + 1)
    main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--no-cache", "--force"])
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no debris kept


# ------------------------------------------------------------------ a sweep's name is a label, not a path
@pytest.mark.parametrize("name", ["../../escaped", "/tmp/goodopt-absolute-name", "", "  ", [1, 2], "a\x00b",
                                  ".hidden", "sub/dir", "back\\slash"])
def test_a_sweep_name_that_is_a_path_is_refused(tmp_path, name, capsys):
    spec = tmp_path / "deep" / "er" / "s.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(yaml.safe_dump({**GREEDY, "name": name}))
    before = set(tmp_path.rglob("*"))
    assert main(["sweep", str(spec), "--workers", "1", "--quiet"]) == 2
    assert "spec.name" in capsys.readouterr().err
    assert set(tmp_path.rglob("*")) == before and not Path("/tmp/goodopt-absolute-name.csv").exists()


# ------------------------------------------------------------------ outputs that name a file
@pytest.mark.parametrize("command", [["reproduce", "--quick"], ["fit"]])
def test_an_out_folder_that_is_a_file_is_refused(tmp_path, command, capsys, traces):
    (tmp_path / "out.txt").write_text("mine")
    assert main([*command, "--traces", str(traces), "--out", str(tmp_path / "out.txt")]) == 2
    assert "--out" in capsys.readouterr().err and (tmp_path / "out.txt").read_text() == "mine"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_a_read_only_fit_folder_is_refused(tmp_path, traces):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert main(["fit", "--traces", str(traces), "--out", str(ro / "profiles")]) == 2
    finally:
        ro.chmod(0o700)


# ------------------------------------------------------------------ Ctrl-C inside a long solver call
@pytest.mark.slow
def test_ctrl_c_stops_a_long_milp_solve_at_once():
    """five-types-2048 without the LP relaxation's route (``lp_rounding=false``) runs over a minute inside
    HiGHS, on the main thread; Ctrl-C there returns within seconds (HiGHS is asked to stop), not when the solve
    would have ended."""
    psutil = pytest.importorskip("psutil")
    p = subprocess.Popen([sys.executable, "-m", "goodopt.cli", "solve", "family:five-types-2048:0", "--method",
                          "milp", "--option", "lp_rounding=false", "--quiet"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as at a terminal
    proc = psutil.Process(p.pid)
    while sum(proc.cpu_times()[:2]) < 25.0:  # well into the solver (the problem is built in about 3 s)
        assert p.poll() is None
        time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    t0 = time.perf_counter()
    _, err = p.communicate(timeout=600)
    assert p.returncode == 130 and "Traceback" not in err
    assert time.perf_counter() - t0 < 20  # the solve itself takes minutes


def test_a_cache_entry_cut_short_by_a_kill_is_cleared_by_the_next_run(tmp_path):
    from goodopt.runs.cache import TaskCache

    cache = tmp_path / "cache"
    cache.mkdir()
    cut = cache / f".abc.json.goodopt-tmp-{HOST}-{_dead_pid()}-0123abcd"
    cut.write_text('{"row": ')
    mine = cache / "notes.txt"  # not goodopt's name: kept
    mine.write_text("keep")
    TaskCache(cache)
    assert not cut.exists() and mine.read_text() == "keep"


def test_a_nul_byte_in_an_input_or_output_name_is_an_error_not_a_traceback(tmp_path, capsys):
    assert main(["compare", "a\0b", "--methods", "greedy", "--out", str(tmp_path / "c.csv"), "--quiet"]) == 2
    assert main(["compare", "small-2node", "--methods", "greedy", "--out", str(tmp_path / "c\0.csv"),
                 "--quiet"]) == 2
    assert "Traceback" not in capsys.readouterr().err and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- the arithmetic a table was made on
def test_every_table_says_on_which_arithmetic_it_was_made(tmp_path):
    from goodopt.provenance import math_paths
    from goodopt.runs.tables import write_table

    write_table(pd.DataFrame({"x": [1.0]}), tmp_path / "t.csv")
    meta = json.loads((tmp_path / "t.meta.json").read_text())
    assert meta["math"] == math_paths()
    assert meta["math"].startswith("numpy exp/log/power: ") and "; BLAS: " in meta["math"]


def test_the_arithmetic_stamp_tells_apart_numpys_dispatch_and_the_blas_kernels():
    """numpy's exp/log/power and OpenBLAS pick their code by processor, and each rounds differently: two
    processes that differ only there must not carry the same stamp."""
    import platform

    import numpy as np
    from numpy.lib.introspect import opt_func_info

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the dispatch targets switched off here are x86-64's")
    current = opt_func_info(func_name="^exp$", signature="float64")["exp"]["dd"]["current"]
    if current.startswith("baseline"):
        pytest.skip("numpy's exp already runs its baseline code on this processor: nothing to switch off")
    code = "from goodopt.provenance import math_paths; print(math_paths())"
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(
        f for f in ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR")
        if np._core._multiarray_umath.__cpu_features__.get(f)),
        "OPENBLAS_CORETYPE": "Sandybridge"}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    pinned = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env=env).stdout
    assert f"numpy exp/log/power: {current}" in plain
    assert "numpy exp/log/power: baseline" in pinned and "(Sandybridge)" in pinned
    assert plain != pinned
